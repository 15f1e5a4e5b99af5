// Run-control tests drive the worker pass by pass (runControlPass), with runs created through
// the real createRun and jobs finished through legal transitions, on a real PostgreSQL.
import type { LockApproval, LockJob, LockWorkflow } from '../../../../schemas/lock.ts';
import type { RunPlan } from '../../../../kernel/orchestrator/runs/create.ts';
import { progressRun, recordJobComplete } from '../../../../kernel/orchestrator/dispatch/progression.ts';
import { runControlPass } from '../../../../kernel/orchestrator/run-control/worker.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { testLogger } from '../../../fixtures/db.ts';
import { moveStatus } from '../../../fixtures/runs.ts';
import { createTestRun, lockJob, lockWorkflow } from '../scheduling/harness.ts';

export { lockJob, lockWorkflow };

export const ALICE_ONLY: LockApproval = { clauses: [{ users: ['alice'], teams: [], roles: [], count: 1 }], when: 'always' };

export async function migrated(pool: DatabasePool): Promise<void> {
  await migrate(pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
}

export async function newRun(pool: DatabasePool, workflow: LockWorkflow, overrides: Partial<RunPlan> = {}): Promise<string> {
  return (await createTestRun(pool, workflow, overrides)).runId;
}

export function pass(pool: DatabasePool) {
  return runControlPass(pool, testLogger);
}

export async function runState(pool: DatabasePool, runId: string): Promise<{ status: string; reason: string | null; cancelled_by: string | null; concurrency_state: string | null; concurrency_group: string | null }> {
  return (await pool.one(sql.unsafe`
    SELECT status, reason, cancelled_by, concurrency_state, concurrency_group FROM runs WHERE id = ${runId}`)) as never;
}

export async function jobStates(pool: DatabasePool, runId: string): Promise<Record<string, { id: string; status: string; reason: string | null; held_contexts: string[] }>> {
  const rows = (await pool.any(sql.unsafe`
    SELECT id::text AS id, name, status, reason, held_contexts FROM jobs WHERE run_id = ${runId} ORDER BY created_at, id`)) as unknown as Array<{ id: string; name: string; status: string; reason: string | null; held_contexts: string[] }>;
  return Object.fromEntries(rows.map(({ name, ...r }) => [name, r]));
}

/** Status changes of a run (job NULL) or of its jobs, in order, from the status feed. */
export async function feed(pool: DatabasePool, runId: string, jobs: boolean): Promise<string[]> {
  return (await pool.anyFirst(sql.unsafe`
    SELECT status FROM run_status_feed WHERE run_id = ${runId} AND (job_id IS NOT NULL) = ${jobs} ORDER BY seq`)) as string[];
}

/** Finishes every unfinished job of a run as an agent would, and progresses the run. */
export async function finishRun(pool: DatabasePool, runId: string, status: 'completed' | 'failed' = 'completed'): Promise<void> {
  for (;;) {
    const open = (await pool.anyFirst(sql.unsafe`
      SELECT id::text FROM jobs WHERE run_id = ${runId} AND status IN ('queued', 'dispatched', 'running')`)) as string[];
    if (open.length === 0) break;
    await pool.transaction(async (tx) => {
      for (const id of open) {
        await moveStatus(tx, 'jobs', id, status);
        await recordJobComplete(tx, runId, id, status);
      }
      await progressRun(tx, runId);
    });
  }
}

export function job(name: string, extra: Partial<LockJob> = {}): LockJob {
  return lockJob(name, extra);
}
