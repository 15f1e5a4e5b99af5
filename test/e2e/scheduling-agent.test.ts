// End to end with the REAL agent (startAgent, process sandbox, real step runner) against the
// REAL orchestrator (dispatch + scheduling subsystems, real PostgreSQL): a real workflow file,
// compiled with workflowToLockEntry, checked out from a real git repository. Filter true → the
// jobs run, job outputs reach dependents, a generator adds two jobs that run, the workflow hooks
// run once at the end with the outcome; filter false → the run is skipped.
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { DEFAULT_RUNNER_PATH, startAgent } from '../../agent/agent.ts';
import { parseAgentEnv } from '../../agent/env.ts';
import { sql, type DatabasePool } from '../../kernel/services/db/index.ts';
import { createProcessSandbox } from '../../plugins/sandboxes/process/index.ts';
import { tempDir } from '../agent/fixtures/trees.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { until } from '../fixtures/runs.ts';
import { byName, compiledWorkflowRepo, createTestRun, jobsOf, runOf, startSchedulingNode } from '../kernel/orchestrator/scheduling/harness.ts';

t.setTimeout(1_200_000);

const WORKFLOW = `import { dynamicJobs, job, push, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push(),
  filter: (ctx) => !ctx.changedFiles.includes('SKIP'),
  jobs: {
    a: job({
      runsOn: 'linux',
      steps: (s) => s.step('one', async () => ({ v: 'from-a' })),
      outputs: (ctx) => ({ value: ctx.outputsOf('one').v }),
    }),
    b: job({
      runsOn: 'linux',
      needs: ['a'],
      steps: (s) => s.step('read', async (ctx) => { ctx.log.info('b saw ' + ctx.jobOutputs('a')?.value); return {}; }),
    }),
    gen: dynamicJobs({
      runsOn: 'linux',
      needs: ['a'],
      generate: (ctx) => ({
        g1: job({ runsOn: 'linux', steps: (s) => s.step('g', async (c) => { c.log.info('g1 ran after ' + c.jobOutputs('a')?.value); return {}; }), needs: ['a'], outputs: () => ({ n: 1 }) }),
        g2: job({ runsOn: 'linux', needs: ['g1'], steps: (s) => s.step('g', async (c) => { c.log.info('g2 saw ' + c.jobOutputs('g1')?.n); return {}; }) }),
      }),
    }),
  },
  onSuccess: async (ctx) => { ctx.log.info('workflow onSuccess ' + ctx.outcome.status + ' ' + ctx.jobOutputs('a')?.value); },
  cleanup: async (ctx) => { ctx.log.info('workflow cleanup ' + ctx.outcome.status); },
});
`;

async function logText(pool: DatabasePool, runId: string, name: string): Promise<string> {
  const rows = (await pool.any(sql.unsafe`
    SELECT l.lines FROM job_logs l JOIN jobs j ON j.id = l.job_id WHERE j.run_id = ${runId} AND j.name = ${name} ORDER BY l.seq`)) as readonly { lines: Array<{ step: string; text: string }> }[];
  return rows.flatMap((r) => r.lines.map((l) => `${l.step}|${l.text}`)).join('\n');
}

t.test('a real workflow through the real agent: filter, outputs, generated jobs, workflow hooks', async (t) => {
  const tmp = await tempDir('svc-sched-e2e-');
  t.teardown(tmp.cleanup);
  const { sha, entry, event } = await compiledWorkflowRepo(join(tmp.dir, 'repo'), WORKFLOW);
  t.equal(entry.hasFilter, true);
  t.match(entry.jobs.find((j) => j.name === 'gen'), { dynamic: true, generatorRef: 'jobs.gen.generate' });

  await eachDatabase(t, async (t, db) => {
    const node = await startSchedulingNode(t, db.url);
    const settings = parseAgentEnv({ SVC_ORCHESTRATOR_URL: node.url, SVC_AGENT_WORK_DIR: join(tmp.dir, `w-${db.kind}`), SVC_AGENT_LABELS: 'linux' });
    const agent = await startAgent({
      settings,
      agentId: `sched-real-${db.kind}`,
      logger: pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' }),
      sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'never', network: true })]]),
      runnerPath: DEFAULT_RUNNER_PATH,
    });
    t.teardown(() => agent.stop());
    const finished = (runId: string) =>
      until(`run ${runId} finished`, async () => {
        const run = await runOf(db.pool, runId);
        return ['completed', 'failed', 'cancelled', 'skipped'].includes(run.status) ? run : undefined;
      }, 120_000, 100);

    const run = await createTestRun(db.pool, entry, { sha, event, changedFiles: ['src/x.ts'] });
    const done = await finished(run.runId);
    const jobs = byName(await jobsOf(db.pool, run.runId));
    const summary = Object.values(jobs).map((j) => `${j.display_name}: ${j.status} ${j.reason ?? ''}`).join('\n');
    t.equal(done.status, 'completed', summary);
    t.same(Object.keys(jobs).sort(), ['a', 'b', 'g1', 'g2', 'generate gen', 'workflow filter', 'workflow hooks']);
    for (const job of Object.values(jobs)) t.equal(job.status, 'completed', `${job.display_name} completed`);
    t.same(jobs['a']!.outputs, { value: 'from-a' });
    t.match(await logText(db.pool, run.runId, 'b'), 'b saw from-a', 'job outputs reach a dependent');
    t.match(await logText(db.pool, run.runId, 'g1'), 'g1 ran after from-a', 'a generated job ran from the generator');
    t.match(await logText(db.pool, run.runId, 'g2'), 'g2 saw 1', 'generated jobs pass outputs too');
    const hooks = await logText(db.pool, run.runId, 'svc:hooks');
    t.match(hooks, 'workflow onSuccess success from-a');
    t.match(hooks, 'workflow cleanup success');
    t.equal(hooks.split('|workflow onSuccess success').length - 1, 1, 'the workflow hooks ran once');
    const order = (await db.pool.any(sql.unsafe`
      SELECT name FROM jobs WHERE run_id = ${run.runId} ORDER BY finished_at`)) as readonly { name: string }[];
    t.equal(order[0]!.name, 'svc:filter', 'the filter finished first');
    t.equal(order[order.length - 1]!.name, 'svc:hooks', 'the hooks finished last');

    const skipped = await createTestRun(db.pool, entry, { sha, event, changedFiles: ['SKIP'] });
    const s = await finished(skipped.runId);
    t.equal(s.status, 'skipped');
    t.equal(s.reason, 'workflow filter returned false');
    const sjobs = await jobsOf(db.pool, skipped.runId);
    t.same(sjobs.map((j) => j.status), sjobs.map(() => 'skipped'), 'every job skipped');
  });
});
