// Deliveries kept after a passing failure, against real PostgreSQL (system and embedded) and the
// real pipeline: while the forge is down every push is answered accepted and kept with its
// bytes; the retry worker tries them again with back-off, and once the forge is back each
// becomes exactly one run and its kept row goes. Past the give-up time the record says failed
// with what to do; an operator's retry runs it again. A redelivery that finished a kept delivery
// first is not processed twice, and a lease a dead node held runs out by itself.
import t from 'tap';
import { isSvcError } from '../../../../core/errors.ts';
import { leaseDue, purgeFailed, requestRetry } from '../../../../kernel/orchestrator/ingest/retry/store.ts';
import { startRetryWorker } from '../../../../kernel/orchestrator/ingest/retry/worker.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { count, delivery, deliveryRow, makeHarness } from './harness.ts';

interface KeptRow {
  state: string;
  attempts: number;
  due: boolean;
}

await eachDatabase(t, async (t, db) => {
  // Short delays: the test makes rows due by hand rather than waiting for them.
  const h = await makeHarness(t, db, { retryPolicy: () => ({ baseMs: 60_000, maxMs: 120_000, giveUpAfterMs: 3_600_000 }) });
  const { secret } = await h.addSource();
  // A commit per push: a lock once read is cached, and each case needs its fetch to fail first.
  const shaOf = (n: number) => String(n).repeat(40);
  for (let n = 1; n <= 8; n++) h.forge.putLock(shaOf(n), [workflow('ci', [trig.push({ branches: ['main'] })])]);
  // Polled by hand: the timer's interval is far past the test's length.
  const worker = startRetryWorker({ pool: db.pool, logger: db.logger, nodeId: 'node-a', ingest: (d) => h.pipeline.ingestDelivery(d), pollMs: 3_600_000 });
  t.teardown(() => worker.stop());

  const kept = async (deliveryId: string): Promise<KeptRow | null> =>
    (await db.pool.maybeOne(sql.unsafe`select state, attempts, next_attempt_at <= now() as due from webhook_delivery_retries where delivery_id = ${deliveryId}`)) as KeptRow | null;
  const makeDue = () => db.pool.query(sql.unsafe`update webhook_delivery_retries set next_attempt_at = now() where state = 'waiting'`);
  const push = (n: number) => delivery(pushPayload({ after: shaOf(n) }), { secret, deliveryId: `push-${n}-${Date.now()}` });

  await t.test('forge down: each push kept; still down: tried again with back-off; back: one run each, kept rows gone', async (t) => {
    const runsBefore = await count(db, 'runs');
    h.forge.failLockFetch = 'connect ECONNREFUSED 127.0.0.1:443';
    const pushes = [push(1), push(2), push(3)];
    for (const d of pushes) {
      const outcome = await h.pipeline.ingestDelivery(d);
      t.same([outcome.result, outcome.status], ['accepted', 'retrying'], `${d.deliveryId} accepted and kept`);
    }
    t.equal(await worker.poll(), 0, 'nothing is due before its back-off');
    await makeDue();
    t.equal(await worker.poll(), 3, 'three kept deliveries tried');
    for (const d of pushes) {
      t.match(await kept(d.deliveryId), { state: 'waiting', attempts: 2, due: false }, 'failed again: attempt counted, next one later');
      t.match((await deliveryRow(db, d.deliveryId))?.message, /attempt 2 failed; next at/);
    }
    t.equal(await count(db, 'runs'), runsBefore, 'no run while the lock cannot be read');

    h.forge.failLockFetch = null;
    await makeDue();
    t.equal(await worker.poll(), 3);
    for (const d of pushes) {
      const row = await deliveryRow(db, d.deliveryId);
      t.equal(row?.status, 'matched', `${d.deliveryId} matched once the forge answers`);
      t.equal(row?.run_ids.length, 1);
      t.equal(await kept(d.deliveryId), null, 'the kept bytes are gone');
    }
    t.equal(await count(db, 'runs'), runsBefore + 3, 'exactly one run per push');
    t.equal(await worker.poll(), 0);
    const again = await h.pipeline.ingestDelivery(pushes[0]!);
    t.equal(again.result, 'duplicate', 'a late redelivery of a retried push is a duplicate');
    t.equal(await count(db, 'runs'), runsBefore + 3);
  });

  await t.test('past the give-up time: recorded failed with what to do; an operator retry runs it again', async (t) => {
    h.forge.failLockFetch = 'GitHub is unavailable: 502';
    const d = push(4);
    t.equal((await h.pipeline.ingestDelivery(d)).status, 'retrying');
    // A day and more in a moment: the first failure moved back past the give-up time.
    await db.pool.query(sql.unsafe`update webhook_delivery_retries set created_at = now() - interval '2 hours' where delivery_id = ${d.deliveryId}`);
    await makeDue();
    t.equal(await worker.poll(), 1);
    t.match(await kept(d.deliveryId), { state: 'failed', attempts: 2 });
    const row = await deliveryRow(db, d.deliveryId);
    t.equal(row?.status, 'failed');
    t.match(row?.message, /^gave up after 2 attempts over \d+ s \(ingestRetry\.giveUpAfterMs 3600000\); last error: lock file could not be fetched: GitHub is unavailable: 502; retry with "svc-admin deliveries retry"/);
    await makeDue();
    t.equal(await worker.poll(), 0, 'a failed delivery is not retried by itself');

    h.forge.failLockFetch = null;
    const requested = await requestRetry(db.pool, 'acme', d.deliveryId);
    t.match(requested, { attempts: 2, lastError: /GitHub is unavailable/ });
    t.match(await deliveryRow(db, d.deliveryId), { status: 'retrying', message: /retry requested by an operator \(2 attempts so far/ });
    t.equal(await worker.poll(), 1, 'due at once');
    t.equal((await deliveryRow(db, d.deliveryId))?.status, 'matched');
    t.equal(await kept(d.deliveryId), null);

    const refused = await requestRetry(db.pool, 'acme', d.deliveryId).then(() => null, (e: unknown) => e);
    t.ok(isSvcError(refused) && refused.code === 'SVC_ERR_DELIVERY_NOT_KEPT', 'a delivery with nothing kept is refused');
    t.match((refused as Error).message, /is not kept for retry.*ask the sender to redeliver it/);
  });

  await t.test('a kept delivery the sender redelivered meanwhile is settled without a second run', async (t) => {
    h.forge.failLockFetch = 'timeout';
    const d = push(5);
    await h.pipeline.ingestDelivery(d);
    h.forge.failLockFetch = null;
    const runsBefore = await count(db, 'runs');
    t.equal((await h.pipeline.ingestDelivery(d)).status, 'matched', 'the redelivery finishes it');
    const before = await deliveryRow(db, d.deliveryId);
    await makeDue();
    t.equal(await worker.poll(), 1);
    t.equal(await count(db, 'runs'), runsBefore + 1, 'one run');
    t.equal(await kept(d.deliveryId), null, 'the kept row went');
    t.equal((await deliveryRow(db, d.deliveryId))?.duplicates, before?.duplicates, 'not even counted as a duplicate');
  });

  await t.test("a lease held by a node that died runs out and another node retries the row", async (t) => {
    h.forge.failLockFetch = 'ECONNRESET';
    const d = push(6);
    await h.pipeline.ingestDelivery(d);
    h.forge.failLockFetch = null;
    await makeDue();
    const taken = await leaseDue(db.pool, 'node-dead', 10, 1);
    t.same(taken.map((l) => l.delivery.deliveryId), [d.deliveryId], 'the dead node took it');
    t.ok(taken[0]!.delivery.body.equals(d.body), 'with the exact bytes');
    // The dead node's lease ran out (moved an hour back, not waited for).
    await db.pool.query(sql.unsafe`update webhook_delivery_retries set lease_until = now() - interval '1 hour', next_attempt_at = now() - interval '1 hour' where delivery_id = ${d.deliveryId}`);
    t.equal(await worker.poll(), 1, 'due again once the lease ran out');
    t.equal((await deliveryRow(db, d.deliveryId))?.status, 'matched');
  });

  await t.test('kept bytes of a failed delivery go after the warm window; waiting ones stay', async (t) => {
    h.forge.failLockFetch = 'ETIMEDOUT';
    const failed = push(7);
    const waiting = push(8);
    await h.pipeline.ingestDelivery(failed);
    await h.pipeline.ingestDelivery(waiting);
    h.forge.failLockFetch = null;
    await db.pool.query(sql.unsafe`update webhook_delivery_retries set state = 'failed', updated_at = now() - interval '31 days' where delivery_id = ${failed.deliveryId}`);
    await db.pool.query(sql.unsafe`update webhook_delivery_retries set updated_at = now() - interval '31 days' where delivery_id = ${waiting.deliveryId}`);
    t.equal(await purgeFailed(db.pool, 30), 1);
    t.equal(await kept(failed.deliveryId), null);
    t.match(await kept(waiting.deliveryId), { state: 'waiting' }, 'a delivery still being retried keeps its bytes');
  });
});
