// Delivery headers of Gitea and Forgejo webhooks. Gitea sends `X-Gitea-*`; Forgejo sends the
// same fields under `X-Forgejo-*` (and, for compatibility, usually the Gitea names too). Either
// family is read; a repeated header or two families that disagree are refused, so a proxy that
// adds a header cannot change what was signed-for without being noticed.
import type { HeaderExtraction, ProviderDeliveryHeaders, RawDelivery, SignatureInput, WebhookHeaders } from 'svc/plugin';

/** Lower-case names per field, as node:http gives them; Gitea's first. */
export const HEADER_NAMES = {
  event: ['x-gitea-event', 'x-forgejo-event'],
  delivery: ['x-gitea-delivery', 'x-forgejo-delivery'],
  signature: ['x-gitea-signature', 'x-forgejo-signature'],
} as const;

/** Names as the forge's delivery log shows them, for refusals an operator can search for. */
const DISPLAY: Record<string, string> = {
  'x-gitea-event': 'X-Gitea-Event',
  'x-forgejo-event': 'X-Forgejo-Event',
  'x-gitea-delivery': 'X-Gitea-Delivery',
  'x-forgejo-delivery': 'X-Forgejo-Delivery',
  'x-gitea-signature': 'X-Gitea-Signature',
  'x-forgejo-signature': 'X-Forgejo-Signature',
};

const EVENT = /^[a-z][a-z0-9_.-]{0,63}$/;
const DELIVERY = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** Gitea signs with bare lower-case hex: no `sha256=` prefix. */
const SIGNATURE = /^[0-9a-fA-F]{64}$/;

type Read = { ok: true; value: string | undefined; name: string } | { ok: false; missing: string; message: string };

function display(name: string): string {
  return DISPLAY[name] ?? name;
}

/** One field from either family. */
function read(headers: WebhookHeaders, names: readonly string[]): Read {
  let found: { value: string; name: string } | undefined;
  for (const name of names) {
    const raw = headers[name];
    if (raw === undefined) continue;
    if (Array.isArray(raw) && raw.length !== 1) return { ok: false, missing: display(name), message: `${display(name)} appears more than once` };
    const value = String(Array.isArray(raw) ? raw[0] : raw).trim();
    if (found && found.value !== value) {
      return { ok: false, missing: display(name), message: `${display(found.name)} and ${display(name)} disagree; send one of them` };
    }
    found ??= { value, name };
  }
  return { ok: true, value: found?.value, name: found?.name ?? names[0]! };
}

function refuse(name: string, message: string): HeaderExtraction {
  return { ok: false, missing: display(name), message };
}

const either = (names: readonly string[]): string => names.map(display).join(' or ');

/** Event, delivery id and signature; every refusal names the header at fault. */
export function extractGiteaHeaders(headers: WebhookHeaders): HeaderExtraction {
  const event = read(headers, HEADER_NAMES.event);
  if (!event.ok) return event;
  if (!event.value) return refuse(event.name, `${either(HEADER_NAMES.event)} is required (the event type, e.g. push)`);
  if (!EVENT.test(event.value)) return refuse(event.name, `${display(event.name)} must be an event name like push or pull_request`);

  const delivery = read(headers, HEADER_NAMES.delivery);
  if (!delivery.ok) return delivery;
  if (!delivery.value) return refuse(delivery.name, `${either(HEADER_NAMES.delivery)} is required (the delivery's UUID)`);
  if (!DELIVERY.test(delivery.value)) {
    return refuse(delivery.name, `${display(delivery.name)} must be 1-128 characters of letters, digits, '.', '_', ':' or '-'`);
  }

  const signature = read(headers, HEADER_NAMES.signature);
  if (!signature.ok) return signature;

  const out: ProviderDeliveryHeaders = { eventType: event.value, deliveryId: delivery.value };
  if (signature.value !== undefined) out.signature = signature.value;
  return { ok: true, headers: out };
}

/**
 * The exact body bytes and the hex digest Gitea claims. A malformed value (wrong length, a
 * `sha256=` prefix Gitea never sends) claims nothing, so the kernel refuses the delivery.
 */
export function giteaSignatureInput(delivery: RawDelivery): SignatureInput {
  const value = delivery.headers.signature?.trim();
  return {
    algorithm: 'hmac-sha256',
    signedBytes: delivery.body,
    signature: value !== undefined && SIGNATURE.test(value) ? value.toLowerCase() : null,
  };
}
