// The step runner's scheduling roles with a REAL workflow file in real runner child processes:
// the filter-only job, the hooks-only job (ctx.outcome, job outputs), generators (dynamic jobs
// described with the compiler's job-entry code, dynamic matrix) and a generated job run from
// its re-evaluated generator.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { runRunner, type RunnerRun } from '../fixtures/run-runner.ts';

t.setTimeout(1_200_000);

const WORKFLOW = `import { dynamicJobs, job, push, rule, workflow } from 'svc/sdk';
export default workflow('sched', {
  on: push(),
  filter: (ctx) => !ctx.changedFiles.includes('SKIP'),
  rules: [rule('not-draft', (ctx) => !ctx.changedFiles.includes('DRAFT'))],
  jobs: {
    a: job({ runsOn: 'linux', steps: (s) => s.step('one', async () => ({})) }),
    gen: dynamicJobs({
      runsOn: 'linux',
      needs: ['a'],
      generate: async (ctx) => {
        const n = ctx.jobOutputs('a')?.count ?? 0;
        ctx.log.info('generating from count ' + n);
        if (n < 0) throw new Error('negative count');
        return {
          g1: job({ runsOn: 'linux', steps: (s) => s.step('g', async (c) => { c.log.info('H g1 ran'); return { ok: true }; }) }),
          g2: job({ runsOn: ['linux', 'big'], needs: ['g1', 'a'], matrix: { v: [1, 2] }, steps: (s) => s.step('h', async () => ({})) }),
          bad: job({ runsOn: [], steps: (s) => s.step('x', async () => ({})) }),
          notajob: 42,
        };
      },
    }),
    m: job({ runsOn: 'linux', matrix: (ctx) => ({ node: ctx.changedFiles.length > 0 ? [20, 22] : [24] }), steps: (s) => s.step('m', async () => ({})) }),
  },
  onSuccess: async (ctx) => { ctx.log.info('H wf-onSuccess ' + ctx.outcome.status + ' ' + ctx.jobOutputs('a')?.value); },
  onFailure: async (ctx) => { ctx.log.info('H wf-onFailure ' + ctx.outcome.status + ' ' + ctx.outcome.failedStep + ' ' + ctx.outcome.reason); if (ctx.outcome.reason?.includes('explode')) throw new Error('hook exploded'); },
  onCancel: async (ctx) => { ctx.log.info('H wf-onCancel ' + ctx.outcome.reason); },
  cleanup: async (ctx) => { ctx.log.info('H wf-cleanup ' + ctx.outcome.status); },
});
`;

t.test('scheduling roles in the real runner', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-sched-runner-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'sched.ts');
  await writeFile(file, WORKFLOW);
  const run = (jobName: string, start: Record<string, unknown>) => runRunner({ file, workflowName: 'sched', jobName, start: start as never });
  const clean = (t: Test, r: RunnerRun) => {
    t.same(r.invalid, [], 'every message matches the wire schema');
    t.equal(r.exitCode, 0);
  };

  await t.test('filter role: true → completed, false → skipped with the reason, rules too', async (t) => {
    const yes = await run('svc:filter', { role: 'filter', evaluateWorkflowFilter: true, changedFiles: ['a.ts'] });
    clean(t, yes);
    t.equal(yes.result?.status, 'completed', yes.result?.reason ?? '');
    t.same(yes.result?.steps, []);
    const no = await run('svc:filter', { role: 'filter', evaluateWorkflowFilter: true, changedFiles: ['SKIP'] });
    t.equal(no.result?.status, 'skipped');
    t.equal(no.result?.reason, 'workflow filter returned false');
    const draft = await run('svc:filter', { role: 'filter', evaluateWorkflowFilter: true, changedFiles: ['DRAFT'] });
    t.equal(draft.result?.reason, 'workflow rule "not-draft" returned false');
  });

  await t.test('hooks role: the path of the outcome, ctx.outcome and job outputs; a failing hook fails it', async (t) => {
    const success = await run('svc:hooks', { role: 'hooks', workflowHooks: true, workflowOutcome: { status: 'success', duration: 5 }, needs: { a: { value: 'from-a' } } });
    clean(t, success);
    t.equal(success.result?.status, 'completed', success.result?.reason ?? '');
    t.same(success.marks(), ['wf-onSuccess success from-a', 'wf-cleanup success']);
    const failed = await run('svc:hooks', {
      role: 'hooks',
      workflowHooks: true,
      workflowOutcome: { status: 'failed', reason: 'job b failed', failedJob: 'b', failedStep: 'compile', duration: 5 },
    });
    t.same(failed.marks(), ['wf-onFailure failed compile job b failed', 'wf-cleanup failed']);
    const cancelled = await run('svc:hooks', { role: 'hooks', workflowHooks: true, workflowOutcome: { status: 'cancelled', reason: 'run timed out after 5 ms', duration: 5 } });
    t.same(cancelled.marks(), ['wf-onCancel run timed out after 5 ms', 'wf-cleanup cancelled']);
    const exploding = await run('svc:hooks', { role: 'hooks', workflowHooks: true, workflowOutcome: { status: 'failed', reason: 'explode', duration: 1 } });
    t.equal(exploding.result?.status, 'failed');
    t.equal(exploding.result?.reason, 'workflow onFailure hook failed: hook exploded');
    t.same(exploding.marks(), ['wf-onFailure failed undefined explode'], 'the rest of the level is skipped');
    const missing = await run('svc:hooks', { role: 'hooks', workflowHooks: true });
    t.equal(missing.result?.status, 'failed');
    t.match(missing.result?.reason, 'no workflowOutcome');
  });

  await t.test('generate role: dynamic jobs described as lock entries; per-job errors; a throwing generator fails', async (t) => {
    const generator = { entry: 'gen', ref: 'jobs.gen.generate', kind: 'jobs', needs: { a: { count: 2 } } };
    const r = await run('svc:generate:gen', { role: 'generate', generator });
    clean(t, r);
    t.equal(r.result?.status, 'completed', r.result?.reason ?? '');
    const jobs = r.result?.generated?.jobs ?? [];
    t.same(jobs.map((j) => j.name), ['g1', 'g2', 'bad', 'notajob']);
    t.match(jobs[0]!.entry, { name: 'g1', runsOn: ['linux'], needs: [], steps: [{ name: 'g', hasOutputs: false }] });
    t.match(jobs[1]!.entry, { name: 'g2', runsOn: ['big', 'linux'], needs: ['a', 'g1'], matrix: { type: 'static', axes: { v: [1, 2] }, size: 2 } });
    t.match(jobs[2]!.error, 'runsOn');
    t.match(jobs[3]!.error, 'must be built with job(...)');
    t.ok(r.lines('(generate)').some((l) => l.includes('generating from count 2')), 'the generator sees its needs through ctx.jobOutputs');
    const thrown = await run('svc:generate:gen', { role: 'generate', generator: { ...generator, needs: { a: { count: -1 } } } });
    t.equal(thrown.result?.status, 'failed');
    t.equal(thrown.result?.reason, 'generator gen failed: negative count');
    const stale = await run('svc:generate:gen', { role: 'generate', generator: { ...generator, ref: 'jobs.nope.generate' } });
    t.equal(stale.result?.status, 'failed');
    t.match(stale.result?.reason, 'does not exist in workflow');
  });

  await t.test('generate role: a dynamic matrix reports its axes', async (t) => {
    const r = await run('svc:generate:m', { role: 'generate', changedFiles: ['x'], generator: { entry: 'm', ref: 'jobs.m.matrix', kind: 'matrix', needs: {} } });
    t.equal(r.result?.status, 'completed', r.result?.reason ?? '');
    t.same(r.result?.generated, { matrix: { node: [20, 22] } });
  });

  await t.test('a generated job runs from its re-evaluated generator', async (t) => {
    const generator = { entry: 'gen', ref: 'jobs.gen.generate', kind: 'jobs', needs: { a: { count: 2 } } };
    const r = await run('g1', { generator });
    clean(t, r);
    t.equal(r.result?.status, 'completed', r.result?.reason ?? '');
    t.same(r.marks(), ['g1 ran']);
    t.same(r.result?.steps.map((s) => [s.name, s.status]), [['g', 'completed']]);
    const gone = await run('g9', { generator });
    t.equal(gone.result?.status, 'failed');
    t.match(gone.result?.reason, 'generator gen no longer produces job "g9"');
    const plain = await run('gen', {});
    t.match(plain.result?.reason, 'dynamicJobs(...) generator', 'a dynamic entry is still refused as a plain job');
  });
});
