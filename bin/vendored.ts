// Specifier → file under dist/vendor/ (see scripts/vendor-bundles.ts).
export const VENDORED: Readonly<Record<string, string>> = Object.freeze({
  typebox: 'typebox.js',
  'typebox/compile': 'typebox-compile.js',
  'typebox/value': 'typebox-value.js',
  'typebox/type': 'typebox-type.js',
  'typebox/schema': 'typebox-schema.js',
  'typebox/guard': 'typebox-guard.js',
  'typebox/format': 'typebox-format.js',
  'typebox/system': 'typebox-system.js',
  'typebox/error': 'typebox-error.js',
  execa: 'execa.js',
  // slonik brings zod, @opentelemetry/api, roarr and its own packages: ~250 modules for one import.
  slonik: 'slonik.js',
  yaml: 'yaml.js',
  jose: 'jose.js',
  semver: 'semver.js',
  // prom-client brings @opentelemetry/api (~50 modules). Only our code imports it, so the bundle is
  // the one registry in the process.
  'prom-client': 'prom-client.js',
});
