// Run timeout (lock `timeout`, ms): createRun sets `runs.deadline_at`; this sweep cancels runs
// past it with the reason `run timed out after <n> ms` (queued and waiting jobs at once, running
// ones through `job.cancel`; the workflow hooks job still runs onCancel/cleanup). Each run is
// claimed with FOR UPDATE SKIP LOCKED and `cancelled_by IS NULL`, so several nodes sweeping at
// once cancel a run once.
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { cancelRunTx } from '../dispatch/cancel.ts';

export const TIMEOUT_CANCELLED_BY = 'svc:timeout';
const BATCH = 50;

export function runTimeoutReason(timeoutMs: number | null): string {
  return timeoutMs === null ? 'run timed out: its deadline passed' : `run timed out after ${timeoutMs} ms`;
}

/** Cancels up to one batch of runs past their deadline; returns their ids. */
export async function sweepRunDeadlines(pool: DatabasePool): Promise<string[]> {
  const done: string[] = [];
  for (let i = 0; i < BATCH; i += 1) {
    const runId = await pool.transaction(async (tx) => {
      const run = (await tx.maybeOne(sql.unsafe`
        SELECT id::text AS id, CASE WHEN jsonb_typeof(lock_entry->'timeout') = 'number' THEN (lock_entry->>'timeout')::bigint END AS timeout_ms
        FROM runs
        WHERE deadline_at IS NOT NULL AND deadline_at <= now() AND cancelled_by IS NULL AND status IN ('held', 'queued', 'running')
        ORDER BY deadline_at LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED`)) as { id: string; timeout_ms: bigint | number | null } | null;
      if (run === null) return null;
      const timeout = run.timeout_ms === null ? null : Number(run.timeout_ms);
      await cancelRunTx(tx, run.id, TIMEOUT_CANCELLED_BY, { reason: runTimeoutReason(timeout) });
      return run.id;
    });
    if (runId === null) break;
    done.push(runId);
  }
  return done;
}
