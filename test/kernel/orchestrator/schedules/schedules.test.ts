// Schedules against a real PostgreSQL: rows follow the lock (an unchanged schedule keeps its next
// due time), a due schedule fires once with `scheduledAt` = its due time, missed firings collapse
// into one (no backfill), concurrent ticks make one firing, and a broken expression never fires.
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { fireDueSchedules, MISSED_COUNT_LIMIT } from '../../../../kernel/orchestrator/schedules/fire.ts';
import { nextDue, syncSchedules } from '../../../../kernel/orchestrator/schedules/store.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { lockOf, trig, workflow } from '../../../fixtures/locks.ts';

const ORG = 'acme';
const REPO = 'acme/widgets';

interface ScheduleRow {
  id: string;
  workflow: string;
  trigger_index: number;
  cron: string;
  timezone: string;
  next_due_at: string;
  next_due_ms: number;
  last_due_at: string | null;
  last_event_id: string | null;
  broken_reason: string | null;
}

async function schedules(pool: DatabasePool): Promise<ScheduleRow[]> {
  return (await pool.any(sql.unsafe`
    SELECT id::text AS id, workflow, trigger_index, cron, timezone, next_due_at::text AS next_due_at,
      (extract(epoch FROM next_due_at) * 1000)::float8 AS next_due_ms, last_due_at::text AS last_due_at, last_event_id::text AS last_event_id,
      broken_reason
    FROM schedules ORDER BY workflow, trigger_index`)) as never;
}

async function fires(pool: DatabasePool): Promise<Array<{ id: string; payload: Record<string, unknown>; source: string; org_id: string }>> {
  return (await pool.any(sql.unsafe`SELECT id::text AS id, payload, source, org_id FROM internal_events WHERE name = '__schedule_fire' ORDER BY created_at`)) as never;
}

async function setDue(pool: DatabasePool, workflowName: string, at: Date): Promise<void> {
  await pool.query(sql.unsafe`UPDATE schedules SET next_due_at = ${at.toISOString()}::timestamptz WHERE workflow = ${workflowName}`);
}

const sync = (pool: DatabasePool, lock: ReturnType<typeof lockOf>, now?: Date) => pool.transaction((tx) => syncSchedules(tx, ORG, REPO, lock, now));

t.test('syncSchedules follows the lock and keeps unchanged schedules', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const start = new Date('2030-01-01T12:34:56Z');
    const first = lockOf([
      workflow('nightly', [trig.schedule({ cron: '0 3 * * *', timezone: 'UTC' })]),
      workflow('hourly', [trig.push(), trig.schedule({ cron: '15 * * * *', timezone: 'Europe/Berlin' })]),
    ]);
    t.equal(await sync(db.pool, first, start), 2);
    const before = await schedules(db.pool);
    t.match(before, [
      { workflow: 'hourly', trigger_index: 1, cron: '15 * * * *', timezone: 'Europe/Berlin', broken_reason: null },
      { workflow: 'nightly', trigger_index: 0, cron: '0 3 * * *', timezone: 'UTC', broken_reason: null },
    ]);
    t.equal(new Date(before[1]!.next_due_ms).toISOString(), '2030-01-02T03:00:00.000Z', 'first due time after the sync');
    t.equal(new Date(before[0]!.next_due_ms).toISOString(), '2030-01-01T13:15:00.000Z', 'evaluated in its timezone');

    // A later push with the same lock: nothing moves.
    t.equal(await sync(db.pool, first, new Date('2030-01-05T00:00:00Z')), 2);
    t.same(await schedules(db.pool), before, 'same rows, same next due times');

    const second = lockOf([
      workflow('nightly', [trig.schedule({ cron: '0 3 * * *', timezone: 'UTC' })]),
      workflow('weekly', [trig.schedule({ cron: '0 6 * * 1', timezone: 'UTC' })]),
    ]);
    t.equal(await sync(db.pool, second, start), 2);
    const after = await schedules(db.pool);
    t.same(after.map((s) => s.workflow), ['nightly', 'weekly'], 'hourly dropped, weekly added');
    t.same(after[0], before[1], 'nightly untouched');
    t.equal(new Date(after[1]!.next_due_ms).toISOString(), '2030-01-07T06:00:00.000Z');

    // A changed expression is a new schedule.
    t.equal(await sync(db.pool, lockOf([workflow('nightly', [trig.schedule({ cron: '30 4 * * *', timezone: 'UTC' })])]), start), 1);
    const changed = await schedules(db.pool);
    t.equal(changed.length, 1);
    t.not(changed[0]!.id, before[1]!.id);
    t.equal(new Date(changed[0]!.next_due_ms).toISOString(), '2030-01-02T04:30:00.000Z');

    t.equal(await sync(db.pool, lockOf([workflow('ci', [trig.push()])])), 0);
    t.same(await schedules(db.pool), [], 'a lock without schedules leaves none');
  });
});

t.test('fireDueSchedules: once per due time, missed firings collapse, concurrent ticks fire once', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const lock = lockOf([
      workflow('nightly', [trig.schedule({ cron: '0 3 * * *', timezone: 'UTC' })]),
      workflow('minutely', [trig.push(), trig.schedule({ cron: '* * * * *', timezone: 'UTC' })]),
      workflow('bad-cron', [trig.schedule({ cron: 'every tuesday', timezone: 'UTC' })]),
      workflow('bad-zone', [trig.schedule({ cron: '0 3 * * *', timezone: 'Mars/Olympus_Mons' })]),
    ]);
    await sync(db.pool, lock);
    // Each subtest makes the schedule it looks at due; the others wait far in the future, so a
    // minute passing while the suite runs never makes one due behind a test's back.
    const park = () => db.pool.query(sql.unsafe`UPDATE schedules SET next_due_at = clock_timestamp() + interval '1 year' WHERE broken_reason IS NULL`);
    await park();

    await t.test('a broken expression is recorded and never fires', async (t) => {
      const rows = await schedules(db.pool);
      t.match(rows.find((r) => r.workflow === 'bad-cron'), { broken_reason: /cron "every tuesday" \(UTC\) cannot be evaluated/ });
      t.match(rows.find((r) => r.workflow === 'bad-zone'), { broken_reason: /cannot be evaluated/ });
      t.equal(rows.find((r) => r.workflow === 'nightly')?.broken_reason, null);
      await db.pool.query(sql.unsafe`UPDATE schedules SET next_due_at = clock_timestamp() - interval '1 hour' WHERE broken_reason IS NOT NULL`);
      t.same(await fireDueSchedules(db.pool), [], 'nothing is due but the broken ones, and they do not fire');
      t.same(await fires(db.pool), []);
    });

    await t.test('a due schedule fires once with scheduledAt = its due time', async (t) => {
      // The latest 03:00 UTC not after now: still the latest due time, so no firing was missed.
      const now = new Date();
      const due = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), 3));
      if (due.getTime() > now.getTime()) due.setUTCDate(due.getUTCDate() - 1);
      await setDue(db.pool, 'nightly', due);
      const [nightly] = (await schedules(db.pool)).filter((s) => s.workflow === 'nightly');
      const firings = await fireDueSchedules(db.pool);
      t.equal(firings.length, 1);
      t.match(firings[0], { scheduleId: nightly!.id, scheduledAt: due.toISOString(), missed: 0 });
      const events = await fires(db.pool);
      t.equal(events.length, 1, 'one __schedule_fire event');
      t.match(events[0], {
        id: firings[0]!.eventId,
        source: 'orchestrator',
        org_id: ORG,
        payload: { scheduleId: nightly!.id, repository: REPO, workflow: 'nightly', triggerIndex: 0, cron: '0 3 * * *', timezone: 'UTC', scheduledAt: due.toISOString() },
      });
      const after = (await schedules(db.pool)).find((s) => s.workflow === 'nightly')!;
      t.equal(new Date(after.next_due_ms).toISOString(), new Date(due.getTime() + 86_400_000).toISOString(), 'next due: the following 03:00');
      t.equal(after.last_event_id, firings[0]!.eventId);
      t.same(await fireDueSchedules(db.pool), [], 'a second tick fires nothing');
      t.equal((await fires(db.pool)).length, 1);
    });

    await t.test('ten missed minutes fire once, at the latest minute, and the next due time is in the future', async (t) => {
      await db.pool.query(sql.unsafe`UPDATE schedules SET next_due_at = date_trunc('minute', clock_timestamp()) - interval '10 minutes' WHERE workflow = 'minutely'`);
      const before = Date.now();
      const firings = await fireDueSchedules(db.pool);
      const after = Date.now();
      t.equal(firings.length, 1, 'one firing, no backfill');
      const firing = firings[0]!;
      const scheduled = new Date(firing.scheduledAt).getTime();
      t.ok(scheduled % 60_000 === 0, `scheduledAt is a minute (${firing.scheduledAt})`);
      t.ok(scheduled >= Math.floor(before / 60_000) * 60_000 && scheduled <= after, 'the latest minute not after now');
      t.ok(firing.missed >= 9, `missed ${firing.missed}`);
      const events = (await fires(db.pool)).filter((e) => e.payload['workflow'] === 'minutely');
      t.equal(events.length, 1);
      t.equal(events[0]!.payload['scheduledAt'], firing.scheduledAt);
      t.equal(events[0]!.payload['triggerIndex'], 1);
      const row = (await schedules(db.pool)).find((s) => s.workflow === 'minutely')!;
      t.ok(row.next_due_ms > after - 1_000 && row.next_due_ms === scheduled + 60_000, 'next due: the minute after scheduledAt, in the future');
      await park();
    });

    await t.test('a month of missed minutes still fires once, at the latest minute', async (t) => {
      await db.pool.query(sql.unsafe`UPDATE schedules SET next_due_at = date_trunc('minute', clock_timestamp()) - interval '30 days' WHERE workflow = 'minutely'`);
      const before = Date.now();
      const firings = await fireDueSchedules(db.pool);
      const after = Date.now();
      t.equal(firings.length, 1);
      const scheduled = new Date(firings[0]!.scheduledAt).getTime();
      t.ok(scheduled >= Math.floor(before / 60_000) * 60_000 && scheduled <= after, `the latest minute not after now (${firings[0]!.scheduledAt})`);
      t.equal(firings[0]!.missed, MISSED_COUNT_LIMIT, 'the missed count is bounded');
      await park();
    });

    await t.test('two concurrent ticks on one due schedule make one firing', async (t) => {
      const existing = (await fires(db.pool)).length;
      // A daily schedule missed for three days: the next due time after a firing is hours away.
      for (let round = 0; round < 5; round += 1) {
        await db.pool.query(sql.unsafe`
          UPDATE schedules SET next_due_at = date_trunc('day', clock_timestamp() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '3 days' + interval '3 hours'
          WHERE workflow = 'nightly'`);
        const [a, b] = await Promise.all([fireDueSchedules(db.pool), fireDueSchedules(db.pool)]);
        t.equal(a.length + b.length, 1, `round ${round}: one firing between the two ticks`);
      }
      t.equal((await fires(db.pool)).length, existing + 5, 'one event per round');
    });
  });
});

t.test('nextDue', async (t) => {
  t.same(nextDue('*/5 * * * *', 'UTC', new Date('2030-01-01T00:00:00Z')), { at: new Date('2030-01-01T00:05:00Z') }, 'strictly after');
  t.same(nextDue('0 9 * * *', 'America/New_York', new Date('2030-06-01T00:00:00Z')), { at: new Date('2030-06-01T13:00:00Z') });
  t.match(nextDue('61 * * * *', 'UTC', new Date()), { broken: /cannot be evaluated/ });
});
