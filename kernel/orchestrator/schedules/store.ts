// Schedule state per schedule trigger of a registered workflow. Rows are synced from the lock in
// the transaction that replaces a repository's registrations (a default-branch push): a schedule
// the new lock still has keeps its next due time, a new one gets its first, a dropped one goes.
import { randomUUID } from 'node:crypto';
import { Cron } from 'croner';
import { Type } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import type { Lock } from '../../../schemas/lock.ts';
import { messageOf } from '../../../core/errors.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';

export interface ScheduleKey {
  workflow: string;
  triggerIndex: number;
  cron: string;
  timezone: string;
}

/** The schedule triggers of a lock. */
export function schedulesOf(lock: Lock): ScheduleKey[] {
  const out: ScheduleKey[] = [];
  for (const workflow of lock.workflows) {
    workflow.triggers.forEach((trigger, triggerIndex) => {
      if (trigger.type === 'schedule') out.push({ workflow: workflow.name, triggerIndex, cron: trigger.cron, timezone: trigger.timezone });
    });
  }
  return out;
}

/** The first due time strictly after `after`, or the reason the expression cannot be evaluated. */
export function nextDue(cron: string, timezone: string, after: Date): { at: Date } | { broken: string } {
  try {
    const job = new Cron(cron, { timezone, paused: true });
    const at = job.nextRun(after);
    job.stop();
    return at === null ? { broken: `cron "${cron}" has no future occurrence` } : { at };
  } catch (error) {
    return { broken: `cron "${cron}" (${timezone}) cannot be evaluated: ${messageOf(error)}` };
  }
}

const Existing = Type.Object({ id: Type.String(), workflow: Type.String(), trigger_index: Type.Number(), cron: Type.String(), timezone: Type.String() });

const keyOf = (s: ScheduleKey) => `${s.workflow}\0${s.triggerIndex}\0${s.cron}\0${s.timezone}`;

/** Makes the repository's schedule rows match `lock`; returns how many it has. */
export async function syncSchedules(tx: CommonQueryMethods, orgId: string, repository: string, lock: Lock, now = new Date()): Promise<number> {
  const wanted = schedulesOf(lock);
  const existing = await tx.any(sqlTyped(Existing)`
    SELECT id::text AS id, workflow, trigger_index, cron, timezone FROM schedules
    WHERE org_id = ${orgId} AND lower(repository) = lower(${repository}) FOR UPDATE`);
  const keep = new Set(wanted.map(keyOf));
  const gone = existing.filter((e) => !keep.has(keyOf({ workflow: e.workflow, triggerIndex: e.trigger_index, cron: e.cron, timezone: e.timezone })));
  if (gone.length > 0) await tx.query(sql.unsafe`DELETE FROM schedules WHERE id = ANY(${sql.array(gone.map((g) => g.id), 'uuid')})`);
  const have = new Set(existing.map((e) => keyOf({ workflow: e.workflow, triggerIndex: e.trigger_index, cron: e.cron, timezone: e.timezone })));
  for (const s of wanted) {
    if (have.has(keyOf(s))) continue;
    const next = nextDue(s.cron, s.timezone, now);
    await tx.query(sql.unsafe`
      INSERT INTO schedules (id, org_id, repository, workflow, trigger_index, cron, timezone, next_due_at, broken_reason)
      VALUES (${randomUUID()}, ${orgId}, ${repository}, ${s.workflow}, ${s.triggerIndex}, ${s.cron}, ${s.timezone},
        ${'at' in next ? next.at.toISOString() : now.toISOString()}, ${'broken' in next ? next.broken : null})
      ON CONFLICT DO NOTHING`);
  }
  return wanted.length;
}
