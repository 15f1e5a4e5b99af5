// The generic webhook source contract. The kernel enforces each source's signature mode (HMAC,
// bearer, IP allowlist, none); the plugin's part is to hand back each source's settings exactly
// as declared (a plugin that drops or rewrites `signature` would open the door), to read event
// type and delivery id where the settings say, and to normalize to a `webhook` event.
import { NormalizedEvent } from '../../../schemas/event.ts';
import { GenericSourceConfig, type GenericSignatureMode } from '../../../schemas/plugin.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import type { GenericDelivery } from '../generic-source.ts';
import { expect, expectEqual, show } from './check.ts';
import type { BaseHarness, ContractContext, ContractPoint, ContractSuite } from './types.ts';

export const GENERIC_SIGNATURE_MODES: readonly GenericSignatureMode[] = ['hmac', 'bearer', 'ip-allowlist', 'none'];

export interface DeclaredGenericSource {
  orgId: string;
  sourceId: string;
  settings: GenericSourceConfig;
}

export interface GenericSourceHarness extends BaseHarness<'generic-source'> {
  /** Sources the config slice declares, at least one per signature mode (see genericSampleSources). */
  sources: readonly DeclaredGenericSource[];
}

/** One source per signature mode, for a harness whose plugin takes sources in its config slice. */
export function genericSampleSources(orgId = 'org-contract'): DeclaredGenericSource[] {
  const base = { maxPayloadBytes: 65_536, rateLimitRpm: 600, idempotencyWindowSeconds: 3600, eventType: { header: 'x-event-type' } };
  const signatures: Record<GenericSignatureMode, GenericSourceConfig['signature']> = {
    hmac: { mode: 'hmac', header: 'x-signature' },
    bearer: { mode: 'bearer' },
    'ip-allowlist': { mode: 'ip-allowlist', allow: ['10.0.0.0/8', '2001:db8::1'] },
    none: { mode: 'none' },
  };
  return GENERIC_SIGNATURE_MODES.map((mode) => ({
    orgId,
    sourceId: `source-${mode}`,
    settings: { ...base, signature: signatures[mode], ...(mode === 'hmac' ? { deliveryId: { payloadField: 'meta.id' } } : {}) },
  }));
}

type Ctx = ContractContext<'generic-source', GenericSourceHarness>;
const checkSettings = compileSchema(GenericSourceConfig);
const checkEvent = compileSchema(NormalizedEvent);

function settingsWith(over: Partial<GenericSourceConfig>): GenericSourceConfig {
  return { signature: { mode: 'none' }, maxPayloadBytes: 1024, rateLimitRpm: 60, idempotencyWindowSeconds: 0, eventType: { header: 'x-event-type' }, ...over };
}

function delivery(headers: Record<string, string>, payload: unknown): GenericDelivery {
  const body = Buffer.from(JSON.stringify(payload));
  return { orgId: 'org-contract', sourceId: 'source-x', headers, body, payload, remoteAddress: '127.0.0.1' };
}

const points: ContractPoint<'generic-source', GenericSourceHarness>[] = [
  {
    point: 'source config: the harness declares a source for every signature mode',
    async run({ harness }: Ctx) {
      const modes = new Set(harness.sources.map((s) => s.settings.signature.mode));
      const missing = GENERIC_SIGNATURE_MODES.filter((m) => !modes.has(m));
      expectEqual(missing, [], 'signature modes without a declared source');
    },
  },
  {
    point: 'source config: each source comes back valid with its signature settings unchanged',
    async run({ instance, harness }: Ctx) {
      for (const source of harness.sources) {
        const got = await instance.sourceConfig(source.orgId, source.sourceId);
        const result = checkSettings.validate(got);
        if (!result.ok) throw new Error(`sourceConfig(${source.orgId}, ${source.sourceId}) is not valid settings: ${formatIssues(result.issues)}`);
        expectEqual(result.value.signature, source.settings.signature, `signature settings of ${source.sourceId}`);
        expectEqual(result.value, source.settings, `settings of ${source.sourceId}`);
      }
    },
  },
  {
    point: 'source config: an unknown org or source is null',
    async run({ instance, harness }: Ctx) {
      const known = harness.sources[0];
      expect(known !== undefined, 'the harness declares no source');
      expectEqual(await instance.sourceConfig(known.orgId, 'no-such-source'), null, 'sourceConfig(org, unknown source)');
      expectEqual(await instance.sourceConfig('no-such-org', known.sourceId), null, 'sourceConfig(unknown org, source)');
    },
  },
  {
    point: 'event type: read from a header or a payload dot path',
    async run({ instance }: Ctx) {
      const fromHeader = settingsWith({ eventType: { header: 'X-Event-Type' } });
      expectEqual(instance.eventType(fromHeader, delivery({ 'x-event-type': 'deploy' }, {})), 'deploy', 'event type from a header');
      const fromPayload = settingsWith({ eventType: { payloadField: 'event.type' } });
      expectEqual(instance.eventType(fromPayload, delivery({}, { event: { type: 'release' } })), 'release', 'event type from event.type');
    },
  },
  {
    point: 'event type: absent, empty, non-scalar or oversized values are null',
    async run({ instance }: Ctx) {
      const settings = settingsWith({ eventType: { payloadField: 'event.type' } });
      for (const payload of [{}, { event: null }, { event: { type: '' } }, { event: { type: { nested: 1 } } }, { event: { type: ['a'] } }, { event: { type: 'x'.repeat(201) } }, { 'event.type': 'flat' }]) {
        expectEqual(instance.eventType(settings, delivery({}, payload)), null, `event type of ${show(payload)}`);
      }
      expectEqual(instance.eventType(settingsWith({}), delivery({}, {})), null, 'event type without its header');
    },
  },
  {
    point: 'delivery id: read where the settings say; no location gives null',
    async run({ instance }: Ctx) {
      const inPayload = settingsWith({ deliveryId: { payloadField: 'meta.id' } });
      expectEqual(instance.deliveryId(inPayload, delivery({}, { meta: { id: 'd-42' } })), 'd-42', 'delivery id from meta.id');
      expectEqual(instance.deliveryId(inPayload, delivery({}, { meta: { id: 42 } })), '42', 'a numeric delivery id as text');
      const inHeader = settingsWith({ deliveryId: { header: 'x-delivery' } });
      expectEqual(instance.deliveryId(inHeader, delivery({ 'x-delivery': 'h-1' }, {})), 'h-1', 'delivery id from a header');
      expectEqual(instance.deliveryId(settingsWith({}), delivery({ 'x-delivery': 'h-1' }, { meta: { id: 'x' } })), null, 'no delivery id location');
    },
  },
  {
    point: 'normalize: a webhook event (schemas/event.ts) whose action is the event type',
    async run({ instance }: Ctx) {
      const event = instance.normalize(settingsWith({}), delivery({ 'x-event-type': 'deploy' }, { sender: 'ci-bot', any: [1, 2] }), 'deploy');
      const result = checkEvent.validate(event);
      if (!result.ok) throw new Error(`the normalized event does not match schemas/event.ts: ${formatIssues(result.issues)}`);
      expectEqual(result.value.type, 'webhook', 'event.type');
      expectEqual(result.value.action, 'deploy', 'event.action');
      expectEqual(result.value.providerEvent, 'deploy', 'event.providerEvent');
    },
  },
];

export const genericSourceContract: ContractSuite<'generic-source', GenericSourceHarness> = { kind: 'generic-source', points };
