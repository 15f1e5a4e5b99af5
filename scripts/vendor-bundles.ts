// Bundles packages made of hundreds of small ES modules (typebox: ~680, slonik with its
// dependencies: ~250, execa: ~110, yaml: ~70)
// into a few files under dist/vendor/. Loading them module by module costs more than the rest of
// a CLI command; the compiled bins map these specifiers to the bundles (bin/vendor-hooks.ts).
// One build with code splitting keeps a single instance of code shared between subpaths.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { VENDORED } from '../bin/vendored.ts';

const require = createRequire(import.meta.url);
const wrappers = mkdtempSync(join(tmpdir(), 'svc-vendor-'));

/** Whether Node loads this file as CommonJS: `.cjs`, or `.js` under a package.json without "type": "module". */
function isCommonJs(file: string): boolean {
  if (file.endsWith('.cjs')) return true;
  if (file.endsWith('.mjs')) return false;
  for (let dir = dirname(file); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: string }).type !== 'module';
    } catch {
      // no package.json here: look further up
    }
  }
  return true;
}

/**
 * The entry to bundle for a specifier. A CommonJS package bundled as ESM would export only a
 * default, while our code imports its named exports (`import { parseDocument } from 'yaml'`, as
 * Node allows for CommonJS): such a package gets a wrapper that names each export.
 */
function entryFor(specifier: string, name: string): string {
  // Resolve through the package's own exports map, as Node would.
  const file = fileURLToPath(import.meta.resolve(specifier));
  if (!isCommonJs(file)) return file;
  const names = Object.keys(require(specifier) as object).filter((key) => key !== 'default' && /^[A-Za-z_$][\w$]*$/.test(key));
  const wrapper = join(wrappers, `${name}.mjs`);
  writeFileSync(wrapper, `import m from ${JSON.stringify(file)};\nexport default m;\nexport const { ${names.join(', ')} } = m;\n`);
  return wrapper;
}

const entryPoints: Record<string, string> = {};
for (const [specifier, file] of Object.entries(VENDORED)) {
  const name = file.replace(/\.js$/, '');
  entryPoints[name] = entryFor(specifier, name);
}
// Start empty: chunk names are content hashes, and an earlier build's chunks would stay behind.
rmSync('dist/vendor', { recursive: true, force: true });
mkdirSync('dist/vendor', { recursive: true });
await build({
  entryPoints,
  outdir: 'dist/vendor',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  logLevel: 'warning',
  // pg stays one shared instance from node_modules: our database code imports it beside slonik
  // (LISTEN clients, migrations), and type parsers registered on one copy would not reach another.
  external: ['pg', 'pg-cursor', 'pg-query-stream', 'pg-native'],
  // Bundled CommonJS dependencies may call require(): give ESM output one.
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
});
rmSync(wrappers, { recursive: true, force: true });
writeFileSync('dist/vendor/package.json', JSON.stringify({ type: 'module' }) + '\n');
process.stdout.write(`vendor bundles: ${Object.keys(VENDORED).join(', ')}\n`);
