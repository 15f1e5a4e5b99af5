import t from 'tap';
import * as svc from '../../sdk/index.ts';
import {
  dynamicJobs,
  fixture,
  isFixture,
  isJob,
  isRule,
  isStep,
  isTrigger,
  isWorkflow,
  job,
  pr,
  push,
  resolveFixture,
  rule,
  schedule,
  skip,
  step,
  steps,
  TRIGGER_TYPES,
  Type,
  workflow,
} from '../../sdk/index.ts';

t.test('every trigger function returns frozen plain data', async (t) => {
  const made = [
    svc.push(), svc.pr(), svc.comment(), svc.tag(), svc.release(), svc.review(), svc.review_comment(), svc.dispatch(),
    svc.create(), svc.delete(), svc.status(), svc.workflow_run({ workflows: ['x'] }), svc.fork(), svc.star(), svc.watch(),
    svc.schedule('0 0 * * *'), svc.webhook({ events: ['e'] }), svc.event('e'), svc.workflowComplete(), svc.jobComplete(),
    svc.lifecycle(), svc.workflows_failed_batch(),
  ];
  t.same(made.map((m) => m.type), TRIGGER_TYPES);
  for (const m of made) {
    t.ok(isTrigger(m));
    t.ok(Object.isFrozen(m) && Object.isFrozen(m.options));
    t.doesNotThrow(() => JSON.stringify(m));
  }
  t.equal(svc.reviewComment, svc.review_comment);
  t.equal(svc.workflowRun, svc.workflow_run);
  t.equal(svc.workflowsFailedBatch, svc.workflows_failed_batch);
  t.equal(svc.deleteRef, svc.delete);
  t.same(schedule('*/5 * * * *', { timezone: 'UTC' }).options, { timezone: 'UTC', cron: '*/5 * * * *' });
  t.same(pr({ actions: ['opened'] }).options, { actions: ['opened'] });
  t.notOk(isTrigger({ kind: 'svc.trigger', type: 'psh' }));
});

t.test('steps, chains, jobs, rules and workflows keep their closures in memory', async (t) => {
  const fn = async () => ({ v: 'x' });
  const s = step('a', fn, { outputs: Type.Object({ v: Type.String() }), timeout: 10 });
  t.ok(isStep(s));
  t.equal(s.run, fn);
  t.equal(s.options.timeout, 10);
  const chain = steps().step('a', async () => {}).step('b', async () => {});
  t.same(chain.list.map((x) => x.name), ['a', 'b']);
  const base = steps().step('x', async () => {});
  base.step('y', async () => {});
  t.equal(base.list.length, 1, 'chains are immutable');

  const fromFn = job({ runsOn: 'linux', steps: (c) => c.step('one', async () => {}) });
  const fromArray = job({ runsOn: 'linux', steps: [s] });
  const fromChain = job({ runsOn: 'linux', steps: chain });
  t.same(fromFn.steps.map((x) => x.name), ['one']);
  t.same(fromArray.steps, [s]);
  t.same(fromChain.steps.map((x) => x.name), ['a', 'b']);
  t.ok(isJob(fromFn));
  t.equal(fromFn.dynamic, false);
  const gen = dynamicJobs({ runsOn: 'linux', generate: () => [] });
  t.equal(gen.dynamic, true);
  t.same(gen.steps, []);

  const r = rule('main', () => true);
  const k = skip('docs only', () => true);
  t.ok(isRule(r) && isRule(k));
  t.equal(r.mode, 'run');
  t.equal(k.mode, 'skip');
  t.equal(k.name, 'docs only');

  const w = workflow('ci', { on: push(), jobs: { build: fromFn } });
  t.ok(isWorkflow(w));
  t.equal(w.name, 'ci');
  t.notOk(isWorkflow({ name: 'ci' }));
});

t.test('fixtures: object or async function', async (t) => {
  const plain = fixture('pr-opened', { event: pr({ actions: ['opened'] }), branch: 'feature', secrets: { local: 'ci-test' } });
  const lazy = fixture('lazy', async () => ({ event: push(), sha: 'abc', repo: 'acme/app', pr: { number: 7, fork: true } }));
  t.ok(isFixture(plain) && isFixture(lazy));
  t.equal((await resolveFixture(plain)).branch, 'feature');
  t.same(await resolveFixture(lazy), { event: push(), sha: 'abc', repo: 'acme/app', pr: { number: 7, fork: true } });
});
