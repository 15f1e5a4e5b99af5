// In the compiled tree, resolve the vendored packages to their bundles (scripts/vendor-bundles.ts)
// so every importer in the process, including dependencies, shares one bundled instance.
import { existsSync } from 'node:fs';
import { registerHooks } from 'node:module';
import { VENDORED } from './vendored.ts';

export function useVendorBundles(binUrl: string): boolean {
  if (binUrl.endsWith('.ts')) return false;
  const dir = new URL('../vendor/', binUrl);
  if (!existsSync(new URL('typebox.js', dir))) return false;
  const urls = new Map(Object.entries(VENDORED).map(([spec, file]) => [spec, new URL(file, dir).href]));
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const url = urls.get(specifier);
      return url === undefined ? nextResolve(specifier, context) : { url, format: 'module', shortCircuit: true };
    },
  });
  return true;
}
