// Type tests: `npx tsc -p tsconfig.json` checks every `@ts-expect-error` line below (an
// expected error that does not occur is itself an error). At run time the file only builds
// the definitions, so it also runs under tap.
import t from 'tap';
import {
  Type,
  createTestStepContext,
  dynamicJobs,
  job,
  pr,
  push,
  rule,
  schedule,
  skip,
  step,
  workflow,
  workflowComplete,
  fixture,
  type HookContext,
  type StepContext,
} from '../../sdk/index.ts';
import * as svc from '../../sdk/index.ts';

// Typed step outputs flow through a chain: only earlier steps are visible.
const build = job({
  runsOn: ['linux'],
  matrix: { node: [22, 24], os: ['linux', 'mac'] },
  steps: (s) =>
    s
      .step(
        'version',
        async (ctx) => {
          const n: 22 | 24 = ctx.matrix.node;
          const os: 'linux' | 'mac' = ctx.matrix.os;
          // @ts-expect-error matrix axis that does not exist
          void ctx.matrix.arch;
          // @ts-expect-error no earlier step: outputsOf has nothing to name
          ctx.outputsOf('version');
          return { version: `${n}-${os}` };
        },
        { outputs: Type.Object({ version: Type.String() }) },
      )
      .step('use', async (ctx) => {
        const v: string = ctx.outputsOf('version').version;
        void v;
        // @ts-expect-error output key the step does not declare
        void ctx.outputsOf('version').missing;
        // @ts-expect-error a step that comes later (or never) is not typed
        ctx.outputsOf('publish');
      })
      .step(
        'publish',
        async () => ({ url: 'x' }),
        { outputs: Type.Object({ url: Type.String() }) },
      )
      // @ts-expect-error a duplicate step name in a chain
      .step('use', async () => {}),
});

// A step declaring outputs must return them.
step(
  'bad-return',
  // @ts-expect-error returns a number where the schema says string
  async () => ({ version: 1 }),
  { outputs: Type.Object({ version: Type.String() }) },
);
// @ts-expect-error misspelt step option
step('typo', async () => {}, { timout: 5 });

// needs must name a job of the record.
workflow('ok', {
  on: push({ branches: ['main'] }),
  jobs: { build, test: job({ runsOn: 'linux', needs: ['build'], steps: [] }) },
});
workflow('bad-needs', {
  on: push(),
  jobs: {
    build,
    // @ts-expect-error needs a job that does not exist
    test: job({ runsOn: 'linux', needs: ['biuld'], steps: [] }),
  },
});

workflow('typos', {
  // @ts-expect-error misspelt pull-request action
  on: [pr({ actions: ['openned'] })],
  jobs: {},
});
const typeOnly = (): void => {
  // @ts-expect-error misspelt trigger function
  workflow('t', { on: svc.psh(), jobs: {} });
};
void typeOnly;
// @ts-expect-error unknown workflow field
workflow('t', { on: push(), jobs: {}, descripton: 'x' });
// @ts-expect-error installEnv must be qualified <context>:<key>
workflow('t', { on: push(), jobs: {}, installEnv: ['NPM_TOKEN'] });
workflow('t', {
  on: [schedule('0 3 * * *'), workflowComplete({ statuses: ['failed'] }), svc.delete(), svc.workflowsFailedBatch()],
  jobs: {},
  installEnv: ['npm:NPM_TOKEN'],
  registries: [{ url: 'https://npm.example', tokenSecret: 'npm:TOKEN' }],
  onFailure: (ctx: HookContext) => {
    const status: 'cancelled' | 'success' | 'failed' = ctx.outcome.status;
    void status;
    // @ts-expect-error outcome has no such field
    void ctx.outcome.exitCode;
  },
  // @ts-expect-error hook timeout field is `timeout`
  cleanup: { run: () => {}, timeoutMs: 10 },
});

// @ts-expect-error runsOn is required
job({ steps: [] });
// @ts-expect-error rules are built with rule()/skip(), not bare functions
job({ runsOn: 'x', steps: [], rules: [() => true] });
job({ runsOn: 'x', steps: [], rules: [rule('main', (c) => c.event.branch === 'main'), skip('docs only', () => false)] });
dynamicJobs({ runsOn: 'x', generate: () => ({ a: job({ runsOn: 'y', steps: [] }) }) });

// Step API shapes.
async function stepApis(ctx: StepContext): Promise<void> {
  const r = await ctx.$`echo ${'a b'}`;
  const code: number = r.exitCode;
  void code;
  const quiet = await ctx.$({ reject: false })`false`;
  void quiet.stderr;
  const tok = await ctx.svc.oidc.token({ audience: 'sts' });
  if (tok.deferred) {
    const c: string = tok.code;
    void c;
  } else {
    const s: string = tok.token;
    const e: number = tok.expiresIn;
    void s;
    void e;
  }
  // @ts-expect-error audience is required
  await ctx.svc.oidc.token({});
  // @ts-expect-error interpolating an object is refused
  await ctx.$`echo ${{ a: 1 }}`;
}
void stepApis;

fixture('pr-opened', { event: pr({ actions: ['opened'] }), branch: 'feature' });
fixture('async', async () => ({ event: push() }));
// @ts-expect-error a fixture event must be a trigger result
fixture('bad', { event: 'push' });

t.test('type-test definitions build at run time', async (t) => {
  t.equal(build.steps.length, 4);
  const { ctx, dispose } = createTestStepContext({ matrix: { node: 24 } });
  t.equal(ctx.matrix.node, 24);
  await dispose();
});
