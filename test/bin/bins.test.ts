// Every bin of the package exists and behaves at its edges: help, usage errors, roles not yet
// available, and the refusal to run on a Node older than 24.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT, runProgram } from '../fixtures/programs.ts';

// Real processes on a 2-core machine shared with other test files: allow for load.

const bin = (name: string) => join(REPO_ROOT, 'bin', `${name}.ts`);

t.test('svc and svc-admin answer --help with exit 0', async (t) => {
  for (const name of ['svc', 'svc-admin']) {
    const r = await runProgram(bin(name), ['--help']);
    t.equal(r.code, 0, `${name} --help`);
    t.match(r.stdout, new RegExp(`\\$ ${name}`));
  }
});

t.test('an unknown command is a usage error (exit 2)', async (t) => {
  const r = await runProgram(bin('svc-admin'), ['no-such-command']);
  t.equal(r.code, 2);
  t.match(r.stderr, /not found/);
});

t.test('the package declares every bin of interfaces.md, compiled', async (t) => {
  const pkg = JSON.parse(await (await import('node:fs/promises')).readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  t.same(Object.keys(pkg.bin).sort(), ['svc', 'svc-admin', 'svc-agent', 'svc-orchestrator', 'svc-relay']);
  for (const target of Object.values(pkg.bin)) t.match(target, /^dist\/bin\/.+\.js$/);
});

const dist = join(REPO_ROOT, 'dist/bin/svc.js');
const node20 = '/usr/bin/node';
t.test('compiled bins refuse Node < 24 with one clear line', { skip: process.env['CI'] !== 'true' && (!existsSync(dist) || !existsSync(node20)) ? 'needs `npm run build` and a system Node (never skipped in CI)' : false }, async (t) => {
  const version = await runProgram('-e', ['process.stdout.write(process.versions.node)'], { node: node20 });
  if (Number(version.stdout.split('.')[0]) >= 24) {
    t.pass('system Node is already 24+; nothing to refuse');
    return;
  }
  const r = await runProgram(dist, ['--help'], { node: node20 });
  t.equal(r.code, 1);
  t.match(r.stderr, /svc needs Node\.js 24 or newer \(this is v\d+/);
});

t.test('the compiled svc runs under Node 24', { skip: process.env['CI'] !== 'true' && !existsSync(dist) ? 'needs `npm run build` (never skipped in CI)' : false }, async (t) => {
  const r = await runProgram(dist, ['--version']);
  t.equal(r.code, 0);
  t.match(r.stdout, /svc\/0\.9\.0/);
});

// The README's "export PATH=$PWD/node_modules/.bin:$PATH" gives the built bins by name, run by
// the bundled Node 24 their shebang finds first on that PATH (scripts/link-bins.ts, in build).
t.test('after the build, node_modules/.bin holds every bin, linked to its compiled file and runnable by name', { skip: process.env['SVC_TEST_DIST'] === '1' ? false : 'needs the build (SVC_TEST_DIST=1)' }, async (t) => {
  const { realpath, stat } = await import('node:fs/promises');
  const { execFile } = await import('node:child_process');
  const pkg = JSON.parse(await (await import('node:fs/promises')).readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  const binDir = join(REPO_ROOT, 'node_modules', '.bin');
  for (const [name, target] of Object.entries(pkg.bin)) {
    t.equal(await realpath(join(binDir, name)), await realpath(join(REPO_ROOT, target)), `${name} → ${target}`);
    t.ok(((await stat(join(REPO_ROOT, target))).mode & 0o111) !== 0, `${target} is executable`);
  }
  const version = await new Promise<{ code: number; stdout: string }>((resolve) => {
    execFile('svc', ['--version'], { env: { PATH: `${binDir}:/usr/bin:/bin`, HOME: process.env['HOME'] ?? '/tmp' }, timeout: 60_000 }, (error, stdout) =>
      resolve({ code: error === null ? 0 : Number((error as { code?: unknown }).code ?? 1), stdout }),
    );
  });
  t.equal(version.code, 0, 'svc --version by name');
  t.match(version.stdout, /^svc\/\d+\.\d+\.\d+ .*node-v2[4-9]\./, 'run by the bundled Node 24, not the system Node');
});
