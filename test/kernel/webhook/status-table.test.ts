// Every row of the spec's "Webhook ingest status codes" table against BOTH front doors: a real
// relay (real HTTP, real orchestrator links scripted to ack each row) and a real orchestrator in
// independent mode (real pipeline, sources and signatures). The same row must give the same
// status, Retry-After and error code on both. Rows the orchestrator cannot have (it has no
// buffer) are named as such.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startOrchestrator, type Orchestrator } from '../../../kernel/orchestrator/app.ts';
import { createSource } from '../../../kernel/orchestrator/sources/store.ts';
import { ingestPipelineRef } from '../../../kernel/orchestrator/service-refs.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../../kernel/orchestrator/subsystems.ts';
import { hmacSha256Hex } from '../../../kernel/services/crypto/hmac.ts';
import { MAX_WEBHOOK_BYTES } from '../../../kernel/webhook/parse-request.ts';
import { orchestratorPlugins } from '../../../plugins/builtin.ts';
import type { AckResult, RelaySource } from '../../../schemas/wire/relay.ts';
import { eachDatabase, testLogger, type Test } from '../../fixtures/db.ts';
import { pushPayload } from '../../fixtures/github-payloads.ts';
import { partialUpload, postWebhook, type WebhookResponse } from '../../fixtures/webhook-requests.ts';
import { Forge } from '../orchestrator/ingest/harness.ts';
import { fakeOrchestrator, newOrg, startTestRelay, uniqueId } from '../relay/harness.ts';

// Orchestrators start in-process and each does real work: allow for two busy cores.

interface Expected {
  status: number;
  code?: string;
  /** An exact Retry-After, or 'given' for any positive number. */
  retryAfter?: string;
  /** With 'given': the most it may be (a bucket's wait shrinks while the test runs, so no exact value). */
  retryAfterAtMost?: number;
  /** `status` of a 200 answer's body. */
  answer?: string;
}

/** One front door under test: how to provoke each row there. */
interface Door {
  /** Posts an ordinary delivery that the door will relay (relay) or process (orchestrator) with `ack`'s answer. */
  ack(ack: AckResult): Promise<WebhookResponse>;
  /** The same delivery twice: the second is the answer. */
  duplicate(): Promise<WebhookResponse>;
  unknownSource(): Promise<WebhookResponse>;
  unknownOrg(): Promise<WebhookResponse>;
  url: string;
  /** An instance of the same door whose per-org limit is 1 a minute and per-IP limit 2 a minute. */
  limitedUrl: string;
  buffered?(): Promise<WebhookResponse>;
  bufferFull?(): Promise<WebhookResponse>;
}

const LIMITED_HEADERS = { 'x-provider-hook-installation-target-id': '7', 'x-provider-delivery': 'limited-1' };

const ROWS: Array<{ row: string; expect: Expected; provoke: (door: Door) => Promise<WebhookResponse> | 'not applicable' }> = [
  {
    row: 'Body larger than 25 MiB',
    expect: { status: 413, code: 'SVC_ERR_WEBHOOK_BODY_TOO_LARGE' },
    provoke: (d) => partialUpload(`${d.url}/webhook/acme/forge`, MAX_WEBHOOK_BYTES + 1, 1, { 'x-provider-hook-installation-target-id': '7' }),
  },
  {
    row: 'Negative-cache hit on unknown (org, routing key)',
    expect: { status: 404, code: 'SVC_ERR_WEBHOOK_UNKNOWN_SOURCE' },
    provoke: async (d) => (await d.unknownSource(), d.unknownSource()),
  },
  { row: 'Orchestrator ack accepted', expect: { status: 200 }, provoke: (d) => d.ack('accepted') },
  { row: 'Ack rejected_signature', expect: { status: 401, code: 'SVC_ERR_WEBHOOK_SIGNATURE_REJECTED' }, provoke: (d) => d.ack('rejected_signature') },
  { row: 'Ack rejected_unknown_source', expect: { status: 404, code: 'SVC_ERR_WEBHOOK_UNKNOWN_SOURCE' }, provoke: (d) => d.ack('rejected_unknown_source') },
  { row: 'Ack rejected_misconfigured', expect: { status: 500, code: 'SVC_ERR_WEBHOOK_SOURCE_MISCONFIGURED' }, provoke: (d) => d.ack('rejected_misconfigured') },
  { row: 'Ack shed_retry_later', expect: { status: 429, code: 'SVC_ERR_WEBHOOK_SHED', retryAfter: 'given' }, provoke: (d) => d.ack('shed_retry_later') },
  {
    row: 'Ingress rate limit exceeded for org, decided before the body is read',
    expect: { status: 429, code: 'SVC_ERR_WEBHOOK_RATE_LIMITED', retryAfter: 'given', retryAfterAtMost: 60 },
    provoke: async (d) => {
      await postWebhook(`${d.limitedUrl}/webhook/acme/forge`, '{}', LIMITED_HEADERS);
      // 20 MiB declared, 64 KiB sent: the answer comes without the rest.
      return partialUpload(`${d.limitedUrl}/webhook/acme/forge`, 20 * 1024 * 1024, 64 * 1024, LIMITED_HEADERS);
    },
  },
  {
    // After the row above: this address has sent its 2 a minute; any org, known or not.
    row: 'Ingress rate limit exceeded for client IP, decided before the body is read',
    expect: { status: 429, code: 'SVC_ERR_WEBHOOK_RATE_LIMITED', retryAfter: 'given', retryAfterAtMost: 30 },
    provoke: (d) => partialUpload(`${d.limitedUrl}/webhook/someone-else/forge`, 20 * 1024 * 1024, 64 * 1024, LIMITED_HEADERS),
  },
  {
    row: 'No orchestrator in the pool, all candidates timed out, or relay budget spent',
    expect: { status: 200, answer: 'buffered' },
    provoke: (d) => d.buffered?.() ?? 'not applicable',
  },
  {
    row: 'Buffer budget exhausted',
    expect: { status: 503, code: 'SVC_ERR_WEBHOOK_BUFFER_FULL', retryAfter: '5' },
    provoke: (d) => d.bufferFull?.() ?? 'not applicable',
  },
  { row: 'Unknown org with no registered source', expect: { status: 404, code: 'SVC_ERR_WEBHOOK_UNKNOWN_ORG' }, provoke: (d) => d.unknownOrg() },
  {
    row: 'Duplicate delivery id or duplicate body for the same source inside the dedup window',
    expect: { status: 200, answer: 'duplicate' },
    provoke: (d) => d.duplicate(),
  },
];

const FORGE_HEADERS = (deliveryId: string, target = '7') => ({ 'x-provider-event': 'push', 'x-provider-delivery': deliveryId, 'x-provider-hook-installation-target-id': target });

async function relayDoor(t: Test, dbUrl: string, pool: Parameters<typeof newOrg>[0]): Promise<Door> {
  const token = await newOrg(pool, 'acme');
  const r = await startTestRelay(t, dbUrl, { ackTimeoutMs: 300, totalBudgetMs: 3_000, replayIntervalMs: 600_000, env: { SVC_RELAY_BUFFER_MAX_ITEMS: '1' } });
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  t.teardown(() => release());
  const sources: RelaySource[] = [{ routingKey: 'forge:7', providerKind: 'forge' }, { routingKey: 'forge:8', providerKind: 'forge' }];
  await fakeOrchestrator(t, r.url, token, {
    sources,
    onDelivery: async (d) => {
      const c = (JSON.parse(Buffer.from(d.bodyBase64, 'base64').toString()) as { case?: string }).case ?? 'accepted';
      if (c === 'hang') return (await released, { result: 'accepted' });
      if (c === 'shed_retry_later') return { result: c, retryAfterSeconds: 7 };
      return { result: c as AckResult };
    },
  });
  const limited = await startTestRelay(t, dbUrl, { env: { SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '1', SVC_RELAY_RATE_LIMIT_PER_IP_RPM: '2' } });
  const send = (c: string, target = '7', delivery = uniqueId()) => postWebhook(`${r.url}/webhook/acme/forge`, JSON.stringify({ case: c, n: uniqueId() }), FORGE_HEADERS(delivery, target));
  return {
    url: r.url,
    limitedUrl: limited.url,
    ack: (ack) => send(ack, ack === 'rejected_unknown_source' ? '8' : '7'),
    duplicate: async () => {
      const id = uniqueId();
      await send('accepted', '7', id);
      return send('accepted', '7', id);
    },
    unknownSource: () => send('accepted', '999'),
    unknownOrg: () => postWebhook(`${r.url}/webhook/nobody/forge`, '{}', FORGE_HEADERS(uniqueId())),
    buffered: () => send('hang'),
    bufferFull: () => send('hang'),
  };
}

async function startIndependent(t: Test, dbUrl: string, forge: Forge, env: Record<string, string> = {}): Promise<Orchestrator> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-door-'));
  const full: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_DATABASE_URL: dbUrl,
    SVC_DATA_DIR: dataDir,
    SVC_SECRET_KEY: SECRET_KEY,
    SVC_SERVER_PORT: '0',
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_INSTANCE_ID: `door-${randomUUID().slice(0, 8)}`,
    ...env,
  };
  delete full['SVC_PLATFORM_URL'];
  const orchestrator = await startOrchestrator({
    env: full,
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
  return orchestrator;
}

const SECRET_KEY = randomBytes(32).toString('base64');

async function independentDoor(t: Test, dbUrl: string): Promise<Door> {
  const forge = new Forge();
  const o = await startIndependent(t, dbUrl, forge);
  const masterKey = o.ctx.masterKeys.current as Buffer;
  const { secret } = await createSource(o.ctx.db, masterKey, { orgId: 'acme', providerKind: 'forge', targetId: '7' });
  // Settings the forge's schema refuses: the pipeline answers rejected_misconfigured.
  const misconfigured = await createSource(o.ctx.db, masterKey, { orgId: 'acme', providerKind: 'forge', targetId: '9', settings: { unexpected: true } });
  const limited = await startIndependent(t, dbUrl, forge, { SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '1', SVC_RELAY_RATE_LIMIT_PER_IP_RPM: '2' });
  const push = (delivery: string, options: { target?: string; key?: string; sha?: string } = {}) => {
    const body = Buffer.from(JSON.stringify(pushPayload({ message: uniqueId(), ...(options.sha === undefined ? {} : { after: options.sha }) })));
    return postWebhook(`${o.url}/webhook/acme/forge`, body, { ...FORGE_HEADERS(delivery, options.target), 'x-hub-signature-256': `sha256=${hmacSha256Hex(options.key ?? secret, body)}` });
  };
  return {
    url: o.url,
    limitedUrl: limited.url,
    async ack(ack) {
      if (ack === 'accepted') return push(uniqueId());
      if (ack === 'rejected_signature') return push(uniqueId(), { key: 'w'.repeat(32) });
      // Independent mode's own lookup is the ack: a routing key it does not know.
      if (ack === 'rejected_unknown_source') return push(uniqueId(), { target: '8' });
      if (ack === 'rejected_misconfigured') return push(uniqueId(), { target: '9', key: misconfigured.secret });
      if (ack === 'shed_retry_later') {
        // Back-pressure answers 429: every in-flight slot of the node taken. (A passing failure such
        // as the forge being down is kept and answered 200: test/kernel/orchestrator/ingest/retry.test.ts.)
        const admission = o.get(ingestPipelineRef).admission;
        const held: Array<() => void> = [];
        for (let release = admission.admit(); release !== null; release = admission.admit()) held.push(release);
        try {
          return await push(uniqueId());
        } finally {
          for (const release of held) release();
        }
      }
      return push(uniqueId());
    },
    async duplicate() {
      const id = uniqueId();
      await push(id);
      return push(id);
    },
    unknownSource: () => push(uniqueId(), { target: '999' }),
    unknownOrg: () => postWebhook(`${o.url}/webhook/nobody/forge`, '{}', FORGE_HEADERS(uniqueId())),
  };
}

function check(t: Test, res: WebhookResponse, expect: Expected, what: string): void {
  t.equal(res.status, expect.status, `${what}: status`);
  if (expect.code !== undefined) t.equal(res.json?.error?.code, expect.code, `${what}: code`);
  else t.notOk(res.json?.error, `${what}: no error body`);
  if (expect.retryAfter === undefined) t.equal(res.retryAfter, null, `${what}: no Retry-After`);
  else if (expect.retryAfter === 'given') {
    const seconds = Number(res.retryAfter);
    t.ok(seconds >= 1 && seconds <= (expect.retryAfterAtMost ?? Infinity), `${what}: Retry-After ${res.retryAfter}`);
  }
  else t.equal(res.retryAfter, expect.retryAfter, `${what}: Retry-After`);
  if (expect.answer !== undefined) t.equal(res.json?.status, expect.answer, `${what}: answer`);
}

await eachDatabase(t, async (t, db) => {
  const doors: Record<'relay' | 'independent', Door> = {
    relay: await relayDoor(t, db.url, db.pool),
    independent: await independentDoor(t, db.url),
  };
  for (const { row, expect, provoke } of ROWS) {
    await t.test(row, async (t) => {
      for (const [name, door] of Object.entries(doors)) {
        const res = await provoke(door);
        if (res === 'not applicable') {
          t.equal(name, 'independent', `${name}: only independent mode lacks a row (it has no relay buffer)`);
          continue;
        }
        check(t, res, expect, name);
      }
    });
  }
});
