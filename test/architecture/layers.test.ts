// The architecture's import rules, enforced with dependency-cruiser (.dependency-cruiser.cjs):
// every import points down the layers, the three server-side roles never import each other, and
// the tree has no import cycle. The fixture tree proves the rules bite: an agent → kernel import
// and a two-module cycle are both reported.
import t from 'tap';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { cruise, type ICruiseResult, type IViolation } from 'dependency-cruiser';

const require = createRequire(import.meta.url);
const root = fileURLToPath(new URL('../../', import.meta.url));
type CruiseOptions = NonNullable<Parameters<typeof cruise>[1]>;
const config = require(`${root}.dependency-cruiser.cjs`) as {
  forbidden: NonNullable<CruiseOptions['ruleSet']>['forbidden'];
  options: CruiseOptions;
  LAYERS: Record<string, string[]>;
};
const SOURCE_ROOTS = ['schemas', 'core', 'workflow', 'sdk', 'kernel', 'plugins', 'agent', 'cli', 'admin-cli', 'bin'];

async function cruiseTree(baseDir: string, roots: string[]): Promise<ICruiseResult> {
  const options: CruiseOptions = { ...config.options, baseDir, validate: true, ruleSet: { forbidden: config.forbidden } };
  const reporting = await cruise(roots, options);
  return reporting.output as ICruiseResult;
}

function describe(v: IViolation): string {
  const chain = v.cycle?.map((c) => c.name).join(' → ');
  return `${v.rule.name}: ${v.from} → ${chain ?? v.to}`;
}

t.test('every source folder is a known layer', async (t) => {
  t.same(Object.keys(config.LAYERS).sort(), [...SOURCE_ROOTS].sort());
});

t.test('the source tree: no import crosses a layer the wrong way, and no cycle', async (t) => {
  const result = await cruiseTree(root, SOURCE_ROOTS);
  t.ok(result.summary.totalCruised > 300, `cruised ${result.summary.totalCruised} modules (the parser found the tree)`);
  const layer = result.summary.violations.filter((v) => v.rule.name.startsWith('layer-'));
  const cycles = result.summary.violations.filter((v) => v.rule.name === 'no-circular');
  t.same(layer.map(describe), [], 'no cross-layer import');
  t.same(cycles.map(describe), [], 'no import cycle');
});

t.test('the rules bite: an agent → kernel import and a cycle are reported', async (t) => {
  const fixtures = fileURLToPath(new URL('../fixtures/layers/', import.meta.url));
  const result = await cruiseTree(fixtures, ['agent', 'kernel', 'core']);
  const found = result.summary.violations.map(describe);
  t.ok(found.includes('layer-agent: agent/probe.ts → kernel/thing.ts'), `agent → kernel reported (${found.join('; ')})`);
  t.ok(found.some((f) => f.startsWith('no-circular: kernel/cycle-')), 'cycle reported');
  t.notOk(found.some((f) => f.includes('kernel/thing.ts → core/base.ts')), 'kernel → core is allowed');
});
