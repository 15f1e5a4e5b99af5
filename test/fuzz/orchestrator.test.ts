// Fuzzing the orchestrator's independent ingest route over real HTTP (fast-check): the real
// startOrchestrator on a real database with a forge source whose secret the test knows, so a
// share of the generated bodies is signed correctly and goes through parsing, normalization,
// dedup and matching against a real lock; the rest is refused at the door or at the signature.
// Every answer must be one the spec allows (no 5xx), name a catalogued code when it refuses, and
// every run the database holds must be one a `matched` answer named. Then generated WebSocket
// frames against the agent endpoint: the orchestrator closes with a protocol close code or keeps
// the connection, never 1011, and a real agent registration still works afterwards.
// Cases: SVC_FUZZ_RUNS (default 1,000 requests and 50 connections per database).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import WebSocket from 'ws';
import { startOrchestrator } from '../../kernel/orchestrator/app.ts';
import { createSource } from '../../kernel/orchestrator/sources/store.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../kernel/orchestrator/subsystems.ts';
import { hmacSha256Hex } from '../../kernel/services/crypto/hmac.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../plugins/builtin.ts';
import { eachDatabase, testLogger } from '../fixtures/db.ts';
import { pushPayload, SHA_A } from '../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../fixtures/locks.ts';
import { Forge } from '../kernel/orchestrator/ingest/harness.ts';
import { TestAgent } from '../fixtures/test-agent.ts';
import { answerProblem, bodyOf, describeTally, fuzzDatabase, fuzzRuns, fuzzTimeout, headerSet, progress, serverEnv, tally } from './arbitraries.ts';

t.setTimeout(fuzzTimeout());

const REQUESTS = fuzzRuns(1_000);
const CONNECTIONS = Math.max(20, Math.round(REQUESTS / 20));
const SECRET = 'fuzz-secret-0123456789abcdef';
/** The spec's ingest statuses that can occur with a healthy forge, and the HTTP layer's. */
const ALLOWED = new Set([200, 400, 401, 404, 405, 413, 415, 429, 431]);
const CLOSE_OK = (code: number): boolean => [1000, 1002, 1003, 1005, 1006, 1007, 1008, 1009].includes(code) || (code >= 4000 && code <= 4999);

await eachDatabase(t, async (t, db) => {
  if (!fuzzDatabase(db.kind)) return void t.pass(`not fuzzed on the ${db.kind} database (SVC_FUZZ_DATABASES)`);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-fuzz-orch-'));
  const forge = new Forge();
  const orchestrator = await startOrchestrator({
    env: {
      // SVC_FUZZ_* are the test's, not settings: the orchestrator refuses unknown SVC_ names.
      ...serverEnv(),
      SVC_DATABASE_URL: db.url,
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: randomBytes(32).toString('base64'),
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_INSTANCE_ID: `fuzz-${randomUUID().slice(0, 8)}`,
      SVC_PLATFORM_URL: '',
      SVC_AGENT_AUTH: 'none',
      // The independent route's ingress limits: high, so long runs reach the pipeline, not the limiter.
      SVC_RELAY_RATE_LIMIT_PER_IP_RPM: '100000000',
      SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '100000000',
    },
    cwd: dataDir,
    logger: testLogger,
    subsystems: ORCHESTRATOR_SUBSYSTEMS,
    plugins: (pluginEnv) => {
      const chosen = orchestratorPlugins(pluginEnv);
      return { ...chosen, builtIns: [...chosen.builtIns, forge.plugin()] };
    },
  });
  t.teardown(async () => {
    await orchestrator.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const base = orchestrator.url;
  await createSource(orchestrator.ctx.db, orchestrator.ctx.masterKeys.current!, { orgId: 'acme', providerKind: 'forge', targetId: '7', secret: SECRET });
  forge.putLock(SHA_A, [workflow('ci', [trig.push({ branches: ['main'] })], [job('build')])]);

  await t.test(`${REQUESTS} generated webhook requests, a share of them correctly signed`, async (t) => {
    const statuses = new Map<string, number>();
    const matchedRuns = new Set<string>();
    const tick = progress(`orchestrator ${db.kind} requests`, REQUESTS, statuses);
    const request = fc.record({
      path: fc.oneof({ weight: 8, arbitrary: fc.constant('/webhook/acme/forge') }, { weight: 1, arbitrary: fc.constantFrom('/webhook/acme/github', '/webhook/zed/forge', '/webhook/acme/forge/x', '/webhook/acme/generic/none') }),
      sign: fc.oneof({ weight: 3, arbitrary: fc.constant('valid') }, { weight: 1, arbitrary: fc.constantFrom('none', 'wrong', 'generated') }),
      event: fc.oneof({ weight: 4, arbitrary: fc.constant('push') }, { weight: 1, arbitrary: fc.constantFrom('pull_request', 'ping', 'create', 'delete', 'issue_comment', 'x') }),
      delivery: fc.oneof(fc.uuid(), fc.constantFrom('dup-1', 'dup-2', '')),
      target: fc.oneof({ weight: 6, arbitrary: fc.constant('7') }, { weight: 1, arbitrary: fc.constantFrom('', '8', ' 7') }),
      extra: headerSet,
      body: bodyOf(pushPayload() as unknown as Record<string, unknown>),
    });
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = {
          'content-type': 'application/json',
          'x-provider-event': r.event,
          'x-provider-delivery': r.delivery,
          'x-provider-hook-installation-target-id': r.target,
          ...r.extra,
        };
        if (r.sign === 'valid') headers['x-hub-signature-256'] = `sha256=${hmacSha256Hex(SECRET, r.body)}`;
        else if (r.sign === 'wrong') headers['x-hub-signature-256'] = `sha256=${hmacSha256Hex('another-secret-0123456789', r.body)}`;
        else if (r.sign === 'none') delete headers['x-hub-signature-256'];
        const response = await fetch(`${base}${r.path}`, { method: 'POST', headers, body: r.body });
        const text = await response.text();
        tally(statuses, `${response.status}${response.status === 200 ? ` ${(JSON.parse(text) as { status: string }).status}` : ''}`);
        tick();
        const problem = answerProblem(response.status, text, ALLOWED);
        if (problem !== undefined) throw new Error(`${r.sign} ${r.path}: ${problem}`);
        if (response.status === 200) for (const id of (JSON.parse(text) as { runIds?: string[] }).runIds ?? []) matchedRuns.add(id);
      }),
      { numRuns: REQUESTS, endOnFailure: true },
    );
    t.comment(`requests tried: ${REQUESTS}; answers: ${describeTally(statuses)}`);
    const runs = await db.pool.anyFirst(sql.unsafe`select id::text from runs`);
    t.same([...runs].sort(), [...matchedRuns].sort(), 'every run in the database was named by a matched answer');
    t.equal((await fetch(`${base}/healthz`)).status, 200, 'the orchestrator still serves');
  });

  await t.test(`${CONNECTIONS} agent connections sending generated frames`, async (t) => {
    const knownTypes = ['agent.register', 'job.status', 'step.status', 'job.context', 'cache.upload.request', 'oidc.token.request', 'event.emit'];
    const frame = fc.oneof(
      fc.uint8Array({ maxLength: 512 }).map((b) => ({ binary: true, data: Buffer.from(b) as Buffer | string })),
      fc.string({ maxLength: 256 }).map((s) => ({ binary: false, data: s as Buffer | string })),
      fc.jsonValue({ maxDepth: 3 }).map((v) => ({ binary: false, data: (JSON.stringify(v) ?? 'null') as Buffer | string })),
      fc
        .record({ type: fc.constantFrom(...knownTypes), extra: fc.dictionary(fc.constantFrom('agentId', 'labels', 'jobId', 'runId', 'status', 'seq', 'lines', 'capacity', 'version'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 }) })
        .map(({ type, extra }) => ({ binary: false, data: JSON.stringify({ type, ...extra }) as Buffer | string })),
    );
    const closes = new Map<string, number>();
    let answers = 0;
    const tick = progress(`orchestrator ${db.kind} connections`, CONNECTIONS, closes);
    const agentUrl = `${base.replace('http', 'ws')}/v1/agents/connect`;
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 6 }), async (frames) => {
        const code = await new Promise<number>((resolve, reject) => {
          const ws = new WebSocket(agentUrl);
          let guard = setTimeout(() => reject(new Error('the orchestrator did not open the connection within 30 s')), 30_000);
          ws.on('open', () => {
            clearTimeout(guard);
            guard = setTimeout(() => ws.close(1000), 300);
            for (const f of frames) ws.send(f.data, { binary: f.binary });
          });
          ws.on('message', () => answers++);
          ws.on('close', (c) => {
            clearTimeout(guard);
            resolve(c);
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
    t.comment(`connections tried: ${CONNECTIONS}; close codes: ${describeTally(closes)}; frames answered (protocol.error and the like): ${answers}`);
    t.equal((await fetch(`${base}/healthz`)).status, 200, 'the orchestrator still serves');
    const agent = await TestAgent.online({ url: base, agentId: `after-fuzz-${randomUUID().slice(0, 8)}` });
    t.pass('a real agent still registers');
    await agent.close();
  });
});
