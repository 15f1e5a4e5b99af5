// The front door on a real HTTP server (the kernel's server factory, real sockets) with an
// in-memory gate: admission before the body (size, limits, org, source), exact raw bytes to the
// handler, the source's own limits, answers from the status table, and errors other than the
// body limit left to the server's one error mapping.
import http from 'node:http';
import t from 'tap';
import { pino } from 'pino';
import { createHttpServer, listen } from '../../../kernel/services/http/index.ts';
import { webhookFrontDoor, type InboundWebhook, type WebhookAnswer, type WebhookSourceLimits } from '../../../kernel/webhook/front-door.ts';
import { MAX_WEBHOOK_BYTES } from '../../../kernel/webhook/parse-request.ts';
import { IngressLimiter } from '../../../kernel/webhook/rate-limiter.ts';
import { WEBHOOK_REFUSALS } from '../../../kernel/webhook/status-codes.ts';
import type { Test } from '../../fixtures/db.ts';
import { partialUpload as upload } from '../../fixtures/webhook-requests.ts';

const logger = pino({ level: 'silent' });

interface Door {
  url: string;
  seen: Array<InboundWebhook<WebhookSourceLimits>>;
  refused: string[];
  /** Called for every admitted webhook; default: accepted. */
  answer: (w: InboundWebhook<WebhookSourceLimits>) => WebhookAnswer | Promise<WebhookAnswer>;
}

async function startDoor(t: Test, limits: { perOrgRpm?: number; perIpRpm?: number; asyncGate?: boolean } = {}): Promise<Door> {
  const sources: Record<string, WebhookSourceLimits> = {
    'github:100': { routingKey: 'github:100' },
    'generic:small': { routingKey: 'generic:small', maxPayloadBytes: 16, rateLimitRpm: 3 },
  };
  const app = createHttpServer({ logger });
  const door: Door = { url: '', seen: [], refused: [], answer: () => ({ status: 200, body: { status: 'accepted' } }) };
  const sync = {
    hasOrg: (orgId: string) => orgId === 'acme',
    source: (orgId: string, routingKey: string) => (orgId === 'acme' ? sources[routingKey] : undefined),
  };
  await app.register(
    webhookFrontDoor({
      gate: limits.asyncGate ? { hasOrg: async (o) => sync.hasOrg(o), source: async (o, k) => sync.source(o, k) } : sync,
      limiter: new IngressLimiter({ perOrgRpm: limits.perOrgRpm ?? 1000, perIpRpm: limits.perIpRpm ?? 1000 }),
      handle: async (webhook) => {
        door.seen.push({ ...webhook });
        return door.answer(webhook);
      },
      onRefused: (refusal, limit) => door.refused.push(limit === undefined ? refusal : `${refusal}:${limit}`),
    }),
  );
  door.url = (await listen(app, { port: 0 })).url;
  t.teardown(() => app.close());
  return door;
}

const GITHUB_TARGET = { 'x-provider-hook-installation-target-id': '100' };
const partialUpload = async (url: string, path: string, declared: number, sent: number) => {
  const res = await upload(`${url}${path}`, declared, sent, GITHUB_TARGET);
  return { status: res.status, retryAfter: res.retryAfter ?? undefined, body: res.json };
};

async function post(url: string, path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: any }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-provider-hook-installation-target-id': '100', ...headers } });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text === '' ? null : JSON.parse(text) };
}

t.test('admitted: the handler gets the exact bytes, ids and routing key', async (t) => {
  const door = await startDoor(t);
  const body = Buffer.from([0x7b, 0x00, 0xff, 0x0a, 0xc3, 0x7d]);
  const res = await post(door.url, '/webhook/acme/github', body, { 'content-type': 'application/octet-stream', 'x-github-delivery': 'gh-1' });
  t.same([res.status, res.json], [200, { status: 'accepted' }]);
  const w = door.seen[0]!;
  t.ok(w.body.equals(body), 'identical bytes');
  t.same([w.orgId, w.providerKind, w.routingKey, w.sourceId, w.deliveryId, w.deliveryIdFromProvider], ['acme', 'github', 'github:100', undefined, 'gh-1', true]);
  const generic = await post(door.url, '/webhook/acme/generic/small', '{}');
  t.equal(generic.status, 200);
  const g = door.seen[1]!;
  t.same([g.providerKind, g.routingKey, g.sourceId, g.deliveryIdFromProvider], ['generic', 'generic:small', 'small', false]);
  t.match(g.deliveryId, /^[0-9a-f-]{36}$/);
});

t.test('refusals at the door: one status and code per row, nothing reaches the handler', async (t) => {
  for (const asyncGate of [false, true]) {
    const door = await startDoor(t, { asyncGate });
    const org = await post(door.url, '/webhook/nobody/github', '{}');
    t.same([org.status, org.json.error.code], [404, 'SVC_ERR_WEBHOOK_UNKNOWN_ORG']);
    const badOrg = await post(door.url, '/webhook/bad%20org/github', '{}');
    t.same([badOrg.status, badOrg.json.error.code], [404, 'SVC_ERR_WEBHOOK_UNKNOWN_ORG']);
    const source = await post(door.url, '/webhook/acme/github', '{}', { 'x-provider-hook-installation-target-id': '999' });
    t.same([source.status, source.json.error.code], [404, 'SVC_ERR_WEBHOOK_UNKNOWN_SOURCE']);
    for (const path of ['/webhook/acme/GitHub!', '/webhook/acme/generic', '/webhook/acme/generic/nope']) {
      const res = await post(door.url, path, '{}');
      t.same([res.status, res.json.error.code], [404, 'SVC_ERR_WEBHOOK_UNKNOWN_SOURCE'], path);
    }
    t.equal(door.seen.length, 0);
    t.same(door.refused, ['unknownOrg', 'unknownOrg', 'unknownSource', 'unknownSource', 'unknownSource', 'unknownSource'], `counted (${asyncGate ? 'async' : 'sync'} gate)`);
  }
});

t.test('limits are decided before the body is read', async (t) => {
  const door = await startDoor(t, { perOrgRpm: 1 });
  t.equal((await post(door.url, '/webhook/acme/github', '{}')).status, 200);
  // 20 MiB declared, 64 KiB sent: the answer must come without the rest.
  const limited = await partialUpload(door.url, '/webhook/acme/github', 20 * 1024 * 1024, 64 * 1024);
  t.equal(limited.status, 429);
  t.ok(Number(limited.retryAfter) >= 1 && Number(limited.retryAfter) <= 60, `Retry-After ${limited.retryAfter}: the org's one token a minute`);
  t.equal(limited.body.error.code, 'SVC_ERR_WEBHOOK_RATE_LIMITED');
  const tooLarge = await partialUpload(door.url, '/webhook/acme/github', MAX_WEBHOOK_BYTES + 1, 1);
  t.same([tooLarge.status, tooLarge.body.error.code], [413, 'SVC_ERR_WEBHOOK_BODY_TOO_LARGE']);
  t.equal(door.seen.length, 1, 'only the first was handled');
  t.same(door.refused, ['rateLimited:org', 'bodyTooLarge']);

  const byIp = await startDoor(t, { perIpRpm: 1 });
  t.equal((await post(byIp.url, '/webhook/acme/github', '{}')).status, 200);
  const ip = await partialUpload(byIp.url, '/webhook/nobody/github', 1024 * 1024, 10);
  t.same([ip.status, ip.body.error.code], [429, 'SVC_ERR_WEBHOOK_RATE_LIMITED'], 'the per-IP limit comes before the org');
  t.ok(Number(ip.retryAfter) >= 1);
});

t.test("a generic source's own limits: Content-Length and streamed bytes over maxPayloadBytes, rateLimitRpm", async (t) => {
  const door = await startDoor(t);
  const declared = await partialUpload(door.url, '/webhook/acme/generic/small', 17, 1);
  t.same([declared.status, declared.body.error.code], [413, 'SVC_ERR_WEBHOOK_BODY_TOO_LARGE']);
  const streamed = await new Promise<number>((resolve, reject) => {
    const req = http.request(`${door.url}/webhook/acme/generic/small`, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } });
    req.on('response', (res) => (res.resume(), resolve(res.statusCode ?? 0)));
    req.on('error', reject);
    req.end('x'.repeat(40));
  });
  t.equal(streamed, 413, 'no Content-Length: checked on the bytes');
  t.equal((await post(door.url, '/webhook/acme/generic/small', '{}')).status, 200);
  const limited = await post(door.url, '/webhook/acme/generic/small', '{}');
  t.same([limited.status, limited.json.error.code], [429, 'SVC_ERR_WEBHOOK_RATE_LIMITED'], 'the rate limit comes before the size: the oversized ones took a token each');
  t.ok(Number(limited.headers.get('retry-after')) >= 1 && Number(limited.headers.get('retry-after')) <= 20, 'one token every 20 s');
  t.same(door.refused, ['bodyTooLarge', 'bodyTooLarge', 'rateLimited:source']);
});

t.test('over 25 MiB while streaming: 413 with the webhook code', async (t) => {
  const door = await startDoor(t);
  const chunk = Buffer.alloc(1024 * 1024, 0x62);
  const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request(`${door.url}/webhook/acme/github`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-provider-hook-installation-target-id': '100', 'transfer-encoding': 'chunked' } });
    req.on('response', (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (body += c));
      r.on('end', () => resolve({ status: r.statusCode ?? 0, body }));
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
  t.equal(res.status, 413);
  t.equal(JSON.parse(res.body).error.code, 'SVC_ERR_WEBHOOK_BODY_TOO_LARGE');
  t.equal(door.seen.length, 0);
  t.same(door.refused, ['bodyTooLarge']);
});

t.test("the handler's answers: refusal rows with their Retry-After; other errors go to the server's mapping", async (t) => {
  const door = await startDoor(t);
  door.answer = (w) => {
    const c = w.body.toString();
    if (c === 'shed') return { refusal: 'shed', retryAfterSeconds: 42 };
    if (c === 'shed-default') return { refusal: 'shed' };
    if (c === 'full') return { refusal: 'bufferFull' };
    if (c === 'sig') return { refusal: 'signatureRejected', message: 'nope' };
    if (c === 'boom') throw new Error('handler failed');
    return { status: 200, body: { status: 'buffered' } };
  };
  const shed = await post(door.url, '/webhook/acme/github', 'shed');
  t.same([shed.status, shed.headers.get('retry-after'), shed.json.error.code], [429, '42', 'SVC_ERR_WEBHOOK_SHED']);
  t.equal((await post(door.url, '/webhook/acme/github', 'shed-default')).headers.get('retry-after'), '5', 'a retry row always has Retry-After');
  const full = await post(door.url, '/webhook/acme/github', 'full');
  t.same([full.status, full.headers.get('retry-after'), full.json], [503, '5', { error: { code: 'SVC_ERR_WEBHOOK_BUFFER_FULL', message: WEBHOOK_REFUSALS.bufferFull.message } }]);
  const sig = await post(door.url, '/webhook/acme/github', 'sig');
  t.same([sig.status, sig.headers.get('retry-after'), sig.json], [401, null, { error: { code: 'SVC_ERR_WEBHOOK_SIGNATURE_REJECTED', message: 'nope' } }]);
  const boom = await post(door.url, '/webhook/acme/github', 'boom');
  t.same([boom.status, boom.json.error.code], [500, 'SVC_ERR_INTERNAL'], 'the one error mapping, details kept out');
  t.same((await post(door.url, '/webhook/acme/github', 'ok')).json, { status: 'buffered' });
});

t.test('every refusal row has one distinct code; retry rows say how long', async (t) => {
  const codes = Object.values(WEBHOOK_REFUSALS).map((r) => r.code);
  t.equal(new Set(codes).size, codes.length);
  for (const row of Object.values(WEBHOOK_REFUSALS)) {
    t.match(row.code, /^SVC_ERR_WEBHOOK_[A-Z_]+$/);
    if (row.status === 429 || row.status === 503) t.ok('retryAfter' in row, `${row.code} sends Retry-After`);
  }
});
