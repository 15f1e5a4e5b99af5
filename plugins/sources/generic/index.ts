// The built-in generic webhook source (spec "Generic webhook extras"): reads the event type and
// delivery id where the source's settings say (a header or a dot path into the JSON payload) and
// normalizes the delivery to a `webhook` event whose action is the user-defined event name.
// Per-source settings live with the source (svc-admin source add generic); sources may also be
// declared statically in this plugin's config slice.
import { Type } from 'typebox';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { GenericDelivery, GenericSourceExtensionPoint } from '../../../core/extension-points/generic-source.ts';
import type { NormalizedEvent } from '../../../schemas/event.ts';
import { GenericSourceConfig, type GenericFieldLocation } from '../../../schemas/plugin.ts';

const MAX_FIELD_LENGTH = 200;

/** A value at a header or a payload dot path, as text; null when absent or not a scalar. */
export function readLocation(location: GenericFieldLocation | undefined, delivery: Pick<GenericDelivery, 'headers' | 'payload'>): string | null {
  if (location === undefined) return null;
  let value: unknown;
  if ('header' in location) {
    const raw = delivery.headers[location.header.toLowerCase()];
    value = Array.isArray(raw) ? raw[0] : raw;
  } else {
    value = delivery.payload;
    for (const part of location.payloadField.split('.')) {
      if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part)) return null;
      value = (value as Record<string, unknown>)[part];
    }
  }
  if (typeof value === 'number' && Number.isFinite(value)) value = String(value);
  if (typeof value !== 'string') return null;
  const text = value.trim();
  return text === '' || text.length > MAX_FIELD_LENGTH ? null : text;
}

export function normalizeGeneric(delivery: GenericDelivery, eventType: string): NormalizedEvent {
  const sender = readLocation({ payloadField: 'sender' }, delivery) ?? readLocation({ payloadField: 'sender.login' }, delivery) ?? delivery.sourceId;
  return {
    provider: 'generic',
    type: 'webhook',
    providerEvent: eventType,
    action: eventType,
    eventName: `webhook:${eventType}`,
    repository: null,
    ref: null,
    branch: null,
    tag: null,
    sha: null,
    beforeSha: null,
    deleted: false,
    sender: { login: sender, id: null },
    commitMessage: null,
    changedFiles: null,
    pullRequest: null,
    comment: null,
    installationId: null,
    customEventName: null,
  };
}

const StaticSource = Type.Object(
  { orgId: Type.String({ minLength: 1 }), sourceId: Type.String({ minLength: 1 }), settings: GenericSourceConfig },
  { additionalProperties: false },
);

export const genericSourcePlugin = definePlugin({
  id: 'generic',
  kind: 'generic-source',
  version: '1.0.0',
  kernelRange: '>=0.9.0 <1.0.0',
  description: 'Generic webhook sources: HMAC, bearer, IP allowlist or no signature; event type and delivery id from a header or payload field',
  configSchema: Type.Object({ sources: Type.Array(StaticSource, { default: [] }) }, { additionalProperties: false }),
  create: ({ config }): GenericSourceExtensionPoint => ({
    sourceConfig: async (orgId, sourceId) => config.sources.find((s) => s.orgId === orgId && s.sourceId === sourceId)?.settings ?? null,
    eventType: (settings, delivery) => readLocation(settings.eventType, delivery),
    deliveryId: (settings, delivery) => readLocation(settings.deliveryId, delivery),
    normalize: (_settings, delivery, eventType) => normalizeGeneric(delivery, eventType),
  }),
});

export default genericSourcePlugin;
