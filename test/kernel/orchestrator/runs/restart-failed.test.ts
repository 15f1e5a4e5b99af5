// Restart from failed jobs (docs/run-states.md) with the REAL agent (startAgent, process sandbox,
// real step runner) against the REAL orchestrator (dispatch, scheduling, run control; real
// PostgreSQL), a real workflow file compiled with workflowToLockEntry and checked out from a real
// git repository. Five jobs, one fails: the restart runs only that job and its dependent, reuses
// the three others with their outputs (the dependent reads the parent run's value), and carries
// the re-run lineage and cooldown.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { pino } from 'pino';
import { DEFAULT_RUNNER_PATH, startAgent } from '../../../../agent/agent.ts';
import { parseAgentEnv } from '../../../../agent/env.ts';
import { sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { notifyJobsQueued } from '../../../../kernel/orchestrator/dispatch/notify.ts';
import { rerunRun, type RerunDeps } from '../../../../kernel/orchestrator/runs/api/rerun.ts';
import { createProcessSandbox } from '../../../../plugins/sandboxes/process/index.ts';
import { tempDir } from '../../../agent/fixtures/trees.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';
import { compiledWorkflowRepo, createTestRun, jobLogText, runOf, startSchedulingNode } from '../scheduling/harness.ts';

t.setTimeout(600_000);

// `c` fails until the marker file exists; `a` outputs a value that differs on every execution,
// so a dependent that reads the parent run's value proves `a` was reused, not run again.
const workflowText = (marker: string) => `import { existsSync } from 'node:fs';
import { job, push, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push(),
  jobs: {
    a: job({ runsOn: 'linux', steps: (s) => s.step('one', async () => ({ v: 'a-' + Math.random().toString(36).slice(2) })), outputs: (ctx) => ({ value: ctx.outputsOf('one').v }) }),
    b: job({ runsOn: 'linux', needs: ['a'], steps: (s) => s.step('b', async () => ({})) }),
    c: job({ runsOn: 'linux', steps: (s) => s.step('c', async () => { if (!existsSync(${JSON.stringify(marker)})) throw new Error('c is broken'); return {}; }) }),
    d: job({ runsOn: 'linux', needs: ['a', 'c'], steps: (s) => s.step('d', async (ctx) => { ctx.log.info('d saw ' + ctx.jobOutputs('a')?.value); return {}; }) }),
    e: job({ runsOn: 'linux', needs: ['b'], steps: (s) => s.step('e', async () => ({})) }),
  },
});
`;

interface Row { id: string; name: string; status: string; reason: string | null; outputs: unknown; reused_from: string | null; agent_id: string | null; started_at: number | null }

async function jobs(pool: DatabasePool, runId: string): Promise<Record<string, Row>> {
  const rows = (await pool.any(sql.unsafe`
    SELECT id::text AS id, name, status, reason, outputs, reused_from::text AS reused_from, agent_id, started_at FROM jobs WHERE run_id = ${runId}`)) as readonly Row[];
  return Object.fromEntries(rows.map((r) => [r.name, r]));
}

t.test('restarting a run with one failed job of five runs only that job and its dependent', async (t) => {
  const tmp = await tempDir('svc-restart-failed-');
  t.teardown(tmp.cleanup);
  const marker = join(tmp.dir, 'c-fixed');
  const { sha, entry, event } = await compiledWorkflowRepo(join(tmp.dir, 'repo'), workflowText(marker));

  await eachDatabase(t, async (t, db) => {
    // Each flavour starts with `c` broken again (the system flavour's pass wrote the marker).
    await rm(marker, { force: true });
    const node = await startSchedulingNode(t, db.url);
    const settings = parseAgentEnv({ SVC_ORCHESTRATOR_URL: node.url, SVC_AGENT_WORK_DIR: join(tmp.dir, `w-${db.kind}`), SVC_AGENT_LABELS: 'linux' });
    const agent = await startAgent({
      settings,
      agentId: `restart-${db.kind}`,
      logger: pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' }),
      sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'never', network: true })]]),
      runnerPath: DEFAULT_RUNNER_PATH,
    });
    t.teardown(() => agent.stop());
    const finished = (runId: string) =>
      until(`run ${runId} finished`, async () => {
        const run = await runOf(db.pool, runId);
        return ['completed', 'failed', 'cancelled', 'skipped'].includes(run.status) ? run : undefined;
      }, 240_000, 100);

    const first = await createTestRun(db.pool, entry, { sha, event });
    const firstDone = await finished(first.runId);
    const before = await jobs(db.pool, first.runId);
    t.equal(firstDone.status, 'failed');
    t.same(Object.fromEntries(Object.values(before).map((j) => [j.name, j.status])), { a: 'completed', b: 'completed', c: 'failed', d: 'skipped', e: 'completed' });
    const aValue = (before['a']!.outputs as { value: string }).value;
    t.match(aValue, /^a-/);

    const deps: RerunDeps = {
      pool: db.pool,
      sourceById: async () => null,
      providerFor: () => undefined,
      checkCaches: async () => ({ sourceHit: null, depsHit: null, buildKey: null }),
      notifyJobsQueued,
    };
    // A run that did not fail cannot be restarted from failed jobs; nothing is created.
    await db.pool.query(sql.unsafe`UPDATE runs SET created_at = created_at - interval '1 minute' WHERE id = ${first.runId}`);
    await writeFile(marker, 'fixed');
    const restarted = await rerunRun(deps, { orgId: 'org-1', runId: first.runId, triggeredBy: 'alice', mode: 'failed' });
    await t.rejects(rerunRun(deps, { orgId: 'org-1', runId: first.runId, triggeredBy: 'alice', mode: 'failed' }), { code: 'SVC_ERR_RUNS_RERUN_COOLDOWN' }, 'the cooldown applies to restarts too');
    const done = await finished(restarted.newRunId);
    const after = await jobs(db.pool, restarted.newRunId);
    const summary = Object.values(after).map((j) => `${j.name}: ${j.status} ${j.reason ?? ''}`).join('\n');
    t.equal(done.status, 'completed', summary);
    for (const name of ['a', 'b', 'e']) {
      t.equal(after[name]!.status, 'completed', `${name} reused completed`);
      t.equal(after[name]!.reused_from, before[name]!.id, `${name} points at the job it reuses`);
      t.equal(after[name]!.agent_id, null, `${name} was not dispatched`);
      t.equal(after[name]!.started_at, null, `${name} did not run`);
    }
    for (const name of ['c', 'd']) {
      t.equal(after[name]!.status, 'completed', `${name} ran again and completed`);
      t.equal(after[name]!.reused_from, null);
      t.equal(after[name]!.agent_id, `restart-${db.kind}`, `${name} ran on the agent`);
    }
    t.same(after['a']!.outputs, { value: aValue }, 'the reused job keeps its outputs');
    t.match(await jobLogText(db.pool, after['d']!.id), `d saw ${aValue}`, 'the dependent read the parent run\'s outputs of a');
    const lineage = (await db.pool.one(sql.unsafe`
      SELECT parent_run_id::text AS parent, original_run_id::text AS original, triggered_by, rerun_mode, event_name, sha FROM runs WHERE id = ${restarted.newRunId}`)) as Record<string, unknown>;
    t.same(lineage, { parent: first.runId, original: first.runId, triggered_by: 'alice', rerun_mode: 'failed', event_name: 'push', sha });
    const completions = (await db.pool.anyFirst(sql.unsafe`
      SELECT j.name FROM run_events e JOIN jobs j ON j.id = e.job_id WHERE e.run_id = ${restarted.newRunId} AND e.kind = 'job_complete' ORDER BY j.name`)) as readonly string[];
    t.same(completions, ['c', 'd'], 'only the jobs that ran record a completion');

    // The restarted run completed: restarting it again is refused, and nothing is created.
    await db.pool.query(sql.unsafe`UPDATE runs SET created_at = created_at - interval '1 minute' WHERE original_run_id = ${first.runId}`);
    await t.rejects(rerunRun(deps, { orgId: 'org-1', runId: restarted.newRunId, triggeredBy: 'alice', mode: 'failed' }), { code: 'SVC_ERR_RUNS_RERUN_NOT_FAILED' });
    const count = (await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM runs`)) as number;
    t.equal(count, 2, 'the refused restart created no run');
  });
});
