// The import rules of the tree (../shared/design/architecture.md, "Layout"): imports point one
// way, schemas ← core ← workflow ← sdk ← {kernel, plugins, agent} ← {cli, admin-cli} ← bin, the
// three server-side roles never import each other, and nothing imports in a circle.
// test/architecture/layers.test.ts runs these rules over the source tree; `npx depcruise
// --config .dependency-cruiser.cjs core workflow sdk schemas kernel plugins agent cli admin-cli bin`
// prints the same verdicts by hand.
const LAYERS = {
  schemas: [],
  core: ['schemas'],
  workflow: ['schemas', 'core'],
  sdk: ['schemas', 'core', 'workflow'],
  kernel: ['schemas', 'core', 'workflow'],
  plugins: ['schemas', 'core', 'workflow'],
  agent: ['schemas', 'core', 'workflow', 'sdk'],
  cli: ['schemas', 'core', 'workflow', 'sdk', 'kernel', 'plugins', 'agent'],
  'admin-cli': ['schemas', 'core', 'workflow', 'sdk', 'kernel', 'plugins', 'agent'],
  bin: ['schemas', 'core', 'workflow', 'sdk', 'kernel', 'plugins', 'agent', 'cli', 'admin-cli'],
};
const ALL = Object.keys(LAYERS);

// Not a dependency-cruiser option: read by the layer test (the config object is validated strictly).

const layerRules = Object.entries(LAYERS).map(([layer, allowed]) => {
  const forbidden = ALL.filter((other) => other !== layer && !allowed.includes(other));
  return {
    name: `layer-${layer}`,
    comment: `${layer}/ may import only ${allowed.length ? allowed.map((a) => `${a}/`).join(', ') : 'itself'} (besides packages)`,
    severity: 'error',
    from: { path: `^${layer}/` },
    to: { path: `^(${forbidden.join('|')})/` },
  };
});

module.exports = {
  forbidden: [
    ...layerRules.filter((rule) => rule.to.path !== '^()/'),
    {
      name: 'no-circular',
      comment: 'an import cycle makes load order matter and hides which module owns what',
      severity: 'error',
      from: { path: '^(schemas|core|workflow|sdk|kernel|plugins|agent|cli|admin-cli|bin|examples)/' },
      to: { circular: true },
    },
  ],
  options: {
    // typescript 7 has no JS API for dependency-cruiser to use; swc parses the TypeScript
    // (@swc/core pinned to a version whose every platform package the registry serves, so the
    // lock file is complete and `npm ci` works). Type-only imports count: they couple layers too.
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
  },
};

// The layer table itself, for the layer test; kept off the validated config object.
Object.defineProperty(module.exports, 'LAYERS', { value: LAYERS, enumerable: false });
