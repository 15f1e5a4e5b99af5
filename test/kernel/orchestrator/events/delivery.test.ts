// Internal event delivery against a real PostgreSQL: the lease state machine (pending → leased →
// processed / pending with a retry time / DLQ), expiry of a dead node's leases, the full-jitter
// back-off bounds, and the EventWorker end to end (retries, DLQ and its retry, two nodes over one
// table, a node killed while holding leases).
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { LeaseLost, type DeliveryResult } from '../../../../kernel/orchestrator/events/consumer.ts';
import { expireLeases, failDelivery, leaseEvents, markProcessed, retryDelayMs, type LeasedEvent } from '../../../../kernel/orchestrator/events/delivery-store.ts';
import { retryDlq } from '../../../../kernel/orchestrator/events/dlq.ts';
import { emitInternalEvent } from '../../../../kernel/orchestrator/events/emit.ts';
import { EventWorker } from '../../../../kernel/orchestrator/events/worker.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { createMetrics, type SvcMetrics } from '../../../../kernel/services/metrics.ts';
import { eachDatabase, testLogger, type TestDb } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';

const WAIT_MS = 60_000;

async function migrated(db: TestDb): Promise<void> {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
}

async function emitMany(pool: DatabasePool, n: number, name = 'thing.happened', orgId = 'org-1'): Promise<string[]> {
  return pool.transaction(async (tx) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 1) ids.push((await emitInternalEvent(tx, { name, payload: { i }, orgId })).id);
    return ids;
  });
}

interface Row {
  attempts: number;
  lease_node: string | null;
  leased: boolean;
  claimed: boolean;
  processed: boolean;
  dlq_reason: string | null;
  dlq: boolean;
  retry_in_ms: number;
  last_error: string | null;
}

async function rowOf(pool: DatabasePool, id: string): Promise<Row> {
  return (await pool.one(sql.unsafe`
    SELECT attempts, lease_node, lease_until IS NOT NULL AS leased, claimed_at IS NOT NULL AS claimed, processed_at IS NOT NULL AS processed,
      dlq_reason, dlq_at IS NOT NULL AS dlq, (extract(epoch FROM (next_attempt_at - clock_timestamp())) * 1000)::float8 AS retry_in_ms, last_error
    FROM internal_events WHERE id = ${id}`)) as never;
}

/** Makes a pending event due now (skips the back-off wait). */
async function dueNow(pool: DatabasePool, id: string): Promise<void> {
  await pool.query(sql.unsafe`UPDATE internal_events SET next_attempt_at = clock_timestamp() WHERE id = ${id}`);
}

async function counter(metrics: SvcMetrics, name: string): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (metric === undefined) return 0;
  const data = await metric.get();
  return data.values.reduce((sum, v) => sum + v.value, 0);
}

/** A delivery that commits the processed mark (as the consumer does) unless `fail` says to throw. */
function deliverer(pool: DatabasePool, nodeId: string, fail: (event: LeasedEvent, call: number) => boolean) {
  const calls = new Map<string, number>();
  const delivered = new Map<string, number>();
  const deliver = async (event: LeasedEvent): Promise<DeliveryResult> => {
    const call = (calls.get(event.id) ?? 0) + 1;
    calls.set(event.id, call);
    if (fail(event, call)) throw new Error(`delivery ${call} of ${event.id} failed`);
    return pool.transaction(async (tx) => {
      if (!(await markProcessed(tx, event, nodeId, [], `delivered by ${nodeId}`))) throw new LeaseLost(`lost ${event.id}`);
      delivered.set(event.id, (delivered.get(event.id) ?? 0) + 1);
      return { runIds: [], outcome: `delivered by ${nodeId}` };
    });
  };
  return { calls, delivered, deliver };
}

/** Two more passes of the worker's loop (the second began after this call), woken rather than polled for. */
async function twoPasses(w: EventWorker): Promise<void> {
  const start = w.passes;
  await until('two worker passes', () => {
    if (w.passes >= start + 2) return true;
    w.wake();
    return undefined;
  }, WAIT_MS, 10);
}

function worker(db: TestDb, nodeId: string, deliver: (e: LeasedEvent) => Promise<DeliveryResult>, metrics: SvcMetrics, more: Partial<ConstructorParameters<typeof EventWorker>[0]> = {}): EventWorker {
  const w = new EventWorker({
    pool: db.pool,
    logger: testLogger,
    metrics,
    nodeId,
    leaseDurationMs: 1_000,
    maxDispatchAttempts: 5,
    retryBaseMs: 20,
    retryMaxMs: 100,
    pollMs: 100,
    deliver,
    ...more,
  });
  w.start();
  return w;
}

t.test('lease, processed mark, retry, DLQ and lease expiry as guarded statements', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrated(db);

    await t.test('a lease takes pending events once; only the lease holder marks them processed', async (t) => {
      const ids = await emitMany(db.pool, 3);
      const leased = await leaseEvents(db.pool, 'node-a', 60_000, 10);
      t.same(leased.map((e) => e.id).sort(), [...ids].sort(), 'node A leases all three');
      for (const e of leased) {
        t.equal(e.attempts, 1, 'attempts + 1 on the claim');
        t.ok(e.claimed_at, 'claimed_at returned');
        t.same(e.payload, { i: ids.indexOf(e.id) });
        const row = await rowOf(db.pool, e.id);
        t.match(row, { attempts: 1, lease_node: 'node-a', leased: true, claimed: true, processed: false });
      }
      t.same(await leaseEvents(db.pool, 'node-b', 60_000, 10), [], 'node B gets none of them');

      const [first, second, third] = leased as [LeasedEvent, LeasedEvent, LeasedEvent];
      t.equal(await db.pool.transaction((tx) => markProcessed(tx, first, 'node-a', [], 'ok')), true, 'the lease holder marks it processed');
      t.match(await rowOf(db.pool, first.id), { processed: true, leased: false });
      t.equal(await db.pool.transaction((tx) => markProcessed(tx, first, 'node-a', [], 'again')), false, 'not twice');
      t.equal(
        await db.pool.transaction((tx) => markProcessed(tx, { ...second, claimed_at: '2000-01-01 00:00:00+00' }, 'node-a', [], 'stale')),
        false,
        'a stale claimed_at (an earlier lease) cannot mark it',
      );
      t.equal(await db.pool.transaction((tx) => markProcessed(tx, third, 'node-b', [], 'other node')), false, 'another node cannot mark it');
      t.match(await rowOf(db.pool, second.id), { processed: false, leased: true });
      // Leave the table clean for the next subtests.
      for (const e of [second, third]) t.equal(await db.pool.transaction((tx) => markProcessed(tx, e, 'node-a', [], 'ok')), true);
    });

    await t.test('concurrent leases (SKIP LOCKED) split pending events without overlap', async (t) => {
      const ids = await emitMany(db.pool, 60);
      const [a, b, c] = await Promise.all([
        leaseEvents(db.pool, 'node-a', 60_000, 25),
        leaseEvents(db.pool, 'node-b', 60_000, 25),
        leaseEvents(db.pool, 'node-c', 60_000, 25),
      ]);
      const all = [...a, ...b, ...c].map((e) => e.id);
      t.ok(a.length <= 25 && b.length <= 25 && c.length <= 25, 'each lease respects its limit');
      t.equal(new Set(all).size, all.length, 'no event leased twice');
      const rest = await leaseEvents(db.pool, 'node-d', 60_000, 100);
      t.same([...all, ...rest.map((e) => e.id)].sort(), [...ids].sort(), 'together they lease every event exactly once');
      for (const e of [...a, ...b, ...c, ...rest]) t.ok(e.attempts === 1);
      await db.pool.query(sql.unsafe`UPDATE internal_events SET processed_at = clock_timestamp(), lease_until = NULL WHERE id = ANY(${sql.array(ids, 'uuid')})`);
    });

    await t.test('a failed delivery goes back to pending with a retry time; the last attempt goes to the DLQ', async (t) => {
      const [id] = (await emitMany(db.pool, 1)) as [string];
      const max = 3;
      for (let attempt = 1; attempt <= max; attempt += 1) {
        const [leased] = await leaseEvents(db.pool, 'node-a', 60_000, 10);
        t.equal(leased?.id, id);
        t.equal(leased?.attempts, attempt, `attempt ${attempt}`);
        const result = await failDelivery(db.pool, leased!, 'node-a', `boom ${attempt}`, { maxAttempts: max, delayMs: 60_000 });
        const row = await rowOf(db.pool, id);
        if (attempt < max) {
          t.equal(result, 'retry');
          t.match(row, { leased: false, processed: false, dlq_reason: null, dlq: false, last_error: `boom ${attempt}` });
          t.ok(row.retry_in_ms > 30_000, `next attempt in the future (${Math.round(row.retry_in_ms)} ms)`);
          t.same(await leaseEvents(db.pool, 'node-b', 60_000, 10), [], 'not leasable before its retry time');
          await dueNow(db.pool, id);
        } else {
          t.equal(result, 'dlq', `attempts == max (${max}) → DLQ`);
          t.match(row, { attempts: max, leased: false, processed: false, dlq_reason: 'exhausted_retries', dlq: true, last_error: `boom ${max}` });
        }
      }
      await dueNow(db.pool, id);
      t.same(await leaseEvents(db.pool, 'node-a', 60_000, 10), [], 'a DLQ event is never leased');

      const [other] = (await emitMany(db.pool, 1)) as [string];
      const [leased] = await leaseEvents(db.pool, 'node-a', 60_000, 10);
      t.equal(leased?.id, other);
      t.equal(await failDelivery(db.pool, leased!, 'node-b', 'not mine', { maxAttempts: 5, delayMs: 0 }), 'lost', 'only the lease holder records a failure');
      t.equal(await failDelivery(db.pool, { ...leased!, claimed_at: '2000-01-01 00:00:00+00' }, 'node-a', 'stale', { maxAttempts: 5, delayMs: 0 }), 'lost');
      t.equal(await failDelivery(db.pool, leased!, 'node-a', 'mine', { maxAttempts: 5, delayMs: 0 }), 'retry');
      const [again] = await leaseEvents(db.pool, 'node-a', 60_000, 10);
      t.equal(again?.attempts, 2);
      t.equal(await db.pool.transaction((tx) => markProcessed(tx, again!, 'node-a', [], 'ok')), true);
      await db.pool.query(sql.unsafe`UPDATE internal_events SET processed_at = clock_timestamp() WHERE id = ${id}`);
    });

    await t.test('an expired lease is released once, and the event leased again', async (t) => {
      const [id] = (await emitMany(db.pool, 1)) as [string];
      const [leased] = await leaseEvents(db.pool, 'node-dead', 60_000, 10);
      t.equal(leased?.id, id);
      t.same(await expireLeases(db.pool), [], 'a live lease is not released');
      await db.pool.query(sql.unsafe`UPDATE internal_events SET lease_until = clock_timestamp() - interval '1 second' WHERE id = ${id}`);
      t.same(await expireLeases(db.pool, 5), [{ id, name: 'thing.happened', org_id: 'org-1', lease_node: 'node-dead', dlq: false }], 'released, naming the dead node');
      t.match(await rowOf(db.pool, id), { lease_node: null, leased: false, processed: false, attempts: 1, last_error: 'lease expired on node node-dead' });
      t.same(await expireLeases(db.pool), [], 'returned once');
      const [again] = await leaseEvents(db.pool, 'node-b', 60_000, 10);
      t.equal(again?.id, id);
      t.equal(again?.attempts, 2);
      t.equal(await db.pool.transaction((tx) => markProcessed(tx, leased!, 'node-dead', [], 'late')), false, 'the dead node can no longer mark it');
      t.equal(await db.pool.transaction((tx) => markProcessed(tx, again!, 'node-b', [], 'ok')), true);
    });

    await t.test('a lease that expires on the last attempt sends the event to the DLQ', async (t) => {
      const [id] = (await emitMany(db.pool, 1)) as [string];
      await db.pool.query(sql.unsafe`UPDATE internal_events SET attempts = 4 WHERE id = ${id}`);
      const [leased] = await leaseEvents(db.pool, 'node-dead', 60_000, 10);
      t.equal(leased?.attempts, 5);
      await db.pool.query(sql.unsafe`UPDATE internal_events SET lease_until = clock_timestamp() - interval '1 second' WHERE id = ${id}`);
      t.same(await expireLeases(db.pool, 5), [{ id, name: 'thing.happened', org_id: 'org-1', lease_node: 'node-dead', dlq: true }]);
      t.match(await rowOf(db.pool, id), { attempts: 5, lease_node: null, leased: false, processed: false, dlq_reason: 'exhausted_retries', dlq: true });
      t.same(await leaseEvents(db.pool, 'node-b', 60_000, 10), [], 'never leased again');
      t.same(await expireLeases(db.pool, 5), []);
      t.same(await retryDlq(db.pool, [id]), [id], 'the operator can retry it');
      const [retried] = await leaseEvents(db.pool, 'node-b', 60_000, 10);
      t.equal(retried?.attempts, 1);
      t.equal(await db.pool.transaction((tx) => markProcessed(tx, retried!, 'node-b', [], 'ok')), true);
    });
  });
});

t.test('retryDelayMs: full jitter within [0, min(max, base · 2^(n-1))]', async (t) => {
  const randoms = [() => 0, () => 0.5, () => 0.999999999, Math.random];
  let checked = 0;
  for (const base of [1, 20, 250, 1_000]) {
    for (const max of [1, 100, 30_000, 600_000]) {
      for (let attempt = 1; attempt <= 70; attempt += 1) {
        const ceiling = Math.min(max, base * 2 ** (attempt - 1));
        for (const random of randoms) {
          for (let k = 0; k < (random === Math.random ? 20 : 1); k += 1) {
            const d = retryDelayMs(attempt, base, max, random);
            checked += 1;
            if (!(Number.isInteger(d) && d >= 0 && d <= ceiling)) t.fail(`retryDelayMs(${attempt}, ${base}, ${max}) = ${d}, outside [0, ${ceiling}]`);
          }
        }
      }
    }
  }
  t.pass(`${checked} delays within bounds`);
  t.equal(retryDelayMs(1, 20, 100, () => 0.999999), 19, 'attempt 1: below base');
  t.equal(retryDelayMs(3, 20, 100, () => 0.999999), 79, 'attempt 3: below base · 4');
  t.equal(retryDelayMs(50, 20, 100, () => 0.999999), 99, 'capped by max');
  // Full jitter spreads over the whole range, not just near the ceiling.
  const samples = Array.from({ length: 2_000 }, () => retryDelayMs(10, 20, 1_000));
  t.ok(Math.min(...samples) < 100 && Math.max(...samples) > 900, 'uniform over [0, ceiling]');
});

t.test('EventWorker end to end', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrated(db);

    await t.test('a delivery that throws twice is retried and delivered on the third attempt', async (t) => {
      const metrics = createMetrics({ defaultMetrics: false });
      const d = deliverer(db.pool, 'node-a', (_e, call) => call <= 2);
      const w = worker(db, 'node-a', d.deliver, metrics);
      t.teardown(() => w.stop());
      const [id] = (await emitMany(db.pool, 1, 'flaky')) as [string];
      w.wake();
      await until('delivered', async () => ((await rowOf(db.pool, id)).processed ? true : undefined), WAIT_MS);
      await w.stop();
      t.equal(d.calls.get(id), 3, 'two failures, then success');
      t.equal(d.delivered.get(id), 1);
      t.match(await rowOf(db.pool, id), { attempts: 3, processed: true, dlq_reason: null, last_error: null });
      t.equal(await counter(metrics, 'svc_orch_events_retried_total'), 2);
      t.equal(await counter(metrics, 'svc_orch_events_delivered_total'), 1);
      t.equal(await counter(metrics, 'svc_orch_event_dlq_total'), 0);
    });

    await t.test('a delivery that always throws ends in the DLQ after exactly maxDispatchAttempts; retryDlq delivers it once', async (t) => {
      const metrics = createMetrics({ defaultMetrics: false });
      let failing = true;
      const d = deliverer(db.pool, 'node-a', () => failing);
      const w = worker(db, 'node-a', d.deliver, metrics);
      t.teardown(() => w.stop());
      const [id] = (await emitMany(db.pool, 1, 'poison')) as [string];
      w.wake();
      await until('in the DLQ', async () => ((await rowOf(db.pool, id)).dlq_reason !== null ? true : undefined), WAIT_MS);
      t.match(await rowOf(db.pool, id), { attempts: 5, dlq_reason: 'exhausted_retries', processed: false, leased: false, last_error: /delivery 5 of/ });
      // Nothing leases a DLQ event: two passes of the loop after it got there.
      await twoPasses(w);
      t.equal(d.calls.get(id), 5, 'exactly five attempts');
      t.equal(await counter(metrics, 'svc_orch_event_dlq_total'), 1);
      t.equal(await counter(metrics, 'svc_orch_events_retried_total'), 4);

      failing = false;
      t.same(await retryDlq(db.pool, [id]), [id]);
      await until('delivered after the DLQ retry', async () => ((await rowOf(db.pool, id)).processed ? true : undefined), WAIT_MS);
      await w.stop();
      t.equal(d.calls.get(id), 6);
      t.equal(d.delivered.get(id), 1, 'delivered once');
      t.match(await rowOf(db.pool, id), { attempts: 1, processed: true, dlq_reason: null });
      await w.sweep();
      const gauge = await metrics.registry.getSingleMetric('svc_orch_event_dlq_size')?.get();
      t.equal(gauge?.values[0]?.value, 0, 'the DLQ gauge is refreshed by the sweep');
    });

    await t.test('two workers over one table deliver each of 200 events exactly once', async (t) => {
      const metrics = createMetrics({ defaultMetrics: false });
      // Leases far longer than a delivery: no lease expires, so each event is delivered once.
      const a = deliverer(db.pool, 'node-a', () => false);
      const b = deliverer(db.pool, 'node-b', () => false);
      const options = { leaseDurationMs: 60_000, batchSize: 16, concurrency: 4 };
      const wa = worker(db, 'node-a', a.deliver, metrics, options);
      const wb = worker(db, 'node-b', b.deliver, createMetrics({ defaultMetrics: false }), options);
      t.teardown(async () => {
        await wa.stop();
        await wb.stop();
      });
      const ids: string[] = [];
      for (let i = 0; i < 4; i += 1) {
        ids.push(...(await emitMany(db.pool, 50, 'bulk')));
        wa.wake();
        wb.wake();
      }
      await until(
        '200 events processed',
        async () => (Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM internal_events WHERE name = 'bulk' AND processed_at IS NOT NULL`)) === 200 ? true : undefined),
        WAIT_MS,
      );
      await wa.stop();
      await wb.stop();
      const twice = ids.filter((id) => (a.calls.get(id) ?? 0) + (b.calls.get(id) ?? 0) !== 1);
      t.same(twice, [], 'every event delivered exactly once across both nodes');
      t.equal(a.delivered.size + b.delivered.size, 200);
      t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT max(attempts)::int FROM internal_events WHERE name = 'bulk'`)), 1, 'each leased once');
      t.comment(`node-a delivered ${a.delivered.size}, node-b ${b.delivered.size}`);
    });

    await t.test("a node killed while holding leases: another node's sweep releases them after expiry and delivers each once", async (t) => {
      const metrics = createMetrics({ defaultMetrics: false });
      const ids = await emitMany(db.pool, 3, 'orphaned');
      const dead = await leaseEvents(db.pool, 'dead', 300, 10);
      t.same(dead.map((e) => e.id).sort(), [...ids].sort(), "the dead node held the events' leases");
      const d = deliverer(db.pool, 'node-live', () => false);
      const w = worker(db, 'node-live', d.deliver, metrics);
      t.teardown(() => w.stop());
      await until(
        'orphaned events delivered',
        async () => (Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM internal_events WHERE name = 'orphaned' AND processed_at IS NOT NULL`)) === 3 ? true : undefined),
        WAIT_MS,
      );
      await w.stop();
      for (const id of ids) {
        t.equal(d.calls.get(id), 1, 'delivered once');
        t.match(await rowOf(db.pool, id), { attempts: 2, lease_node: 'node-live', processed: true });
      }
      t.equal(await counter(metrics, 'svc_orch_event_lease_expirations_total'), 3, 'the expirations were counted');
      for (const e of dead) t.equal(await db.pool.transaction((tx) => markProcessed(tx, e, 'dead', [], 'late')), false, 'the dead lease can no longer commit');
    });

    await t.test('an event whose node died on its last attempt goes to the DLQ, not to another node', async (t) => {
      const metrics = createMetrics({ defaultMetrics: false });
      const [id] = (await emitMany(db.pool, 1, 'node-killer')) as [string];
      await db.pool.query(sql.unsafe`UPDATE internal_events SET attempts = 4 WHERE id = ${id}`);
      t.equal((await leaseEvents(db.pool, 'dead', 300, 10))[0]?.attempts, 5, 'the fifth attempt died with its node');
      const d = deliverer(db.pool, 'node-live', () => false);
      const w = worker(db, 'node-live', d.deliver, metrics);
      t.teardown(() => w.stop());
      await until('in the DLQ', async () => ((await rowOf(db.pool, id)).dlq_reason !== null ? true : undefined), WAIT_MS);
      await twoPasses(w);
      await w.stop();
      t.equal(d.calls.get(id), undefined, 'not delivered a sixth time');
      t.match(await rowOf(db.pool, id), { attempts: 5, dlq_reason: 'exhausted_retries', last_error: 'lease expired on node dead' });
      t.equal(await counter(metrics, 'svc_orch_event_lease_expirations_total'), 1);
      t.equal(await counter(metrics, 'svc_orch_event_dlq_total'), 1);
    });
  });
});
