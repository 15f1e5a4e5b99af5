// A run created while the build it coalesces on completes: creation share-locks the active build,
// so the build's completion waits for it and then releases the new run's jobs (before, the
// completion could miss the uncommitted waiting jobs and leave them waiting for ever).
import t from 'tap';
import { applyJobStatus } from '../../../../kernel/orchestrator/dispatch/status.ts';
import { createRun } from '../../../../kernel/orchestrator/runs/create.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { moveStatus, until } from '../../../fixtures/runs.ts';
import { job, lockWorkflow, migrated } from '../run-control/harness.ts';
import { runPlan } from '../scheduling/harness.ts';

t.test('a run coalescing on a build that completes meanwhile is released', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrated(db.pool);
    const wf = lockWorkflow([job('work')]);
    const owner = await db.pool.transaction((tx) => createRun(tx, runPlan(wf, { buildKey: 'k:1' })));
    t.ok(owner.ownsBuild);
    const buildId = String(await db.pool.oneFirst(sql.unsafe`SELECT id::text FROM jobs WHERE run_id = ${owner.runId} AND kind = 'build'`));
    await moveStatus(db.pool, 'jobs', buildId, 'running');
    await db.pool.query(sql.unsafe`UPDATE jobs SET agent_id = 'agent-1' WHERE id = ${buildId}`);

    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    let created!: (runId: string) => void;
    const createdRun = new Promise<string>((r) => (created = r));
    let creator = 0;
    const second = db.pool.transaction(async (tx) => {
      const run = await createRun(tx, runPlan(wf, { buildKey: 'k:1' }));
      creator = Number(await tx.oneFirst(sql.unsafe`SELECT pg_backend_pid()`));
      created(run.runId);
      await hold;
      return run;
    });
    const runId = await createdRun;
    let completed = false;
    const completion = applyJobStatus(db.pool, 'agent-1', { type: 'job.status', jobId: buildId, status: 'completed', steps: [] }).then(() => (completed = true));
    // The completion's statement is blocked by the creating transaction's lock (PostgreSQL says so).
    await until('the completion blocked by the creating transaction', async () =>
      Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM pg_stat_activity WHERE ${creator} = ANY(pg_blocking_pids(pid))`)) > 0 ? true : undefined,
    );
    t.notOk(completed, 'the completion waits for the creating transaction');
    release();
    const run = await second;
    t.notOk(run.ownsBuild, 'the second run coalesced on the active build');
    await completion;
    const status = await until('the coalesced job released', async () => {
      const s = String(await db.pool.oneFirst(sql.unsafe`SELECT status FROM jobs WHERE run_id = ${runId} AND name = 'work'`));
      return s === 'waiting' ? undefined : s;
    });
    t.equal(status, 'queued', 'its job is queued once the build completed');
  });
});
