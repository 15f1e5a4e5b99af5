// The common case of step 15 in ONE statement: a new delivery that makes one run, with no build
// to share, no approval hold and no queue count due, is recorded and gets its run and jobs in a
// single INSERT ... WITH statement that commits on its own. The transaction it replaces took five
// round trips to the database (begin, record, run, jobs, commit); on a busy machine each of them
// waits for a core twice (the backend to answer, then this process to read it), and those waits
// were most of a delivery's tail at 200 webhooks/s. Atomic all the same: one statement is one
// transaction, so the record, the run and its jobs are committed together or not at all.
//
// The statement claims nothing: its inserts have no conflict clauses, so a record or a run that
// already exists (a redelivery, a replay, another node on the same delivery, a generic source's
// idempotency window) aborts the whole statement with a unique violation, and the caller takes
// the transaction, which knows how to claim, take over, count a duplicate or adopt existing runs.
import { jobRowsOf, jobsInsert, runInsert, runShapeOf, type CreatedRun, type JobRow, type RunPlan, type RunShape } from '../../runs/create.ts';
import { RUN_STATUS_FEED_CHANNEL, STATUS_FEED_DEFERRAL } from '../../runs/deferred-wakeups.ts';
import { JOBS_CHANNEL, RUN_CONTROL_CHANNEL } from '../../dispatch/notify.ts';
import { isUniqueViolation, sqlTyped, type DatabasePool, type WakeupSender } from '../../../services/db/index.ts';
import { Type } from 'typebox';
import { recordInsert, type FinishRecord } from '../record/delivery-record.ts';
import type { QueueDepthGuard } from './queue-depth.ts';
import type { ClaimOptions, DeliveryState } from '../types.ts';

const RecordRow = Type.Object({ generation: Type.Number(), status_feed_notify: Type.Literal('deferred') });

/** What the one statement writes, decided before it is sent (no statement yet). */
export interface OneStatementRun {
  plan: RunPlan & { runId: string };
  shape: RunShape;
  rows: JobRow[];
  /** What the caller reports once it committed. */
  created: CreatedRun;
  /** Channels to wake once it committed. */
  channels: Set<string>;
}

/**
 * The run of `plan` as the one statement would write it, or null when the delivery needs the
 * transaction: a build to create or share (its insert may have to lock another run's build), an
 * approval hold (a second table), or a queue count due under `queue.maxDepth` (queue-depth.ts).
 */
export function planOneStatementRun(plan: RunPlan & { runId: string }, queueDepth: QueueDepthGuard, maxDepth: number | undefined): OneStatementRun | null {
  if (plan.buildKey !== null) return null;
  const shape = runShapeOf(plan);
  if (shape.held) return null;
  const jobs = jobRowsOf(plan, shape, null, false);
  if (queueDepth.needsCount(maxDepth, jobs.queued)) return null;
  const channels = new Set<string>([RUN_STATUS_FEED_CHANNEL]);
  if (jobs.queued > 0) channels.add(JOBS_CHANNEL);
  // What createRun's notifyRunControl does inside a transaction: grouped runs, gated jobs.
  if (shape.wakesRunControl) channels.add(RUN_CONTROL_CHANNEL);
  const created: CreatedRun = { runId: plan.runId, created: true, status: shape.status, jobIds: jobs.rows.map((r) => r.id), queuedJobs: jobs.queued, ownsBuild: false };
  return { plan, shape, rows: jobs.rows, created, channels };
}

/**
 * Sends the one statement. A number: committed, the record's generation (the wake-ups are on
 * their way). Null: something already existed and nothing was written; the caller goes on with
 * the transaction.
 */
export async function writeOneStatementRun(
  pool: DatabasePool,
  wakeups: WakeupSender,
  state: DeliveryState,
  record: FinishRecord,
  claim: ClaimOptions,
  run: OneStatementRun,
): Promise<number | null> {
  let generation: number;
  try {
    // Data-modifying WITH queries all run to completion; the feed trigger (an AFTER trigger on runs
    // and jobs) fires at the statement's end, after the record's RETURNING set its deferral.
    ({ generation } = await pool.one(sqlTyped(RecordRow)`
      with delivery_record as (${recordInsert(state, record, claim)} returning generation, ${STATUS_FEED_DEFERRAL}),
        new_run as (${runInsert(run.plan, run.plan.runId, run.shape)} returning id),
        new_jobs as (${jobsInsert(run.plan.runId, run.plan.orgId, run.rows)})
      select generation, status_feed_notify from delivery_record`));
  } catch (error) {
    if (isUniqueViolation(error)) return null;
    throw error;
  }
  wakeups.wake(run.channels);
  return generation;
}
