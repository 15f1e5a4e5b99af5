// The durable buffer: nothing answered `buffered` is lost across a relay restart, replay is in
// arrival order and once per delivery, expiry is logged and counted, and the budget answers 503.
import t from 'tap';
import { Type } from 'typebox';
import { eachDatabase } from '../../fixtures/db.ts';
import { sql, sqlTyped } from '../../../kernel/services/db/index.ts';
import { fakeOrchestrator, newOrg, sendWebhook, startTestRelay, until } from './harness.ts';

const LogRow = Type.Object({ delivery_id: Type.String(), outcome: Type.String(), routing_key: Type.String() });

function metricValue(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

/** Replay passes the relay at `url` completed (`svc_relay_replay_passes_total`). */
async function replayPasses(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  if (!text.includes('# TYPE svc_relay_replay_passes_total ')) throw new Error('svc_relay_replay_passes_total is not exposed');
  return metricValue(text, 'svc_relay_replay_passes_total');
}

/** `n` more replay passes of the relay at `url` (with n = 2, the second began after this call). */
async function replayPassesAfter(url: string, n: number, from?: number): Promise<void> {
  const start = from ?? (await replayPasses(url));
  await until(async () => (await replayPasses(url)) >= start + n, 60_000, `${n} replay passes`);
}

await eachDatabase(t, async (t, db) => {
  const token = await newOrg(db.pool, 'acme');
  // Sources are persisted: register once so later relays admit deliveries with nobody connected.
  {
    const r = await startTestRelay(t, db.url);
    const o = await fakeOrchestrator(t, r.url, token);
    await o.close();
    await r.stop();
  }

  await t.test('buffered with no orchestrator, kept across a restart, replayed in order exactly once', async (t) => {
    const first = await startTestRelay(t, db.url);
    const bodies = Array.from({ length: 6 }, (_, i) => `{"seq": ${i}, "pad": "${'é'.repeat(i)}"}`);
    for (const [i, body] of bodies.entries()) {
      const res = await sendWebhook(first.url, 'acme', { body, delivery: `buf-${i}` });
      t.equal(res.status, 200);
      t.same(res.json, { status: 'buffered' });
    }
    let text = await (await fetch(`${first.url}/metrics`)).text();
    t.equal(metricValue(text, 'svc_relay_buffered'), 6);
    await first.stop();

    const second = await startTestRelay(t, db.url);
    text = await (await fetch(`${second.url}/metrics`)).text();
    t.equal(metricValue(text, 'svc_relay_buffered'), 6, 'counters reloaded from the table');
    const o = await fakeOrchestrator(t, second.url, token);
    await until(() => o.received.length >= 6, 60_000, 'replay');
    await until(async () => (await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer`)) === 0, 60_000, 'buffer drained');
    // A live webhook after the drain: its frame follows any replay on the one socket, so once it
    // is acked a replay sent twice would have arrived.
    t.same((await sendWebhook(second.url, 'acme', { delivery: 'after-replay' })).json, { status: 'accepted' });
    t.equal(o.received.at(-1)?.deliveryId, 'after-replay');
    const replayed = o.received.slice(0, -1);
    t.same(
      replayed.map((d) => d.deliveryId),
      bodies.map((_, i) => `buf-${i}`),
      'arrival order, each once',
    );
    t.ok(replayed.every((d) => d.replay), 'marked as replays');
    t.same(
      replayed.map((d) => Buffer.from(d.bodyBase64, 'base64').toString('utf8')),
      bodies,
      'exact bytes',
    );
    const log = await db.pool.any(sqlTyped(LogRow)`select delivery_id, outcome, routing_key from relay_delivery_log where delivery_id like 'buf-%' order by id`);
    t.equal(log.length, 6);
    t.ok(log.every((l) => l.outcome === 'replayed_accepted' && l.routing_key === 'github:100'));
    text = await (await fetch(`${second.url}/metrics`)).text();
    t.equal(metricValue(text, 'svc_relay_buffered'), 0);
  });

  await t.test('shed during replay keeps the delivery; a later connection gets it', async (t) => {
    const r = await startTestRelay(t, db.url, { replayIntervalMs: 100 });
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'shed-1' })).json, { status: 'buffered' });
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'shed-2' })).json, { status: 'buffered' });
    const shedder = await fakeOrchestrator(t, r.url, token, { onDelivery: () => ({ result: 'shed_retry_later', retryAfterSeconds: 30 }) });
    await until(() => shedder.received.length >= 1, 60_000, 'first replay');
    // The pass that was shed ends, then a whole pass after it (they tick every 100 ms).
    await replayPassesAfter(r.url, 2);
    t.equal(shedder.received.length, 1, 'replay paused after a shed; order kept');
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer where delivery_id like 'shed-%'`), 2, 'both kept');
    await shedder.close();

    const r2 = await startTestRelay(t, db.url, { replayIntervalMs: 100 });
    await r.stop();
    const taker = await fakeOrchestrator(t, r2.url, token);
    await until(() => taker.received.length >= 2, 60_000, 'replay to the new orchestrator');
    t.same(taker.received.map((d) => d.deliveryId), ['shed-1', 'shed-2']);
  });

  await t.test('a hung orchestrator during replay: the delivery stays and goes to the next one', async (t) => {
    const r = await startTestRelay(t, db.url, { ackTimeoutMs: 200, replayIntervalMs: 100 });
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'hung-1' })).json, { status: 'buffered' });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    t.teardown(() => release());
    const hung = await fakeOrchestrator(t, r.url, token, { id: 'hung', onDelivery: async () => (await released, { result: 'accepted' }) });
    await until(() => hung.received.length >= 1, 60_000, 'offered to the hung one');
    await hung.close();
    const good = await fakeOrchestrator(t, r.url, token, { id: 'good' });
    await until(() => good.received.length >= 1, 60_000, 'offered to the good one');
    t.equal(good.received[0]!.deliveryId, 'hung-1');
    await until(async () => (await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer where delivery_id = 'hung-1'`)) === 0, 60_000, 'removed after the ack');
  });

  await t.test('expired deliveries are dropped, logged and counted', async (t) => {
    const r = await startTestRelay(t, db.url, { env: { SVC_RELAY_BUFFER_TTL_MS: '150' } });
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'old-1' })).json, { status: 'buffered' });
    await until(async () => (await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer where delivery_id = 'old-1' and expires_at <= now()`)) === 1, 60_000, 'past its 150 ms TTL');
    t.equal(await r.relay.sweepExpired(), 1);
    const log = await db.pool.any(sqlTyped(LogRow)`select delivery_id, outcome, routing_key from relay_delivery_log where delivery_id = 'old-1'`);
    t.same(log, [{ delivery_id: 'old-1', outcome: 'expired', routing_key: 'github:100' }]);
    const text = await (await fetch(`${r.url}/metrics`)).text();
    t.equal(metricValue(text, 'svc_relay_buffer_expired_total'), 1);
    t.equal(metricValue(text, 'svc_relay_buffered'), 0);
    const passes = await replayPasses(r.url);
    const o = await fakeOrchestrator(t, r.url, token);
    // The pass its connection started has ended.
    await replayPassesAfter(r.url, 1, passes);
    t.equal(o.received.length, 0, 'an expired delivery is never replayed');
  });

  await t.test('buffer budget exhausted: 503 with Retry-After 5, nothing written', async (t) => {
    const r = await startTestRelay(t, db.url, { env: { SVC_RELAY_BUFFER_MAX_ITEMS: '2' } });
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'b1' })).json, { status: 'buffered' });
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'b2' })).json, { status: 'buffered' });
    const full = await sendWebhook(r.url, 'acme', { delivery: 'b3' });
    t.equal(full.status, 503);
    t.equal(full.headers.get('retry-after'), '5');
    t.equal(full.json.error.code, 'SVC_ERR_WEBHOOK_BUFFER_FULL');
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer where delivery_id = 'b3'`), 0);
    // Refused, so not a duplicate later: once there is room it is taken.
    const o = await fakeOrchestrator(t, r.url, token);
    await until(() => o.received.length >= 2, 60_000, 'drain');
    const retried = await sendWebhook(r.url, 'acme', { delivery: 'b3' });
    t.same(retried.json, { status: 'accepted' });

    const bytes = await startTestRelay(t, db.url, { env: { SVC_RELAY_BUFFER_MAX_BYTES: '100' } });
    await o.close();
    t.same((await sendWebhook(bytes.url, 'acme', { body: JSON.stringify({ p: 'x'.repeat(60) }) })).json, { status: 'buffered' });
    const over = await sendWebhook(bytes.url, 'acme', { body: JSON.stringify({ p: 'y'.repeat(60) }) });
    t.equal(over.status, 503, 'byte budget');
    t.equal(over.headers.get('retry-after'), '5');
  });

  await t.test('a delivery in flight when the relay stops is buffered, not lost', async (t) => {
    const r = await startTestRelay(t, db.url, { ackTimeoutMs: 5_000, totalBudgetMs: 8_000 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    t.teardown(() => release());
    const hung = await fakeOrchestrator(t, r.url, token, { onDelivery: async () => (await released, { result: 'accepted' }) });
    const pending = sendWebhook(r.url, 'acme', { delivery: 'inflight-1' });
    await until(() => hung.received.length >= 1, 60_000, 'delivery offered');
    const stopping = r.stop();
    const res = await pending;
    await stopping;
    t.equal(res.status, 200);
    t.same(res.json, { status: 'buffered' });
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer where delivery_id = 'inflight-1'`), 1);
  });
});
