// Run-level concurrency groups (lock `concurrency`; docs/run-control.md). A run of a workflow
// with `concurrency` is created `waiting` in its group; this admits runs, oldest first, while
// fewer than `max` admitted runs of the group are unfinished. With `cancelInProgress` the newest
// run waiting for admission cancels every older unfinished run of its group through the normal
// asynchronous cancel; it is admitted once they have ended and freed their slots.
//
// Each group is handled in its own transaction under a transaction-scoped advisory lock on the
// group, taken before any run lock; nothing else takes that lock, so no lock cycle through it.
import type { CommonQueryMethods } from 'slonik';
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { cancelRunTx } from '../dispatch/cancel.ts';
import { progressRun } from '../dispatch/progression.ts';

/** Who cancels the older runs of a group with `cancelInProgress`. */
export const CONCURRENCY_ACTOR = 'svc:concurrency';

const UNFINISHED = sql.fragment`status NOT IN ('completed', 'failed', 'cancelled', 'skipped')`;

interface Member {
  id: string;
  status: string;
  concurrency_state: 'waiting' | 'admitted';
  concurrency_max: number;
  concurrency_cancel: boolean;
  cancelled_by: string | null;
}

export interface AdmissionResult {
  admitted: string[];
  cancelled: string[];
}

async function members(tx: CommonQueryMethods, orgId: string, group: string): Promise<Member[]> {
  return (await tx.any(sql.unsafe`
    SELECT id::text AS id, status, concurrency_state, concurrency_max, concurrency_cancel, cancelled_by FROM runs
    WHERE org_id = ${orgId} AND concurrency_group = ${group} AND concurrency_state IS NOT NULL AND ${UNFINISHED}
    ORDER BY created_at, id`)) as unknown as Member[];
}

/** Admits (and with cancelInProgress, cancels) within one group; call inside a transaction. */
export async function admitGroup(tx: CommonQueryMethods, orgId: string, group: string): Promise<AdmissionResult> {
  const result: AdmissionResult = { admitted: [], cancelled: [] };
  await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${`svc-run-group:${orgId}:${group}`}, 0))`);
  let all = await members(tx, orgId, group);
  const eligible = (m: Member): boolean => m.concurrency_state === 'waiting' && m.status !== 'held';
  const newest = [...all].reverse().find((m) => eligible(m) && m.concurrency_cancel);
  if (newest !== undefined) {
    const older = all.slice(0, all.indexOf(newest)).filter((m) => m.cancelled_by === null);
    for (const run of older) {
      await cancelRunTx(tx, run.id, CONCURRENCY_ACTOR, { reason: `Cancelled: a newer run (${newest.id}) in concurrency group ${group} (cancelInProgress)` });
      result.cancelled.push(run.id);
    }
    if (older.length > 0) all = await members(tx, orgId, group);
  }
  let active = all.filter((m) => m.concurrency_state === 'admitted').length;
  for (const run of all.filter(eligible)) {
    if (active >= run.concurrency_max) break;
    await tx.query(sql.unsafe`UPDATE runs SET concurrency_state = 'admitted', updated_at = now() WHERE id = ${run.id} AND concurrency_state = 'waiting'`);
    await progressRun(tx, run.id);
    result.admitted.push(run.id);
    active += 1;
  }
  return result;
}

/** One admission pass over every group with a run waiting (a bounded batch of groups). */
export async function admitWaitingRuns(pool: DatabasePool, limit = 200): Promise<AdmissionResult> {
  const groups = (await pool.any(sql.unsafe`
    SELECT DISTINCT org_id, concurrency_group FROM runs
    WHERE concurrency_state = 'waiting' AND concurrency_group IS NOT NULL AND status <> 'held' AND ${UNFINISHED}
    LIMIT ${limit}`)) as unknown as Array<{ org_id: string; concurrency_group: string }>;
  const total: AdmissionResult = { admitted: [], cancelled: [] };
  for (const g of groups) {
    const r = await pool.transaction((tx) => admitGroup(tx, g.org_id, g.concurrency_group));
    total.admitted.push(...r.admitted);
    total.cancelled.push(...r.cancelled);
  }
  return total;
}

/** Group keys the filter pseudo-job computed (agent → `job.status.concurrencyGroups`). */
export interface ReportedGroups {
  workflow?: string;
  jobs?: Record<string, string>;
}

/**
 * Records the group keys workflow code computed for a run (inside the transaction that records
 * the filter's report; the run is locked). Returns why the report cannot be used, or undefined:
 * a key the lock says exists but the report lacks fails the filter, and so the run.
 */
export async function applyGroupKeys(
  tx: CommonQueryMethods,
  run: { id: string; workflow: { concurrency?: { hasGroup: boolean }; jobs: ReadonlyArray<{ name: string; concurrency?: { hasGroup: boolean } }> } },
  reported: ReportedGroups | undefined,
): Promise<string | undefined> {
  if (run.workflow.concurrency?.hasGroup === true) {
    const key = reported?.workflow;
    if (key === undefined) return 'the agent reported no concurrency group key for the workflow (it may predate concurrency groups: upgrade it)';
    await tx.query(sql.unsafe`UPDATE runs SET concurrency_group = ${key}, updated_at = now() WHERE id = ${run.id}`);
  }
  for (const job of run.workflow.jobs) {
    if (job.concurrency?.hasGroup !== true) continue;
    const key = reported?.jobs?.[job.name];
    if (key === undefined) return `the agent reported no concurrency group key for job ${job.name} (it may predate concurrency groups: upgrade it)`;
    await tx.query(sql.unsafe`UPDATE jobs SET concurrency_group = ${key}, updated_at = now() WHERE run_id = ${run.id} AND name = ${job.name} AND generated_by IS NULL`);
  }
  await tx.query(sql.unsafe`SELECT pg_notify('svc_run_control', '')`);
  return undefined;
}
