// npm links the bins of the packages a project depends on into node_modules/.bin, never the
// project's own. In a checkout, `export PATH=$PWD/node_modules/.bin:$PATH` (which also puts
// the bundled Node 24 first) should give `svc`, `svc-admin`, … as built: link each bin of
// package.json to its compiled file and make that file executable. Run by `npm run build`.
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { bin?: Record<string, string> };
const binDir = join('node_modules', '.bin');
mkdirSync(binDir, { recursive: true });
for (const [name, target] of Object.entries(pkg.bin ?? {})) {
  if (!existsSync(target)) throw new Error(`bin ${name}: ${target} was not built`);
  chmodSync(target, 0o755);
  const link = join(binDir, name);
  rmSync(link, { force: true }); // an earlier link, dangling or not
  symlinkSync(relative(binDir, target), link);
}
