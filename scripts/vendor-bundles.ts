// Bundles packages made of hundreds of small ES modules (typebox: ~680, execa: ~110)
// into a few files under dist/vendor/. Loading them module by module costs more than the rest of
// a CLI command; the compiled bins map these specifiers to the bundles (bin/vendor-hooks.ts).
// One build with code splitting keeps a single instance of code shared between subpaths.
import { mkdirSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { VENDORED } from '../bin/vendored.ts';

const entryPoints: Record<string, string> = {};
for (const [specifier, file] of Object.entries(VENDORED)) {
  // Resolve through the package's own exports map, as Node would.
  entryPoints[file.replace(/\.js$/, '')] = import.meta.resolve(specifier).replace('file://', '');
}
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
  // Bundled CommonJS dependencies may call require(): give ESM output one.
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);" },
});
writeFileSync('dist/vendor/package.json', JSON.stringify({ type: 'module' }) + '\n');
process.stdout.write(`vendor bundles: ${Object.keys(VENDORED).join(', ')}\n`);
