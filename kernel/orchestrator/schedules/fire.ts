// One scheduler tick (the cluster leader only): every schedule whose next due time has passed
// fires ONCE, however many due times it missed (no backfill), with `scheduledAt` = the latest due
// time not after now. The claim (moving `next_due_at` on) and the `__schedule_fire` event insert
// share one transaction, and the claim is guarded by the due time it read, so a firing is never
// made twice even if two nodes briefly both believe they lead.
import { Cron } from 'croner';
import { Type } from 'typebox';
import type { DatabasePool } from '../../services/db/index.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';
import { emitInternalEvent } from '../events/emit.ts';
import { SCHEDULE_FIRE_EVENT } from '../events/normalize.ts';
import { nextDue } from './store.ts';

const Due = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  repository: Type.String(),
  workflow: Type.String(),
  trigger_index: Type.Number(),
  cron: Type.String(),
  timezone: Type.String(),
  next_due_at: Type.String(),
});

export interface Firing {
  scheduleId: string;
  eventId: string;
  scheduledAt: string;
  /** Due times skipped because they were missed (fired as one); counted up to MISSED_COUNT_LIMIT. */
  missed: number;
}

/** Missed due times are counted up to this many (the count is for the log; the firing is one). */
export const MISSED_COUNT_LIMIT = 1_000;

/**
 * The latest due time ≤ now (`from` itself when none came after it), and how many due times
 * after `from` it stands for. croner finds the latest one directly: walking due time by due time
 * from `from` took seconds for a minutely schedule missed for a month (inside the claim's
 * transaction) and, past its bound, fired an old due time instead of the latest.
 */
function latestDue(cron: string, timezone: string, from: Date, now: Date): { at: Date; skipped: number } {
  let job: Cron;
  try {
    job = new Cron(cron, { timezone, paused: true });
  } catch {
    return { at: from, skipped: 0 };
  }
  try {
    // previousRuns is strictly before its reference: one millisecond later makes it "≤ now".
    const latest = job.previousRuns(1, new Date(now.getTime() + 1))[0];
    if (latest === undefined || latest.getTime() <= from.getTime()) return { at: from, skipped: 0 };
    let skipped = 0;
    for (let at = job.nextRun(from); at !== null && at.getTime() <= latest.getTime() && skipped < MISSED_COUNT_LIMIT; at = job.nextRun(at)) skipped += 1;
    return { at: latest, skipped };
  } finally {
    job.stop();
  }
}

/** Fires every due schedule; returns the firings made. */
export async function fireDueSchedules(pool: DatabasePool, limit = 500): Promise<Firing[]> {
  const firings: Firing[] = [];
  const due = await pool.any(sqlTyped(Due)`
    SELECT id::text AS id, org_id, repository, workflow, trigger_index, cron, timezone, next_due_at::text AS next_due_at FROM schedules
    WHERE broken_reason IS NULL AND next_due_at <= clock_timestamp() ORDER BY next_due_at LIMIT ${limit}`);
  for (const s of due) {
    const fired = await pool.transaction(async (tx) => {
      const now = new Date();
      const { at, skipped } = latestDue(s.cron, s.timezone, new Date(s.next_due_at), now);
      const following = nextDue(s.cron, s.timezone, now);
      const claimed = await tx.maybeOne(sql.unsafe`
        UPDATE schedules SET next_due_at = ${'at' in following ? following.at.toISOString() : now.toISOString()},
          broken_reason = ${'broken' in following ? following.broken : null}, last_due_at = ${at.toISOString()}, last_fired_at = clock_timestamp()
        WHERE id = ${s.id} AND next_due_at = ${s.next_due_at}::timestamptz RETURNING 1 AS one`);
      if (claimed === null) return null;
      const stored = await emitInternalEvent(tx, {
        name: SCHEDULE_FIRE_EVENT,
        source: 'orchestrator',
        orgId: s.org_id,
        payload: {
          scheduleId: s.id,
          repository: s.repository,
          workflow: s.workflow,
          triggerIndex: s.trigger_index,
          cron: s.cron,
          timezone: s.timezone,
          scheduledAt: at.toISOString(),
          firedAt: now.toISOString(),
        },
      });
      await tx.query(sql.unsafe`UPDATE schedules SET last_event_id = ${stored.id} WHERE id = ${s.id}`);
      return { scheduleId: s.id, eventId: stored.id, scheduledAt: at.toISOString(), missed: skipped };
    });
    if (fired !== null) firings.push(fired);
  }
  return firings;
}
