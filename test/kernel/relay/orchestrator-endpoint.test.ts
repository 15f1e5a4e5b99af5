// The orchestrator WebSocket endpoint over real sockets: token check before the handshake,
// hello and protocol floor, frame validation that never crashes the relay, source registration
// persisted without secrets, heartbeats, and the run index.
import t from 'tap';
import WebSocket from 'ws';
import { Type } from 'typebox';
import { eachDatabase } from '../../fixtures/db.ts';
import { sql, sqlTyped } from '../../../kernel/services/db/index.ts';
import { PROTOCOL_VERSION, WS_CLOSE_PROTOCOL_ERROR } from '../../../schemas/wire/relay.ts';
import { fakeOrchestrator, githubSource, newOrg, sendWebhook, startTestRelay, until } from './harness.ts';

const wsUrl = (url: string) => `${url.replace(/^http/, 'ws')}/v1/orchestrators/connect`;

function rawSocket(url: string, token?: string): WebSocket {
  return new WebSocket(wsUrl(url), token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
}

function refusedStatus(ws: WebSocket): Promise<number> {
  return new Promise((resolve, reject) => {
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => reject(new Error('upgrade should have been refused')));
    ws.on('error', () => undefined);
  });
}

function closeOf(ws: WebSocket): Promise<{ code: number; reason: string }> {
  return new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
}

const hello = (extra: Record<string, unknown> = {}) => JSON.stringify({ type: 'orchestrator.hello', protocolVersion: PROTOCOL_VERSION, orchestratorId: 'raw', sources: [], ...extra });

await eachDatabase(t, async (t, db) => {
  const token = await newOrg(db.pool, 'acme');

  await t.test('tokens are checked before the upgrade', async (t) => {
    const r = await startTestRelay(t, db.url);
    t.equal(await refusedStatus(rawSocket(r.url)), 401, 'no token');
    t.equal(await refusedStatus(rawSocket(r.url, 'svcp_wrong')), 401, 'bad token');
    t.equal(await refusedStatus(rawSocket(r.url, 'x'.repeat(2000))), 401, 'absurd token');
    t.equal(await refusedStatus(new WebSocket(`${r.url.replace(/^http/, 'ws')}/v1/elsewhere`, { headers: { authorization: `Bearer ${token}` } })), 404, 'other paths');
    const ok = rawSocket(r.url, token);
    await new Promise((resolve) => ok.on('open', resolve));
    ok.close();
  });

  await t.test('protocol version 2 and a non-hello first frame are closed with 1002', async (t) => {
    const r = await startTestRelay(t, db.url);
    const v2 = rawSocket(r.url, token);
    v2.on('open', () => v2.send(hello({ protocolVersion: 2 })));
    const closed = await closeOf(v2);
    t.equal(closed.code, WS_CLOSE_PROTOCOL_ERROR);
    t.match(closed.reason, /protocol version 2 is below the minimum 3/);

    // One version behind ours (an orchestrator not upgraded yet) is still welcomed: the floor is 3.
    const v3 = rawSocket(r.url, token);
    v3.on('open', () => v3.send(hello({ protocolVersion: 3, orchestratorId: 'v3' })));
    const welcomed = await new Promise<any>((resolve) => v3.once('message', (m) => resolve(JSON.parse(m.toString()))));
    t.match(welcomed, { type: 'relay.welcome', protocolVersion: PROTOCOL_VERSION }, 'protocol 3 is welcomed');
    v3.close();

    const wrongFirst = rawSocket(r.url, token);
    wrongFirst.on('open', () => wrongFirst.send(JSON.stringify({ type: 'source.deregister', routingKey: 'github:1' })));
    t.equal((await closeOf(wrongFirst)).code, WS_CLOSE_PROTOCOL_ERROR);

    const garbage = rawSocket(r.url, token);
    garbage.on('open', () => garbage.send('not json at all'));
    t.equal((await closeOf(garbage)).code, WS_CLOSE_PROTOCOL_ERROR);

    const extraField = rawSocket(r.url, token);
    extraField.on('open', () => extraField.send(hello({ secret: 'x' })));
    t.equal((await closeOf(extraField)).code, WS_CLOSE_PROTOCOL_ERROR, 'strict hello');

    // The link itself announcing version 2 is refused the same way and never connects.
    const { connectRelay } = await import('../../../kernel/orchestrator/relay-link/index.ts');
    const { quietLogger } = await import('./harness.ts');
    const old = connectRelay({ platformUrl: r.url, platformToken: token, orchestratorId: 'old', sources: () => [], onDelivery: async () => ({ result: 'accepted' }), logger: quietLogger, protocolVersion: 2, minReconnectDelayMs: 50, maxReconnectDelayMs: 100 });
    t.teardown(() => old.close());
    // Two of its dials refused (a dial starts only once the last ended), not a fixed wait.
    await until(() => old.dials >= 3, 60_000, 'two refused dials');
    t.notOk(old.connected, 'never connected');
    await t.rejects(old.waitConnected(1), { code: 'SVC_ERR_RELAY_LINK_TIMEOUT' });
  });

  await t.test('no hello in time: closed', async (t) => {
    const r = await startTestRelay(t, db.url, { helloTimeoutMs: 200 });
    const silent = rawSocket(r.url, token);
    t.equal((await closeOf(silent)).code, WS_CLOSE_PROTOCOL_ERROR);
  });

  await t.test('invalid frames are refused and logged, never a crash; repeated abuse closes the socket', async (t) => {
    const r = await startTestRelay(t, db.url, { maxInvalidFrames: 5 });
    const good = await fakeOrchestrator(t, r.url, token);
    const bad = rawSocket(r.url, token);
    await new Promise((resolve) => bad.on('open', resolve));
    bad.send(hello({ sources: [githubSource('100')] }));
    const welcome = await new Promise<any>((resolve) => bad.once('message', (m) => resolve(JSON.parse(m.toString()))));
    t.same(welcome, { type: 'relay.welcome', protocolVersion: PROTOCOL_VERSION, orgId: 'acme', buffered: 0 });
    const closed = closeOf(bad);
    bad.send('{ not json');
    bad.send(JSON.stringify({ type: 'nope' }));
    bad.send(JSON.stringify({ type: 'webhook.ack', deliveryRef: 'x', result: 'accepted', extra: 1 }));
    bad.send(JSON.stringify({ type: 'webhook.ack', deliveryRef: 'x', result: 'maybe' }));
    bad.send(Buffer.from([1, 2, 3]), { binary: true });
    bad.send(JSON.stringify(['array']));
    bad.send(hello());
    const c = await closed;
    t.equal(c.code, WS_CLOSE_PROTOCOL_ERROR);
    t.match(c.reason, /too many refused frames/);
    const text = await (await fetch(`${r.url}/metrics`)).text();
    t.match(text, /svc_relay_frames_refused_total\{reason="schema"\} [1-9]/);
    // The relay still serves.
    const res = await sendWebhook(r.url, 'acme');
    t.same(res.json, { status: 'accepted' });
    t.ok(good.received.length >= 1);
    // A late or unknown ack is ignored.
    const late = rawSocket(r.url, token);
    await new Promise((resolve) => late.on('open', resolve));
    late.send(hello());
    await new Promise((resolve) => late.once('message', resolve));
    late.send(JSON.stringify({ type: 'webhook.ack', deliveryRef: 'never-sent', result: 'accepted' }));
    // A ping after it: the relay answers once it has handled the ack (frames in order), unless it closed the socket.
    await new Promise((resolve) => {
      late.once('pong', resolve);
      late.once('close', resolve);
      late.ping();
    });
    t.equal(late.readyState, WebSocket.OPEN);
    late.close();
  });

  await t.test('sources are persisted with metadata only; deregistration removes them', async (t) => {
    const r = await startTestRelay(t, db.url);
    const o = await fakeOrchestrator(t, r.url, token, { sources: [githubSource('100'), { routingKey: 'generic:hooks', providerKind: 'generic', sourceId: 'hooks', maxPayloadBytes: 1000, rateLimitRpm: 60 }] });
    o.link.send({ type: 'source.secrets', routingKey: 'github:100', signatureMode: 'hmac', rotating: true });
    o.link.registerSource(githubSource('300'));
    const Row = Type.Object({ routing_key: Type.String(), signature_mode: Type.Union([Type.String(), Type.Null()]), rotating: Type.Union([Type.Boolean(), Type.Null()]), max_payload_bytes: Type.Union([Type.Number(), Type.Null()]) });
    const readRows = () => db.pool.any(sqlTyped(Row)`select routing_key, signature_mode, rotating, max_payload_bytes from relay_sources where org_id = 'acme' order by routing_key`);
    // The relay applies the frames on its own time (a busy machine can take far longer than any
    // fixed sleep): wait for their effect, bounded, then assert it.
    let rows = await readRows();
    await until(async () => {
      rows = await readRows();
      return rows.length === 3 && rows.some((x) => x.routing_key === 'github:100' && x.signature_mode !== null);
    }, 60_000, 'the registration and signature metadata to be persisted');
    t.same(rows.map((x) => x.routing_key), ['generic:hooks', 'github:100', 'github:300']);
    t.same(rows.find((x) => x.routing_key === 'github:100'), { routing_key: 'github:100', signature_mode: 'hmac', rotating: true, max_payload_bytes: null });
    t.equal(rows.find((x) => x.routing_key === 'generic:hooks')?.max_payload_bytes, 1000);
    // Memory follows the commit: the same bound for the webhook answer.
    let status = 0;
    await until(async () => (status = (await sendWebhook(r.url, 'acme', { target: '300' })).status) === 200, 60_000, 'github:300 to be served');
    t.equal(status, 200);

    o.link.deregisterSource('github:300');
    await until(async () => !(await readRows()).some((x) => x.routing_key === 'github:300'), 60_000, 'the deregistration to be persisted');
    // Memory follows the delete's commit: the webhook answer turns to 404 within the same bound.
    await until(async () => (status = (await sendWebhook(r.url, 'acme', { target: '300' })).status) === 404, 60_000, 'github:300 to be unknown');
    t.equal(status, 404);
    const columns = await db.pool.anyFirst(sql.unsafe`select column_name from information_schema.columns where table_name = 'relay_sources'`);
    t.notOk(columns.some((c) => /secret$|^secret|key_material|token/.test(String(c))), 'no column can hold a secret');
  });

  await t.test('run index from execution.status and job.status.forward', async (t) => {
    const r = await startTestRelay(t, db.url);
    const o = await fakeOrchestrator(t, r.url, token);
    o.link.send({ type: 'execution.status', runId: 'run-1', workflow: 'ci', repository: 'acme/app', status: 'running', updatedAt: '2026-01-01T00:00:02Z' });
    o.link.send({ type: 'execution.status', runId: 'run-1', workflow: 'ci', repository: 'acme/app', status: 'queued', updatedAt: '2026-01-01T00:00:01Z' });
    o.link.send({ type: 'job.status.forward', runId: 'run-1', jobId: 'job-1', job: 'build', status: 'completed', updatedAt: '2026-01-01T00:00:03Z' });
    await until(async () => (await db.pool.maybeOneFirst(sql.unsafe`select status from relay_jobs where job_id = 'job-1'`)) === 'completed', 60_000, 'job row');
    t.equal(await db.pool.oneFirst(sql.unsafe`select status from relay_runs where run_id = 'run-1'`), 'running', 'an older update does not overwrite');
  });

  await t.test('a dead socket leaves the pool at the next heartbeat', async (t) => {
    const r = await startTestRelay(t, db.url, { heartbeatMs: 100, replayIntervalMs: 60_000, ackTimeoutMs: 3_600_000, totalBudgetMs: 3_600_000 });
    const dead = rawSocket(r.url, token);
    await new Promise((resolve) => dead.on('open', resolve));
    dead.send(hello({ sources: [githubSource('100')] }));
    await new Promise((resolve) => dead.once('message', resolve));
    // Stop answering pings (and everything else) without closing the TCP connection.
    (dead as unknown as { _socket: { pause(): void } })._socket.pause();
    // Two missed beats (100 ms each) drop it; on a busy machine the timers may come later.
    await until(async () => /^svc_relay_orchestrators_connected 0$/m.test(await (await fetch(`${r.url}/metrics`)).text()), 60_000, 'the dead socket dropped');
    const started = Date.now();
    const res = await sendWebhook(r.url, 'acme');
    t.same(res.json, { status: 'buffered' });
    t.ok(Date.now() - started < 300_000, 'hang guard: no wait on a dead candidate (ack timeout and budget are an hour)');
    dead.terminate();
  });
});
