// The orchestrator's relay link against the real relay: hello and welcome, acks for every
// delivery, error mapping, one onDelivery per delivery id in flight, redial after the relay
// restarts with sources re-registered, and a clean close.
import net from 'node:net';
import t from 'tap';
import { eachDatabase } from '../../../fixtures/db.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { InputError, UnavailableError } from '../../../../core/errors.ts';
import { testCode } from '../../../fixtures/error-codes.ts';
import { ackForError, connectRelay } from '../../../../kernel/orchestrator/relay-link/index.ts';
import { fakeOrchestrator, githubSource, newOrg, quietLogger, sendWebhook, startTestRelay, until } from '../../relay/harness.ts';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

t.test('error mapping', async (t) => {
  t.same(ackForError(new UnavailableError(testCode('SVC_ERR_TEST_X'), 'db down')), { result: 'shed_retry_later', retryAfterSeconds: 5, message: 'db down' });
  t.same(ackForError(new Error('boom')), { result: 'shed_retry_later', retryAfterSeconds: 5, message: 'boom' });
  t.same(ackForError(new InputError(testCode('SVC_ERR_TEST_Y'), 'no secret')), { result: 'rejected_misconfigured', message: 'no secret' });
  t.equal(ackForError(new Error('x'.repeat(5000))).message?.length, 1000);
});

await eachDatabase(t, async (t, db) => {
  const token = await newOrg(db.pool, 'acme');

  await t.test('onDelivery failures and bad results become valid acks', async (t) => {
    const r = await startTestRelay(t, db.url);
    await fakeOrchestrator(t, r.url, token, {
      onDelivery: (d) => {
        const c = JSON.parse(Buffer.from(d.bodyBase64, 'base64').toString()).case;
        if (c === 'unavailable') throw new UnavailableError('SVC_ERR_DB_UNAVAILABLE', 'database is down');
        if (c === 'input') throw new InputError(testCode('SVC_ERR_TEST_SOURCE_CONFIG'), 'source has no secret');
        if (c === 'crash') throw new TypeError('undefined is not a function');
        if (c === 'bogus') return { result: 'maybe' as never };
        if (c === 'retry') return { result: 'shed_retry_later', retryAfterSeconds: 99_999, message: 'm'.repeat(3000) };
        return { result: 'accepted' };
      },
    });
    const send = (c: string) => sendWebhook(r.url, 'acme', { body: JSON.stringify({ case: c }) });
    const unavailable = await send('unavailable');
    t.equal(unavailable.status, 429);
    t.equal(unavailable.headers.get('retry-after'), '5');
    t.equal(unavailable.json.error.message, 'database is down');
    const input = await send('input');
    t.equal(input.status, 500);
    t.equal(input.json.error.message, 'source has no secret');
    t.equal((await send('crash')).status, 429, 'an unexpected error is treated as transient');
    t.equal((await send('bogus')).status, 429, 'an invalid result is never sent as is');
    const retry = await send('retry');
    t.equal(retry.status, 429);
    t.equal(retry.headers.get('retry-after'), '3600', 'clamped to the contract');
    t.equal(retry.json.error.message.length, 1000);
    t.equal((await send('ok')).status, 200);
  });

  await t.test('one onDelivery per delivery id in flight, even when the relay offers it twice', async (t) => {
    // The live attempt gives up after 300 ms (total budget); the replay waits up to 5 minutes for
    // its ack (a replay that timed out would be offered again once the first call had ended).
    const r = await startTestRelay(t, db.url, { ackTimeoutMs: 300_000, totalBudgetMs: 300, replayIntervalMs: 50 });
    let calls = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    t.teardown(() => release());
    const o = await fakeOrchestrator(t, r.url, token, {
      onDelivery: async () => {
        calls += 1;
        await released;
        return { result: 'accepted' };
      },
    });
    const res = await sendWebhook(r.url, 'acme', { delivery: 'slow-1' });
    t.same(res.json, { status: 'buffered' }, 'the live attempt ran out of time');
    // The replay reached the link while the first call still runs, and joined it.
    await until(() => o.link.joinedDeliveries >= 1, 60_000, 'the replay joined the delivery in flight');
    t.equal(calls, 1, 'the joined replay did not call onDelivery');
    release();
    await until(async () => (await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer where delivery_id = 'slow-1'`)) === 0, 60_000, 'replay acked');
    t.equal(calls, 1, 'the replay joined the delivery already in flight');
  });

  await t.test('redials after a relay restart and re-registers its sources', async (t) => {
    const port = await freePort();
    const env = { SVC_RELAY_PORT: String(port) };
    const first = await startTestRelay(t, db.url, { env });
    const o = await fakeOrchestrator(t, first.url, token, { sources: [githubSource('100')] });
    o.link.registerSource(githubSource('500'));
    // Applied by the relay in the socket's order, soon: wait for it rather than a fixed time (loaded machines).
    await until(async () => (await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_sources where routing_key = 'github:500'`)) === 1, 60_000, 'source registered');
    t.pass('registered through the link');
    await first.stop();
    await until(() => !o.link.connected, 60_000, 'link notices');
    // Forget the routing table: only the link's hello can bring it back.
    await db.pool.query(sql.unsafe`delete from relay_sources where org_id = 'acme'`);
    const second = await startTestRelay(t, db.url, { env });
    await o.link.waitConnected(60_000);
    t.ok(o.link.connected);
    await until(async () => (await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_sources where org_id = 'acme'`)) === 2, 60_000, 'sources back');
    t.same((await sendWebhook(second.url, 'acme', { target: '500' })).json, { status: 'accepted' });
    t.equal(o.received.at(-1)?.routingKey, 'github:500');

    // Deregistration while disconnected is sent after the next welcome.
    await second.stop();
    await until(() => !o.link.connected, 60_000, 'link notices again');
    o.link.deregisterSource('github:500');
    const third = await startTestRelay(t, db.url, { env });
    await o.link.waitConnected(60_000);
    await until(async () => (await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_sources where routing_key = 'github:500'`)) === 0, 60_000, 'deregistered');
    await o.close();
    t.notOk(o.link.connected);
    t.notOk(o.link.redialScheduled, 'closed for good: no redial is scheduled (only a scheduled redial dials)');
    await until(async () => /svc_relay_orchestrators_connected 0/.test(await (await fetch(`${third.url}/metrics`)).text()), 60_000, 'the relay dropped the link');
    t.notOk(o.link.redialScheduled, 'still none');
  });

  await t.test('a bad token never connects', async (t) => {
    const r = await startTestRelay(t, db.url);
    const link = connectRelay({
      platformUrl: r.url,
      platformToken: 'svcp_not-a-token',
      orchestratorId: 'x',
      sources: () => [],
      onDelivery: async () => ({ result: 'accepted' }),
      logger: quietLogger,
      minReconnectDelayMs: 20,
      maxReconnectDelayMs: 100,
    });
    t.teardown(() => link.close());
    await t.rejects(link.waitConnected(400), { code: 'SVC_ERR_RELAY_LINK_TIMEOUT' });
    t.notOk(link.connected);
    await link.close();
    await t.rejects(link.waitConnected(100), { code: 'SVC_ERR_RELAY_LINK_CLOSED' });
  });
});
