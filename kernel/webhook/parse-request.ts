// What the front door reads from an inbound webhook before and after its body: the path (org,
// provider kind or generic source), the routing key, the declared length, the delivery id, the
// event type and the headers passed on. Both the spec's `X-Provider-*` names and GitHub's real
// names are accepted (interfaces.md, "Provider kinds and webhook headers").
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024; // spec Limits: 413 above 25 MiB

/** Org ids and generic source ids are plain path segments (as sources and orgs are created). */
const ID_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const PROVIDER_KIND = /^[a-z][a-z0-9-]{0,39}$/;
const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;

const TARGET_ID_HEADERS = ['x-provider-hook-installation-target-id', 'x-github-hook-installation-target-id'];
const DELIVERY_HEADERS = ['x-provider-delivery', 'x-github-delivery'];
/** Generic sources: where a sender commonly puts an idempotency key. */
const GENERIC_DELIVERY_HEADERS = [...DELIVERY_HEADERS, 'x-delivery-id', 'idempotency-key'];
const EVENT_HEADERS = ['x-provider-event', 'x-github-event'];

/** Connection-level headers: meaningful only between the sender and the front door. */
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

/** Route parameters of `/webhook/:orgId/:providerKind` and `/webhook/:orgId/generic/:sourceId`. */
export interface WebhookParams {
  orgId: string;
  providerKind?: string;
  sourceId?: string;
}

export function isValidOrgId(orgId: string): boolean {
  return ID_SEGMENT.test(orgId);
}

/** Whether the kind or source segment can name a source at all (else: unknown source, no lookup). */
export function isValidSourcePath(params: WebhookParams): boolean {
  if (params.sourceId !== undefined) return ID_SEGMENT.test(params.sourceId);
  const kind = params.providerKind ?? '';
  return kind !== 'generic' && PROVIDER_KIND.test(kind);
}

export function firstHeader(headers: IncomingHttpHeaders, names: readonly string[]): string | undefined {
  for (const name of names) {
    const raw = headers[name];
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

/** `<provider_kind>:<target id>`, or `generic:<source_id>` for generic sources (the key sources are stored under). */
export function routingKeyOf(providerKind: string, sourceId: string | undefined, headers: IncomingHttpHeaders): string {
  if (sourceId !== undefined) return `generic:${sourceId}`;
  return `${providerKind}:${firstHeader(headers, TARGET_ID_HEADERS) ?? ''}`;
}

/** The declared Content-Length, or NaN when there is none (chunked): then the limit bites while streaming. */
export function declaredLength(headers: IncomingHttpHeaders): number {
  const raw = headers['content-length'];
  return raw === undefined ? Number.NaN : Number(raw);
}

/**
 * The forge's own `X-<Kind>-Delivery` header (`X-Gitea-Delivery` for kind `gitea`): forges follow
 * GitHub's naming, so a provider plugin's deliveries keep their ids (dedup by id) without the front
 * door knowing that plugin.
 */
function kindDeliveryHeader(providerKind: string | undefined): string | undefined {
  return providerKind !== undefined && PROVIDER_KIND.test(providerKind) ? `x-${providerKind}-delivery` : undefined;
}

/** The provider's delivery id, or a fresh UUID when there is none usable (generic sources). */
export function deliveryIdOf(headers: IncomingHttpHeaders, generic: boolean, providerKind?: string): { deliveryId: string; fromProvider: boolean } {
  const own = generic ? undefined : kindDeliveryHeader(providerKind);
  const given = firstHeader(headers, generic ? GENERIC_DELIVERY_HEADERS : DELIVERY_HEADERS) ?? (own === undefined ? undefined : firstHeader(headers, [own]));
  if (given !== undefined && DELIVERY_ID.test(given)) return { deliveryId: given, fromProvider: true };
  return { deliveryId: randomUUID(), fromProvider: false };
}

export function eventTypeOf(headers: IncomingHttpHeaders): string | undefined {
  return firstHeader(headers, EVENT_HEADERS);
}

/** Lower-cased headers the orchestrator may need (signatures, event metadata, a generic source's own). */
export function forwardedHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
