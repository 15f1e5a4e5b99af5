// The source provider contract. The kernel verifies webhook signatures itself from what the
// provider says (`signatureInput`), so the checks below verify the way the kernel does: HMAC-SHA256
// over the exact body bytes against the secret, in constant time. How a forge carries its
// signature differs (GitHub's `X-Hub-Signature-256`, Gitea's `X-Gitea-Signature`), so the harness
// signs: the contract never assumes a header name.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { NormalizedEvent } from '../../../schemas/event.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import type { ProviderSource, RawDelivery, RepositoryRef, RunStatusReport, RunStatusResult, SourceProviderExtensionPoint, WebhookHeaders } from '../provider.ts';
import { sourceProviderExtensionPoint } from '../provider.ts';
import { expect, expectEqual, expectFields, expectRejects, expectSvcError, show } from './check.ts';
import type { BaseHarness, ContractContext, ContractPoint, ContractSuite } from './types.ts';

export interface ProviderHarness extends BaseHarness<'provider'> {
  /** The headers that carry a signature of `body` under `secret`, as the forge would send them. */
  sign(body: Uint8Array, secret: string): WebhookHeaders;
  /** A push delivery as the forge sends it: headers without the signature, and its JSON payload. */
  push: { headers: WebhookHeaders; payload: unknown };
  /** What the provider must make of that push. */
  expected: {
    eventType: string;
    deliveryId: string;
    routingKey: string;
    /** Fields the normalized event must have (`{ provider: 'gitea', type: 'push', sha: '…' }`). */
    event: Readonly<Record<string, unknown>>;
  };
  /** A source of this provider's kind; the bad-input points never reach its network. */
  source: ProviderSource;
  /** Default `{ id: '1', fullName: 'acme/widgets' }`. */
  repository?: RepositoryRef;
}

type Ctx = ContractContext<'provider', ProviderHarness>;

const SECRET = 'contract-secret-Zq8r1';
const OTHER_SECRET = 'contract-secret-other-4Kd';
const checkEvent = compileSchema(NormalizedEvent);

function pushBody(harness: ProviderHarness): Buffer {
  // Deliberately odd spacing: the bytes signed are the bytes received, never re-serialized JSON.
  return Buffer.from(`${JSON.stringify(harness.push.payload, null, 1)}\n`, 'utf8');
}

function extracted(provider: SourceProviderExtensionPoint, headers: WebhookHeaders) {
  const result = provider.extractHeaders(headers);
  if (!result.ok) throw new Error(`extractHeaders refused the delivery: ${result.message} (missing ${result.missing})`);
  return result.headers;
}

/** The kernel's decision on one delivery: does `secret` verify the signature the provider reads? */
function kernelAccepts(provider: SourceProviderExtensionPoint, headers: WebhookHeaders, body: Buffer, secret: string): boolean {
  const result = provider.extractHeaders(headers);
  if (!result.ok) return false;
  const delivery: RawDelivery = { headers: result.headers, body };
  const input = provider.signatureInput(delivery);
  expectEqual(input.algorithm, 'hmac-sha256', 'signatureInput().algorithm');
  expect(Buffer.from(input.signedBytes).equals(body), 'signatureInput().signedBytes must be the exact body bytes as received');
  if (input.signature === null) return false;
  expect(/^[0-9a-f]{64}$/i.test(input.signature), `signatureInput().signature must be 64 hex digits without a prefix, got ${show(input.signature)}`);
  const given = Buffer.from(input.signature, 'hex');
  const wanted = createHmac('sha256', secret).update(input.signedBytes).digest();
  return timingSafeEqual(given, wanted);
}

function signed(harness: ProviderHarness, body: Buffer, secret: string): WebhookHeaders {
  return { ...harness.push.headers, ...harness.sign(body, secret) };
}

const points: ContractPoint<'provider', ProviderHarness>[] = [
  {
    point: 'shape: providerKind, members and source settings schema',
    async run({ instance }: Ctx) {
      expect(typeof instance.providerKind === 'string' && /^[a-z][a-z0-9-]*$/.test(instance.providerKind), `providerKind must be a kebab-case string, got ${show(instance.providerKind)}`);
      for (const [member, type] of Object.entries(sourceProviderExtensionPoint.members)) {
        expectEqual(typeof (instance as unknown as Record<string, unknown>)[member], type, `typeof ${member}`);
      }
      if (instance.sourceSettingsSchema !== undefined) {
        try {
          compileSchema(instance.sourceSettingsSchema);
        } catch (error) {
          throw new Error(`sourceSettingsSchema does not compile: ${(error as Error).message}`, { cause: error });
        }
      }
    },
  },
  {
    point: 'headers: reads event type and delivery id from a push delivery',
    async run({ instance, harness }: Ctx) {
      const headers = extracted(instance, signed(harness, pushBody(harness), SECRET));
      expectEqual(headers.eventType, harness.expected.eventType, 'eventType');
      expectEqual(headers.deliveryId, harness.expected.deliveryId, 'deliveryId');
    },
  },
  {
    point: 'headers: a delivery without headers is refused, naming what is missing',
    async run({ instance }: Ctx) {
      const result = instance.extractHeaders({});
      expect(!result.ok, 'extractHeaders({}) must return { ok: false }');
      if (!result.ok) {
        expect(typeof result.missing === 'string' && result.missing !== '', 'a refusal names the missing header');
        expect(typeof result.message === 'string' && result.message !== '', 'a refusal carries a message');
      }
    },
  },
  {
    point: 'routing: the routing key is the expected one, prefixed with the provider kind',
    async run({ instance, harness }: Ctx) {
      const key = instance.routingKey(extracted(instance, signed(harness, pushBody(harness), SECRET)));
      expectEqual(key, harness.expected.routingKey, 'routingKey');
      expect(key.startsWith(`${instance.providerKind}:`), `routing key ${show(key)} must start with "${instance.providerKind}:"`);
    },
  },
  {
    point: 'verify: accepts a correctly signed body',
    async run({ instance, harness }: Ctx) {
      const body = pushBody(harness);
      expect(kernelAccepts(instance, signed(harness, body, SECRET), body, SECRET), 'a body signed with the secret did not verify');
    },
  },
  {
    point: 'verify: rejects a tampered body',
    async run({ instance, harness }: Ctx) {
      const body = pushBody(harness);
      const headers = signed(harness, body, SECRET);
      const tampered = Buffer.from(body);
      tampered[Math.floor(tampered.length / 2)]! ^= 0x01;
      expect(!kernelAccepts(instance, headers, tampered, SECRET), 'a body changed after signing still verified');
      expect(!kernelAccepts(instance, headers, Buffer.concat([body, Buffer.from(' ')]), SECRET), 'a body with a byte appended still verified');
    },
  },
  {
    point: 'verify: rejects a wrong secret',
    async run({ instance, harness }: Ctx) {
      const body = pushBody(harness);
      expect(!kernelAccepts(instance, signed(harness, body, OTHER_SECRET), body, SECRET), 'a body signed with another secret verified');
    },
  },
  {
    point: 'verify: an unsigned delivery never verifies',
    async run({ instance, harness }: Ctx) {
      const body = pushBody(harness);
      expect(!kernelAccepts(instance, harness.push.headers, body, SECRET), 'a delivery without a signature verified');
    },
  },
  {
    point: 'normalize: a push becomes a NormalizedEvent (schemas/event.ts) with the expected fields',
    async run({ instance, harness }: Ctx) {
      const body = pushBody(harness);
      const headers = extracted(instance, signed(harness, body, SECRET));
      const event = instance.normalize({ headers, body }, JSON.parse(body.toString('utf8')));
      const result = checkEvent.validate(event);
      if (!result.ok) throw new Error(`the normalized event does not match schemas/event.ts: ${formatIssues(result.issues)}`);
      expectFields(event, harness.expected.event, 'event');
      expectEqual(JSON.parse(JSON.stringify(event)), event, 'the normalized event survives a JSON round trip');
    },
  },
  {
    point: 'errors: a payload that is not a JSON object is refused with an input SvcError',
    async run({ instance, harness }: Ctx) {
      const headers = extracted(instance, signed(harness, Buffer.from('[]'), SECRET));
      for (const payload of [null, [], 'push', 42]) {
        await expectRejects(() => instance.normalize({ headers, body: Buffer.from(JSON.stringify(payload)) }, payload), { kind: 'input' }, `normalize(${show(payload)})`);
      }
    },
  },
  {
    point: 'errors: hostile revisions and paths are refused with an input SvcError before any I/O',
    async run({ instance, harness }: Ctx) {
      const source = harness.source;
      const repository = harness.repository ?? { id: '1', fullName: 'acme/widgets' };
      const sha = 'a'.repeat(40);
      for (const bad of ['--output=/tmp/x', 'main; rm -rf /', '../../etc/passwd']) {
        await expectRejects(() => instance.fetchLockFile({ source, repository, sha: bad }), { kind: 'input' }, `fetchLockFile(sha ${show(bad)})`);
        await expectRejects(() => instance.changedFiles({ source, repository, base: bad, head: sha }), { kind: 'input' }, `changedFiles(base ${show(bad)})`);
      }
      if (instance.readFile === undefined) return;
      for (const path of ['/etc/passwd', '../secret', 'a/../../b', '-rf']) {
        await expectRejects(() => instance.readFile!({ source, repository, sha, path }), { kind: 'input' }, `readFile(path ${show(path)})`);
      }
    },
  },
  {
    point: 'report: a run that is not on a commit is skipped or refused with an input SvcError, before any I/O',
    async run({ instance, harness }: Ctx) {
      if (instance.reportRunStatus === undefined) return;
      expectEqual(typeof instance.reportRunStatus, 'function', 'typeof reportRunStatus');
      const repository = harness.repository ?? { id: '1', fullName: 'acme/widgets' };
      for (const sha of ['', '--output=/tmp/x', 'main; rm -rf /']) {
        const request: RunStatusReport = {
          source: harness.source,
          repository,
          run: { id: '00000000-0000-4000-8000-000000000001', orgId: harness.source.orgId, workflow: 'ci', sha, ref: null, eventName: 'push', status: 'queued', reason: null, createdAt: new Date(0).toISOString(), startedAt: null, finishedAt: null, url: 'https://ci.example.test/runs/1' },
          state: 'queued',
          conclusion: null,
          title: 'ci: queued',
          summary: 'queued',
          externalId: null,
        };
        let result: RunStatusResult | undefined;
        try {
          result = await instance.reportRunStatus(request);
        } catch (error) {
          expectSvcError(error, { kind: 'input' }, `reportRunStatus(sha ${show(sha)})`);
          continue;
        }
        expect(result?.outcome === 'skipped' && typeof result.reason === 'string' && result.reason !== '', `reportRunStatus(sha ${show(sha)}) must answer { outcome: 'skipped', reason } or reject with an input SvcError, got ${show(result)}`);
      }
    },
  },
];

export const providerContract: ContractSuite<'provider', ProviderHarness> = { kind: 'provider', points };
