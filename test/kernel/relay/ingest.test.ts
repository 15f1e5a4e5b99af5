// Webhook ingest against a real relay on 127.0.0.1, real orchestrator links and real PostgreSQL:
// one test per row of the spec's "Webhook ingest status codes" table, plus exact bytes.
import http from 'node:http';
import t from 'tap';
import { eachDatabase } from '../../fixtures/db.ts';
import { MAX_WEBHOOK_BYTES, realAckTimer, type AckTimer } from '../../../kernel/relay/index.ts';
import { fakeOrchestrator, githubSource, newOrg, sendWebhook, startTestRelay, uniqueId, until } from './harness.ts';

function metricValue(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

await eachDatabase(t, async (t, db) => {
  const token = await newOrg(db.pool, 'acme');

  await t.test('accepted: 200, exact body bytes and headers reach the orchestrator', async (t) => {
    const r = await startTestRelay(t, db.url);
    const o = await fakeOrchestrator(t, r.url, token);
    const body = '{ "héllo" :\t"wörld 🚀",\r\n  "n":  1.50 }  \n';
    const res = await sendWebhook(r.url, 'acme', { body, delivery: 'del-1', event: 'pull_request', headers: { 'x-hub-signature-256': 'sha256=abc' } });
    t.equal(res.status, 200);
    t.same(res.json, { status: 'accepted' });
    t.equal(o.received.length, 1);
    const d = o.received[0]!;
    t.ok(Buffer.from(d.bodyBase64, 'base64').equals(Buffer.from(body, 'utf8')), 'identical bytes');
    t.equal(d.deliveryId, 'del-1');
    t.equal(d.routingKey, 'github:100');
    t.equal(d.providerKind, 'github');
    t.equal(d.orgId, 'acme');
    t.equal(d.replay, false);
    t.equal(d.headers['x-hub-signature-256'], 'sha256=abc');
    t.equal(d.headers['x-provider-event'], 'pull_request');
    t.notOk('host' in d.headers || 'content-length' in d.headers || 'connection' in d.headers, 'hop-by-hop headers dropped');
    t.equal(d.clientIp, '127.0.0.1');

    // GitHub's real header names; a non-JSON body passes untouched.
    const raw = Buffer.from([0x00, 0xff, 0x7b, 0x0a, 0xc3]);
    const gh = await fetch(`${r.url}/webhook/acme/github`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', 'x-github-hook-installation-target-id': '100', 'x-github-delivery': 'gh-1', 'x-github-event': 'push' },
      body: raw,
    });
    t.equal(gh.status, 200);
    const d2 = o.received[1]!;
    t.equal(d2.deliveryId, 'gh-1');
    t.ok(Buffer.from(d2.bodyBase64, 'base64').equals(raw));
    const text = await (await fetch(`${r.url}/metrics`)).text();
    t.equal(metricValue(text, 'svc_relay_webhooks_total', '{outcome="accepted"}'), 2);
  });

  await t.test('ack results map to statuses', async (t) => {
    const r = await startTestRelay(t, db.url);
    const script: Record<string, { result: any; retryAfterSeconds?: number; message?: string }> = {
      sig: { result: 'rejected_signature', message: 'signature mismatch' },
      unknown: { result: 'rejected_unknown_source' },
      misconf: { result: 'rejected_misconfigured', message: 'no secret configured' },
      shed: { result: 'shed_retry_later', retryAfterSeconds: 42 },
      shed2: { result: 'shed_retry_later' },
      dup: { result: 'duplicate' },
    };
    const o = await fakeOrchestrator(t, r.url, token, {
      sources: [githubSource('100'), githubSource('200')],
      onDelivery: (d) => script[JSON.parse(Buffer.from(d.bodyBase64, 'base64').toString()).case] ?? { result: 'accepted' },
    });
    const send = (c: string, target = '100') => sendWebhook(r.url, 'acme', { body: JSON.stringify({ case: c, n: uniqueId() }), target });

    const sig = await send('sig');
    t.equal(sig.status, 401);
    t.same(sig.json, { error: { code: 'SVC_ERR_WEBHOOK_SIGNATURE_REJECTED', message: 'signature mismatch' } });
    const misconf = await send('misconf');
    t.equal(misconf.status, 500);
    t.equal(misconf.json.error.code, 'SVC_ERR_WEBHOOK_SOURCE_MISCONFIGURED');
    t.equal(misconf.json.error.message, 'no secret configured');
    const shed = await send('shed');
    t.equal(shed.status, 429);
    t.equal(shed.headers.get('retry-after'), '42');
    t.equal(shed.json.error.code, 'SVC_ERR_WEBHOOK_SHED');
    const shed2 = await send('shed2');
    t.equal(shed2.status, 429);
    t.equal(shed2.headers.get('retry-after'), '10', 'default retry hint');
    const dup = await send('dup');
    t.equal(dup.status, 200);
    t.same(dup.json, { status: 'duplicate' });

    const unknown = await send('unknown', '200');
    t.equal(unknown.status, 404);
    t.equal(unknown.json.error.code, 'SVC_ERR_WEBHOOK_UNKNOWN_SOURCE');
    const seen = o.received.length;
    const cached = await send('anything', '200');
    t.equal(cached.status, 404, 'negative cache answers');
    t.equal(o.received.length, seen, 'negative-cache hit never reaches the orchestrator');
    const other = await send('ok', '100');
    t.equal(other.status, 200, 'other routing keys are unaffected');

    // A registration clears the org's negative entries.
    // The relay handles the frame on its own time: poll the observable effect, never a fixed sleep.
    o.link.registerSource(githubSource('200'));
    let again = 0;
    await until(async () => (again = (await send('ok', '200')).status) === 200, 20_000, 'the registration to clear the negative cache');
    t.equal(again, 200);
  });

  await t.test('unknown org, unknown routing key, bad paths: 404 with the negative cache primed', async (t) => {
    const r = await startTestRelay(t, db.url);
    const o = await fakeOrchestrator(t, r.url, token);
    const none = await sendWebhook(r.url, 'no-such-org');
    t.equal(none.status, 404);
    t.equal(none.json.error.code, 'SVC_ERR_WEBHOOK_UNKNOWN_ORG');
    const miss = await sendWebhook(r.url, 'acme', { target: '999' });
    t.equal(miss.status, 404);
    t.equal(miss.json.error.code, 'SVC_ERR_WEBHOOK_UNKNOWN_SOURCE');
    const noTarget = await sendWebhook(r.url, 'acme', { target: '' });
    t.equal(noTarget.status, 404);
    const badKind = await sendWebhook(r.url, 'acme', { kind: 'GitHub!' });
    t.equal(badKind.status, 404);
    const genericNoSource = await sendWebhook(r.url, 'acme', { kind: 'generic' });
    t.equal(genericNoSource.status, 404);
    t.equal(o.received.length, 0, 'nothing relayed');
    const text = await (await fetch(`${r.url}/metrics`)).text();
    t.ok(metricValue(text, 'svc_relay_webhooks_total', '{outcome="unknown_source"}') >= 3);
  });

  await t.test('generic sources: routing key generic:<source_id>, generated delivery id, per-source limits', async (t) => {
    const r = await startTestRelay(t, db.url);
    const o = await fakeOrchestrator(t, r.url, token, {
      sources: [
        { routingKey: 'generic:alerts', providerKind: 'generic', sourceId: 'alerts', maxPayloadBytes: 64, rateLimitRpm: 3 },
        { routingKey: 'generic:bulk', providerKind: 'generic', sourceId: 'bulk' },
      ],
    });
    const post = (source: string, body: string, headers: Record<string, string> = {}) =>
      fetch(`${r.url}/webhook/acme/generic/${source}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const ok = await post('alerts', '{"a":1}');
    t.equal(ok.status, 200);
    const d = o.received[0]!;
    t.equal(d.routingKey, 'generic:alerts');
    t.equal(d.sourceId, 'alerts');
    t.equal(d.providerKind, 'generic');
    t.match(d.deliveryId, /^[0-9a-f-]{36}$/, 'generated UUID');
    const withId = await post('alerts', '{"a":2}', { 'idempotency-key': 'key-1' });
    t.equal(withId.status, 200);
    t.equal(o.received[1]!.deliveryId, 'key-1');
    const tooBig = await post('alerts', JSON.stringify({ pad: 'x'.repeat(100) }));
    t.equal(tooBig.status, 413, "over the source's maxPayloadBytes");
    const limited = await post('alerts', '{"a":3}');
    t.equal(limited.status, 429, 'source rateLimitRpm (3 per minute) spent');
    t.ok(Number(limited.headers.get('retry-after')) >= 1);
    t.equal((await post('bulk', '{"a":3}')).status, 200, 'another source is not limited');
    t.equal((await post('nope', '{}')).status, 404);
  });

  await t.test('body size: 25 MiB passes, one byte more is 413 (declared and streamed)', async (t) => {
    const r = await startTestRelay(t, db.url);
    const o = await fakeOrchestrator(t, r.url, token);
    const exact = Buffer.alloc(MAX_WEBHOOK_BYTES, 0x61);
    const okRes = await sendWebhook(r.url, 'acme', { body: exact });
    t.equal(okRes.status, 200);
    t.equal(Buffer.from(o.received[0]!.bodyBase64, 'base64').length, MAX_WEBHOOK_BYTES);
    const over = await sendWebhook(r.url, 'acme', { body: Buffer.alloc(MAX_WEBHOOK_BYTES + 1, 0x61) });
    t.equal(over.status, 413);
    t.equal(over.json.error.code, 'SVC_ERR_WEBHOOK_BODY_TOO_LARGE');
    // Chunked: no Content-Length, so the limit is enforced while streaming.
    const chunk = Buffer.alloc(1024 * 1024, 0x62);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${r.url}/webhook/acme/github`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-provider-hook-installation-target-id': '100', 'x-provider-delivery': uniqueId(), 'transfer-encoding': 'chunked' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      let sent = 0;
      const pump = (): void => {
        while (sent < 26) {
          sent += 1;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    t.equal(status, 413);
    t.equal(o.received.length, 1, 'nothing over the limit relayed');
    const text = await (await fetch(`${r.url}/metrics`)).text();
    t.equal(metricValue(text, 'svc_relay_webhooks_total', '{outcome="too_large"}'), 2, 'declared and streamed refusals counted');
  });

  await t.test('duplicates inside the window are answered duplicate and not relayed', async (t) => {
    const r = await startTestRelay(t, db.url);
    let reject = true;
    const o = await fakeOrchestrator(t, r.url, token, {
      onDelivery: (d) => (d.deliveryId === 'flaky' && reject ? { result: 'rejected_signature' } : { result: 'accepted' }),
    });
    const first = await sendWebhook(r.url, 'acme', { delivery: 'same-id', body: '{"x":1}' });
    t.same(first.json, { status: 'accepted' });
    const again = await sendWebhook(r.url, 'acme', { delivery: 'same-id', body: '{"x":2}' });
    t.equal(again.status, 200);
    t.same(again.json, { status: 'duplicate' });
    const sameBody = await sendWebhook(r.url, 'acme', { delivery: 'other-id', body: '{"x":1}' });
    t.same(sameBody.json, { status: 'duplicate' }, 'identical body, same source');
    t.equal(o.received.length, 1, 'duplicates never relayed');

    // A refused delivery does not count as seen: its corrected retry goes through.
    const bad = await sendWebhook(r.url, 'acme', { delivery: 'flaky', body: '{"y":1}' });
    t.equal(bad.status, 401);
    reject = false;
    const retry = await sendWebhook(r.url, 'acme', { delivery: 'flaky', body: '{"y":1}' });
    t.same(retry.json, { status: 'accepted' });

    // Concurrent copies: one relayed, the other answered duplicate.
    const [a, b] = await Promise.all([sendWebhook(r.url, 'acme', { delivery: 'race' }), sendWebhook(r.url, 'acme', { delivery: 'race' })]);
    t.same([a.json.status, b.json.status].sort(), ['accepted', 'duplicate']);
  });

  await t.test('duplicate window expires', async (t) => {
    // The window's clock is the test's: moved past the 200 ms window, not waited out.
    let now = 1_000_000;
    const r = await startTestRelay(t, db.url, { dedupWindowMs: 200, dedupNow: () => now });
    const o = await fakeOrchestrator(t, r.url, token);
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'w', body: '{}' })).json, { status: 'accepted' });
    now += 200;
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'w', body: '{}' })).json, { status: 'duplicate' }, 'still inside the window');
    now += 1;
    t.same((await sendWebhook(r.url, 'acme', { delivery: 'w', body: '{}' })).json, { status: 'accepted' });
    t.equal(o.received.length, 2);
  });

  await t.test('candidate pool: a hanging candidate is passed over after the ack ceiling', async (t) => {
    // The ceiling's timer is injected: the hanging candidate's runs (300 ms, real); the good one's
    // never fires, so its ack need not beat 300 ms on a busy machine. Both are asked for the ceiling.
    const ceilings: Array<{ id: string; ms: number }> = [];
    const ackTimer: AckTimer = (ms, fire, id) => {
      ceilings.push({ id, ms });
      return id === 'hang' ? realAckTimer(ms, fire, id) : () => undefined;
    };
    const r = await startTestRelay(t, db.url, { ackTimeoutMs: 300, totalBudgetMs: 300_000, ackTimer });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    t.teardown(() => release());
    const hang = await fakeOrchestrator(t, r.url, token, { id: 'hang', onDelivery: async () => (await released, { result: 'accepted' }) });
    const good = await fakeOrchestrator(t, r.url, token, { id: 'good' });
    const times: number[] = [];
    for (let i = 0; i < 4; i++) {
      const started = Date.now();
      const res = await sendWebhook(r.url, 'acme');
      times.push(Date.now() - started);
      t.same(res.json, { status: 'accepted' }, `delivery ${i} accepted by the second candidate`);
    }
    t.ok(hang.received.length >= 1, 'the hanging candidate was tried');
    t.equal(good.received.length, 4, 'the good candidate took every delivery');
    t.ok(times.some((ms) => ms >= 300), 'a delivery waited out the ceiling before moving on');
    t.ok(ceilings.length >= 5 && ceilings.every((c) => c.ms === 300), 'every attempt was given the 300 ms ceiling');
  });

  await t.test('all candidates time out, or the budget is spent: buffered', async (t) => {
    const r = await startTestRelay(t, db.url, { ackTimeoutMs: 200, totalBudgetMs: 10_000, replayIntervalMs: 60_000 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    t.teardown(() => release());
    await fakeOrchestrator(t, r.url, token, { id: 'h1', onDelivery: async () => (await released, { result: 'accepted' }) });
    await fakeOrchestrator(t, r.url, token, { id: 'h2', onDelivery: async () => (await released, { result: 'accepted' }) });
    const started = Date.now();
    const res = await sendWebhook(r.url, 'acme');
    t.same(res.json, { status: 'buffered' });
    t.ok(Date.now() - started >= 400, 'both candidates tried');

    // An ack timeout of an hour: only the 300 ms budget can end the wait early.
    const ceilings: number[] = [];
    const ackTimer: AckTimer = (ms, fire, id) => (ceilings.push(ms), realAckTimer(ms, fire, id));
    const r2 = await startTestRelay(t, db.url, { ackTimeoutMs: 3_600_000, totalBudgetMs: 300, replayIntervalMs: 60_000, ackTimer });
    await fakeOrchestrator(t, r2.url, token, { id: 'h3', onDelivery: async () => (await released, { result: 'accepted' }) });
    const started2 = Date.now();
    const res2 = await sendWebhook(r2.url, 'acme');
    const took = Date.now() - started2;
    t.same(res2.json, { status: 'buffered' });
    // Replays of what the first relay buffered (its own ceiling: the hour, no budget) may go to h3 too.
    const budgeted = ceilings.filter((ms) => ms !== 3_600_000);
    // At most one attempt for the webhook (none when a busy machine spent the budget before it).
    t.ok(budgeted.length <= 1, `ceilings: ${ceilings.join(', ')}`);
    t.ok(budgeted.every((ms) => ms <= 300), 'the attempt was given what was left of the 300 ms budget, not the hour');
    t.ok(took < 300_000, `hang guard: the hour-long ack timeout did not run (${took} ms)`);
    const rows = await db.pool.any((await import('../../../kernel/services/db/index.ts')).sql.unsafe`select delivery_id from relay_buffer where org_id = 'acme'`);
    t.ok(rows.length >= 2, 'both committed to the buffer');
  });

  await t.test('rate limits: 429 + Retry-After, decided before the body is read', async (t) => {
    const r = await startTestRelay(t, db.url, { env: { SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '2' } });
    await fakeOrchestrator(t, r.url, token);
    t.equal((await sendWebhook(r.url, 'acme')).status, 200);
    t.equal((await sendWebhook(r.url, 'acme')).status, 200);
    // Declare 20 MiB, send 64 KiB, and wait: the answer must come without the rest.
    const declared = 20 * 1024 * 1024;
    const started = Date.now();
    const result = await new Promise<{ status: number; retryAfter: string | undefined; body: string }>((resolve, reject) => {
      const req = http.request(`${r.url}/webhook/acme/github`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(declared), 'x-provider-hook-installation-target-id': '100', 'x-provider-delivery': uniqueId() },
      });
      req.on('response', (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body }));
      });
      req.on('error', reject);
      req.write(Buffer.alloc(64 * 1024, 0x61));
    });
    t.equal(result.status, 429);
    t.ok(Number(result.retryAfter) >= 1, `Retry-After ${result.retryAfter}`);
    t.equal(JSON.parse(result.body).error.code, 'SVC_ERR_WEBHOOK_RATE_LIMITED');
    t.ok(Date.now() - started < 300_000, 'hang guard: answered without the body (which never comes)');

    const byIp = await startTestRelay(t, db.url, { env: { SVC_RELAY_RATE_LIMIT_PER_IP_RPM: '1' } });
    t.equal((await sendWebhook(byIp.url, 'acme')).status, 200, 'buffered (no orchestrator on this relay)');
    const limited = await sendWebhook(byIp.url, 'acme');
    t.equal(limited.status, 429);
    t.equal(limited.headers.get('retry-after'), '60');
    const unknownOrg = await sendWebhook(byIp.url, 'someone-else');
    t.equal(unknownOrg.status, 429, 'the per-IP limit covers every org');
  });

  await t.test('413 by Content-Length is answered before the body is read', async (t) => {
    const r = await startTestRelay(t, db.url);
    await fakeOrchestrator(t, r.url, token);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${r.url}/webhook/acme/github`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(MAX_WEBHOOK_BYTES + 10), 'x-provider-hook-installation-target-id': '100' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.write('{');
    });
    t.equal(status, 413);
  });
});
