// Run creation with pseudo-jobs (build, filter, generators, hooks), the generated-job and matrix
// checks, bad reports that must change nothing, and the deadline sweep on several "nodes" at once.
import t from 'tap';
import { cancelRunIn } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { checkAxes, checkGenerated, schedulingPlanOf, sweepRunDeadlines } from '../../../../kernel/orchestrator/scheduling/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';
import { byName, createTestRun, jobsOf, lockJob, lockWorkflow, runOf, startSchedulingNode } from './harness.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';

t.test('schedulingPlanOf', async (t) => {
  const plan = schedulingPlanOf(
    lockWorkflow([lockJob('a', { runsOn: ['gpu'] }), lockJob('b-c', { dynamic: true }), lockJob('m', { matrix: { type: 'dynamic', ref: 'jobs.m.matrix' } })], {
      rules: [{ name: 'r', mode: 'run', ref: 'rules[0]' }],
      hasCleanup: true,
    }),
  );
  t.equal(plan.filter, true, 'workflow rules alone need the filter job');
  t.equal(plan.hooks, true);
  t.same(plan.pseudoRunsOn, ['gpu']);
  t.same([...plan.generators], [['b-c', { kind: 'jobs', ref: 'jobs["b-c"].generate' }], ['m', { kind: 'matrix', ref: 'jobs.m.matrix' }]]);
  const none = schedulingPlanOf(lockWorkflow([]));
  t.same([none.filter, none.hooks, none.generators.size, none.pseudoRunsOn], [false, false, 0, []]);
});

t.test('checkAxes and checkGenerated refuse bad input with a clear reason', async (t) => {
  t.same(checkAxes({ os: ['linux', 'mac'], n: [1] }), { os: ['linux', 'mac'], n: [1] });
  t.equal(checkAxes(null), 'the matrix generator must return a record of axis name → array of values');
  t.equal(checkAxes([1]), 'the matrix generator must return a record of axis name → array of values');
  t.equal(checkAxes({}), 'the matrix generator returned no axes');
  t.equal(checkAxes({ 'bad axis': [1] }), 'matrix axis "bad axis" is not a valid axis name');
  t.equal(checkAxes({ a: [1, 1] }), 'matrix axis a repeats 1');
  t.match(checkAxes({ a: [{}] }), 'values must be strings, finite numbers or booleans');
  t.match(checkAxes({ a: [Number.NaN] }), 'values must be');
  t.equal(checkAxes({ a: Array.from({ length: 17 }, (_, i) => i), b: Array.from({ length: 16 }, (_, i) => i) }), 'the matrix expands to 272 jobs; the limit is 256');
  const ctx = { entryName: 'gen', known: new Set(['build', 'g1']), declared: new Set(['prod']) };
  t.equal(checkGenerated('g1', lockJob('g1', { needs: ['build'], contexts: ['prod'] }), ctx), undefined);
  t.match(checkGenerated('g1', lockJob('g1', { runsOn: [] }), ctx), 'not a valid lock job entry: runsOn');
  t.match(checkGenerated('g1', 'text', ctx), 'not a valid lock job entry');
  t.equal(checkGenerated('g1', lockJob('other'), ctx), 'its definition is named "other"');
  t.equal(checkGenerated('g1', lockJob('g1', { dynamic: true }), ctx), 'a generated job cannot generate jobs itself');
  t.equal(checkGenerated('g1', lockJob('g1', { matrix: { type: 'dynamic', ref: 'x' } }), ctx), 'a generated job cannot have a dynamic matrix');
  t.equal(checkGenerated('g1', lockJob('g1', { needs: ['gen'] }), ctx), 'it needs "gen", its own generator');
  t.match(checkGenerated('g1', lockJob('g1', { contexts: ['dev'] }), ctx), 'secret context "dev"');
});

t.test('createRun, bad reports and the deadline sweep', async (t) => {
  await eachDatabase(t, async (t, db) => {
    // Starting the orchestrator applies the migrations.
    const node = await startSchedulingNode(t, db.url, 60_000);
    await t.test('pseudo-jobs next to a build: filter and generators run from a checkout, the rest waits for the build', async (t) => {
      const wf = lockWorkflow(
        [lockJob('build-it'), lockJob('gen', { dynamic: true, generatorRef: 'jobs.gen.generate', steps: [] }), lockJob('last', { needs: ['gen'] })],
        { hasFilter: true, hasOnFailure: true },
      );
      const created = await createTestRun(db.pool, wf, { buildKey: `${'c'.repeat(64)}:none-${db.kind}`, deliveryKey: `d-${db.kind}` });
      t.ok(created.ownsBuild);
      const jobs = byName(await jobsOf(db.pool, created.runId));
      t.same(Object.keys(jobs).sort(), ['build cccccccccccc', 'build-it', 'generate gen', 'last', 'workflow filter', 'workflow hooks']);
      t.equal(jobs['workflow filter']!.status, 'queued');
      t.same(jobs['workflow filter']!.needs, []);
      t.same(jobs['generate gen']!.needs, ['svc:filter'], 'the generator does not wait for the build');
      t.same(jobs['build-it']!.needs, ['svc:filter', 'svc:build']);
      t.same(jobs['workflow hooks']!.needs.sort(), ['build-it', 'gen', 'last', 'svc:build', 'svc:filter']);
      t.equal(created.queuedJobs, 2, 'the build and the filter are queued');
      const replay = await createTestRun(db.pool, wf, { buildKey: `${'c'.repeat(64)}:none-${db.kind}`, deliveryKey: `d-${db.kind}` });
      t.equal(replay.created, false, 'a replay adds no second set of pseudo-jobs');
      t.equal((await jobsOf(db.pool, created.runId)).length, 6);
      await cancelRunIn(db.pool, created.runId, 'test');
    });

    await t.test('a hooks-only run queues its hooks job at once', async (t) => {
      const created = await createTestRun(db.pool, lockWorkflow([], { hasCleanup: true }));
      t.same((await jobsOf(db.pool, created.runId)).map((j) => [j.name, j.status]), [['svc:hooks', 'queued']]);
      await cancelRunIn(db.pool, created.runId, 'test');
    });

    await t.test('bad reports change nothing: a generated payload that breaks the wire schema, reports from a non-owner', async (t) => {
      const wf = lockWorkflow([lockJob('gen', { runsOn: ['bad-input'], dynamic: true, generatorRef: 'jobs.gen.generate', steps: [] })]);
      const created = await createTestRun(db.pool, wf);
      const agent = await TestAgent.online({ url: node.url, agentId: `bad-${db.kind}`, labels: ['bad-input'] });
      t.teardown(() => agent.close());
      const d = await agent.waitFor('job.dispatch');
      t.equal(d.jobConfig.role, 'generate');
      agent.jobStatus(d.jobId, 'running');
      agent.jobStatus(d.jobId, 'completed', { generated: { jobs: 'not a list' } });
      const refused = await agent.waitFor('protocol.error');
      t.match(refused.error.message, 'generated');
      agent.jobStatus(d.jobId, 'completed', { generated: { jobs: [{ name: '', entry: {} }] } });
      await until('second refusal', () => (agent.all('protocol.error').length >= 2 ? true : undefined));
      const other = await TestAgent.online({ url: node.url, agentId: `intruder-${db.kind}`, labels: ['elsewhere'] });
      t.teardown(() => other.close());
      other.jobStatus(d.jobId, 'completed', { generated: { jobs: [{ name: 'evil', entry: lockJob('evil') }] } });
      await other.waitFor('protocol.error');
      const jobs = await jobsOf(db.pool, created.runId);
      t.same(jobs.map((j) => [j.name, j.status]), [['svc:generate:gen', 'running']], 'nothing inserted, the generator still running');
      // The owner's valid report is applied.
      agent.jobStatus(d.jobId, 'completed', { generated: { jobs: [{ name: 'ok1', entry: lockJob('ok1', { runsOn: ['bad-input'] }) }] } });
      const ok1 = await agent.waitFor('job.dispatch', (m) => m.jobConfig.job === 'ok1');
      t.same(ok1.jobConfig.generator, { entry: 'gen', ref: 'jobs.gen.generate', kind: 'jobs', needs: {} });
      t.same((await jobsOf(db.pool, created.runId)).map((j) => j.name).sort(), ['ok1', 'svc:generate:gen']);
    });

    await t.test('deadline sweep on several nodes at once cancels each run once', async (t) => {
      const runs: Array<{ runId: string }> = [];
      for (let i = 0; i < 4; i += 1) runs.push(await createTestRun(db.pool, lockWorkflow([lockJob('far', { runsOn: ['nowhere'] })], { timeout: 1 })));
      await db.pool.query(sql.unsafe`UPDATE runs SET deadline_at = now() - interval '1 second' WHERE id = ANY(${sql.array(runs.map((r) => r.runId), 'uuid')})`);
      const swept = (await Promise.all([sweepRunDeadlines(db.pool), sweepRunDeadlines(db.pool), sweepRunDeadlines(db.pool)])).flat();
      const mine = swept.filter((id) => runs.some((r) => r.runId === id));
      t.equal(mine.length, 4, 'each run swept once');
      t.equal(new Set(mine).size, 4);
      for (const r of runs) {
        const row = await runOf(db.pool, r.runId);
        t.same([row.status, row.reason, row.cancelled_by], ['cancelled', 'run timed out after 1 ms', 'svc:timeout']);
      }
      t.same(await sweepRunDeadlines(db.pool), []);
    });
  });
});
