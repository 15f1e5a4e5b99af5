// Fuzzing the relay over real sockets (fast-check): generated webhook requests — paths, methods,
// header sets and bodies — against a real relay on a real PostgreSQL with a real orchestrator link
// accepting deliveries, and generated WebSocket frames against the orchestrator endpoint. Every
// request must get an answer the spec allows (never a 5xx here: the link accepts), with a JSON
// body naming a catalogued code when it refuses; a refused request writes nothing and reaches no
// orchestrator; the relay keeps serving. Frames get a close code of the protocol's, never 1011.
// Cases per property: SVC_FUZZ_RUNS (default 1,000 requests and 100 connections per database;
// `SVC_FUZZ_RUNS=100000` for the long run).
import fc from 'fast-check';
import t from 'tap';
import WebSocket from 'ws';
import { CONNECT_PATH } from '../../kernel/relay/orchestrator-endpoint.ts';
import { PROTOCOL_VERSION } from '../../schemas/wire/relay.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { pushPayload } from '../fixtures/github-payloads.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { fakeOrchestrator, githubSource, newOrg, sendWebhook, startTestRelay } from '../kernel/relay/harness.ts';
import { answerProblem, bodyOf, describeTally, fuzzDatabase, fuzzRuns, fuzzTimeout, headerSet, progress, tally } from './arbitraries.ts';

t.setTimeout(fuzzTimeout());

const REQUESTS = fuzzRuns(1_000);
const CONNECTIONS = Math.max(20, Math.round(REQUESTS / 10));
/** Statuses of the spec's "Webhook ingest status codes" that can occur with an accepting link, and the HTTP layer's. */
const ALLOWED = new Set([200, 400, 401, 404, 405, 413, 415, 429, 431]);
/** Close codes the relay may use for a broken peer: protocol error, unsupported data, bad payload, policy, too big, and the app range. */
const CLOSE_OK = (code: number): boolean => [1000, 1002, 1003, 1005, 1006, 1007, 1008, 1009].includes(code) || (code >= 4000 && code <= 4999);

const path = fc.oneof(
  { weight: 6, arbitrary: fc.constant('/webhook/acme/github') },
  { weight: 1, arbitrary: fc.constant('/webhook/acme/generic/alerts') },
  { weight: 1, arbitrary: fc.constant('/webhook/nobody/github') },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((s) => `/webhook/acme/${encodeURIComponent(s)}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((s) => `/webhook/${encodeURIComponent(s)}/github`) },
  { weight: 1, arbitrary: fc.constantFrom('/webhook', '/webhook/', '/webhook/acme', '/webhook/acme/github/', '/webhook/acme/github/x/y', '/webhook/%2e%2e/github', '/webhook/acme/github?x=%ZZ') },
);
/** Mostly a routable delivery (so the case reaches dedup, the link and the ack), with generated headers over it. */
const headers = fc.oneof(
  { weight: 1, arbitrary: headerSet },
  {
    weight: 3,
    arbitrary: fc
      .record({
        event: fc.oneof(fc.constantFrom('push', 'pull_request', 'ping', 'issue_comment', ''), fc.string({ unit: fc.constantFrom('a', 'b', '_', '.', '-'), maxLength: 30 })),
        delivery: fc.oneof(fc.uuid(), fc.constantFrom('d-1', 'd-2', 'd-3')),
        target: fc.oneof({ weight: 5, arbitrary: fc.constant('100') }, { weight: 1, arbitrary: fc.constantFrom('', '0', '-1', '1e3', '100 ', '99999999999999999999') }),
        extra: headerSet,
      })
      .map(({ event, delivery, target, extra }) => ({
        'content-type': 'application/json',
        'x-github-event': event,
        'x-github-delivery': delivery,
        'x-github-hook-installation-target-id': target,
        ...extra,
      })),
  },
);
const method = fc.oneof({ weight: 8, arbitrary: fc.constant('POST') }, { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS') });

await eachDatabase(t, async (t, db) => {
  if (!fuzzDatabase(db.kind)) return void t.pass(`not fuzzed on the ${db.kind} database (SVC_FUZZ_DATABASES)`);
  const token = await newOrg(db.pool, 'acme');
  const relay = await startTestRelay(t, db.url, {
    env: { SVC_RELAY_RATE_LIMIT_PER_IP_RPM: '100000000', SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '100000000' },
  });
  const orchestrator = await fakeOrchestrator(t, relay.url, token, { sources: [githubSource('100')] });
  // The source must be known before the fuzz stream starts, or the first cases meet the negative cache.
  t.equal((await sendWebhook(relay.url, 'acme', { target: '100' })).status, 200, 'a well-formed delivery is accepted first');
  const bufferedBefore = await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer`);

  await t.test(`${REQUESTS} generated webhook requests`, async (t) => {
    const statuses = new Map<string, number>();
    let accepted = 0;
    const received = orchestrator.received.length;
    const tick = progress(`relay ${db.kind} requests`, REQUESTS, statuses);
    await fc.assert(
      fc.asyncProperty(path, method, headers, bodyOf(pushPayload() as unknown as Record<string, unknown>), async (p, m, headers, body) => {
        const init: RequestInit = { method: m, headers };
        if (m !== 'GET' && m !== 'OPTIONS') init.body = body;
        const response = await fetch(`${relay.url}${p}`, init);
        const text = await response.text();
        tally(statuses, String(response.status));
        tick();
        const problem = answerProblem(response.status, text, ALLOWED);
        if (problem !== undefined) throw new Error(`${m} ${p}: ${problem}`);
        if (response.status === 200 && (JSON.parse(text) as { status: string }).status === 'accepted') accepted++;
      }),
      { numRuns: REQUESTS, endOnFailure: true },
    );
    t.comment(`requests tried: ${REQUESTS}; answers by status: ${describeTally(statuses)}; 5xx: ${[...statuses.keys()].filter((s) => s >= '500').length}`);
    t.equal(orchestrator.received.length - received, accepted, 'the orchestrator got exactly the accepted deliveries, no refused one');
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_buffer`), bufferedBefore, 'nothing was buffered: refusals write nothing');
    const health = await fetch(`${relay.url}/healthz`);
    t.equal(health.status, 200, 'the relay still serves');
  });

  await t.test(`${CONNECTIONS} orchestrator connections sending generated frames`, async (t) => {
    const knownTypes = ['orchestrator.hello', 'webhook.ack', 'source.register', 'source.deregister', 'source.secrets', 'run.show.response', 'run.logs.response', 'dashboard.payload.response', 'execution.status', 'job.status.forward'];
    const frame = fc.oneof(
      fc.uint8Array({ maxLength: 512 }).map((b) => ({ binary: true, data: Buffer.from(b) })),
      fc.string({ maxLength: 256 }).map((s) => ({ binary: false, data: s })),
      fc.jsonValue({ maxDepth: 3 }).map((v) => ({ binary: false, data: JSON.stringify(v) ?? 'null' })),
      fc
        .record({ type: fc.constantFrom(...knownTypes), extra: fc.dictionary(fc.constantFrom('protocolVersion', 'orchestratorId', 'sources', 'deliveryId', 'result', 'requestId', 'runId'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) })
        .map(({ type, extra }) => ({ binary: false, data: JSON.stringify({ type, ...extra }) })),
    );
    const closes = new Map<string, number>();
    const tick = progress(`relay ${db.kind} connections`, CONNECTIONS, closes);
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.array(frame, { minLength: 1, maxLength: 6 }), async (greet, generated) => {
        // Half the connections say a valid hello first, so the frames after it meet the session's handlers.
        const hello = { binary: false, data: JSON.stringify({ type: 'orchestrator.hello', protocolVersion: PROTOCOL_VERSION, orchestratorId: `fuzz-${Math.random().toString(36).slice(2, 8)}`, sources: [githubSource('100')] }) };
        const frames = greet ? [hello, ...generated] : generated;
        const code = await new Promise<number>((resolve, reject) => {
          const ws = new WebSocket(`${relay.url.replace('http', 'ws')}${CONNECT_PATH}`, { headers: { authorization: `Bearer ${token}` } });
          let closedBy: number | undefined;
          // A connection that has not opened in 30 s is a failure; one the server keeps open
          // after the frames is closed by us after 300 ms (the frames were handled, not refused).
          let guard = setTimeout(() => reject(new Error('the relay did not open the connection within 30 s')), 30_000);
          ws.on('open', () => {
            clearTimeout(guard);
            guard = setTimeout(() => ws.close(1000), 300);
            for (const f of frames) ws.send(f.data, { binary: f.binary });
          });
          ws.on('close', (c) => {
            clearTimeout(guard);
            resolve(closedBy ?? c);
          });
          ws.on('error', (e) => {
            clearTimeout(guard);
            reject(e);
          });
        });
        tally(closes, String(code));
        tick();
        if (!CLOSE_OK(code)) throw new Error(`closed with ${code}`);
      }),
      { numRuns: CONNECTIONS, endOnFailure: true },
    );
    t.comment(`connections tried: ${CONNECTIONS}; close codes: ${describeTally(closes)}`);
    // The real link still works after all of that.
    const res = await sendWebhook(relay.url, 'acme', { target: '100' });
    t.equal(res.status, 200);
    t.ok(['accepted', 'buffered'].includes((res.json as { status: string }).status), 'deliveries still flow to an orchestrator');
  });
});
