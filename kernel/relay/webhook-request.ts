// What the relay reads from an inbound webhook's headers: routing key, delivery id, event type,
// and the headers it forwards. Both the spec's `X-Provider-*` names and GitHub's real names are
// accepted (interfaces.md, "Provider kinds and webhook headers").
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024; // spec Limits: 413 above 25 MiB

const TARGET_ID_HEADERS = ['x-provider-hook-installation-target-id', 'x-github-hook-installation-target-id'];
const DELIVERY_HEADERS = ['x-provider-delivery', 'x-github-delivery'];
/** Generic sources: where a sender commonly puts an idempotency key. */
const GENERIC_DELIVERY_HEADERS = [...DELIVERY_HEADERS, 'x-delivery-id', 'idempotency-key'];
const EVENT_HEADERS = ['x-provider-event', 'x-github-event'];
const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;

/** Connection-level headers: meaningful only between the provider and the relay. */
const HOP_BY_HOP = new Set([
  'host',
  'connection',
  'keep-alive',
  'content-length',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
]);

export function firstHeader(headers: IncomingHttpHeaders, names: readonly string[]): string | undefined {
  for (const name of names) {
    const raw = headers[name];
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

/** `<provider_kind>:<target id>`, or `generic:<source_id>` for generic sources. */
export function routingKeyOf(providerKind: string, sourceId: string | undefined, headers: IncomingHttpHeaders): string {
  if (sourceId !== undefined) return `generic:${sourceId}`;
  return `${providerKind}:${firstHeader(headers, TARGET_ID_HEADERS) ?? ''}`;
}

/** The provider's delivery id, or a fresh UUID when there is none usable (generic sources). */
export function deliveryIdOf(headers: IncomingHttpHeaders, generic: boolean): { deliveryId: string; fromProvider: boolean } {
  const given = firstHeader(headers, generic ? GENERIC_DELIVERY_HEADERS : DELIVERY_HEADERS);
  if (given !== undefined && DELIVERY_ID.test(given)) return { deliveryId: given, fromProvider: true };
  return { deliveryId: randomUUID(), fromProvider: false };
}

export function eventTypeOf(headers: IncomingHttpHeaders): string | undefined {
  return firstHeader(headers, EVENT_HEADERS);
}

/** Lower-cased headers the orchestrator may need (signatures, event metadata, a generic source's own). */
export function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
