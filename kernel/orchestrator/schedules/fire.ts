// One scheduler tick (the cluster leader only): every schedule whose next due time has passed
// fires ONCE, however many due times it missed (no backfill), with `scheduledAt` = the latest due
// time not after now. The claim (moving `next_due_at` on) and the `__schedule_fire` event insert
// share one transaction, and the claim is guarded by the due time it read, so a firing is never
// made twice even if two nodes briefly both believe they lead.
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
  /** Due times skipped because they were missed (fired as one). */
  missed: number;
}

/** The latest due time ≤ now, counting how many came before it since `from` (bounded walk). */
function latestDue(cron: string, timezone: string, from: Date, now: Date): { at: Date; skipped: number } {
  let at = from;
  let skipped = 0;
  for (let i = 0; i < 100_000; i += 1) {
    const next = nextDue(cron, timezone, at);
    if (!('at' in next) || next.at.getTime() > now.getTime()) break;
    at = next.at;
    skipped += 1;
  }
  return { at, skipped };
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
