// Delivery headers of GitHub-shaped webhooks. GitHub sends `X-GitHub-*` names; the spec (and our
// own post-receive hook) sends `X-Provider-*` equivalents; both families are read. The `git`
// provider reuses this, since its deliveries are GitHub-shaped too.
import type {
  HeaderExtraction,
  ProviderDeliveryHeaders,
  RawDelivery,
  SignatureInput,
  WebhookHeaders,
} from '../../../core/extension-points/provider.ts';

/** Header names per field, GitHub's first. Lower-case, as node:http gives them. */
export const HEADER_NAMES = {
  event: ['x-github-event', 'x-provider-event'],
  delivery: ['x-github-delivery', 'x-provider-delivery'],
  targetId: ['x-github-hook-installation-target-id', 'x-provider-hook-installation-target-id'],
  targetType: ['x-github-hook-installation-target-type', 'x-provider-hook-installation-target-type'],
  signature: ['x-hub-signature-256'],
} as const;

/** Display names for refusals (what an operator greps their forge's delivery log for). */
const DISPLAY: Record<string, string> = {
  'x-github-event': 'X-GitHub-Event',
  'x-provider-event': 'X-Provider-Event',
  'x-github-delivery': 'X-GitHub-Delivery',
  'x-provider-delivery': 'X-Provider-Delivery',
  'x-github-hook-installation-target-id': 'X-GitHub-Hook-Installation-Target-ID',
  'x-provider-hook-installation-target-id': 'X-Provider-Hook-Installation-Target-ID',
  'x-github-hook-installation-target-type': 'X-GitHub-Hook-Installation-Target-Type',
  'x-provider-hook-installation-target-type': 'X-Provider-Hook-Installation-Target-Type',
  'x-hub-signature-256': 'X-Hub-Signature-256',
};

const EVENT = /^[a-z][a-z0-9_.-]{0,63}$/;
const DELIVERY = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;

export interface HeaderRules {
  /** Pattern the target id must match (GitHub: a numeric App id; git: a source id). */
  targetId: RegExp;
  /** What the target id is, for messages. */
  targetIdMeaning: string;
}

type Read = { ok: true; value: string | undefined; name: string } | { ok: false; missing: string; message: string };

/** One field from either header family; a repeated header or two families that disagree are refused. */
function read(headers: WebhookHeaders, names: readonly string[]): Read {
  let found: { value: string; name: string } | undefined;
  for (const name of names) {
    const raw = headers[name] ?? headers[DISPLAY[name] ?? name];
    if (raw === undefined) continue;
    if (Array.isArray(raw)) {
      if (raw.length !== 1) return { ok: false, missing: DISPLAY[name] ?? name, message: `${DISPLAY[name] ?? name} appears more than once` };
    }
    const value = (Array.isArray(raw) ? raw[0]! : raw).trim();
    if (found && found.value !== value) {
      return {
        ok: false,
        missing: DISPLAY[name] ?? name,
        message: `${DISPLAY[found.name] ?? found.name} and ${DISPLAY[name] ?? name} disagree; send one of them`,
      };
    }
    found ??= { value, name };
  }
  return { ok: true, value: found?.value, name: found?.name ?? names[0]! };
}

/** Refusal naming the header at fault (the one received, else the first of its family). */
function refuse(name: string, message: string): HeaderExtraction {
  return { ok: false, missing: DISPLAY[name] ?? name, message };
}

function either(names: readonly string[]): string {
  return names.map((n) => DISPLAY[n] ?? n).join(' or ');
}

/** Read and check the delivery headers; every refusal names the header at fault. */
export function extractDeliveryHeaders(headers: WebhookHeaders, rules: HeaderRules): HeaderExtraction {
  const event = read(headers, HEADER_NAMES.event);
  if (!event.ok) return event;
  if (!event.value) return refuse(event.name, `${either(HEADER_NAMES.event)} is required (the event type, e.g. push)`);
  if (!EVENT.test(event.value)) return refuse(event.name, `${DISPLAY[event.name]} must be an event name like push or pull_request`);

  const delivery = read(headers, HEADER_NAMES.delivery);
  if (!delivery.ok) return delivery;
  if (!delivery.value) return refuse(delivery.name, `${either(HEADER_NAMES.delivery)} is required (a unique delivery id)`);
  if (!DELIVERY.test(delivery.value)) {
    return refuse(delivery.name, `${DISPLAY[delivery.name]} must be 1-128 characters of letters, digits, '.', '_', ':' or '-'`);
  }

  const targetId = read(headers, HEADER_NAMES.targetId);
  if (!targetId.ok) return targetId;
  if (!targetId.value) return refuse(targetId.name, `${either(HEADER_NAMES.targetId)} is required (${rules.targetIdMeaning})`);
  if (!rules.targetId.test(targetId.value)) {
    return refuse(targetId.name, `${DISPLAY[targetId.name]} must be ${rules.targetIdMeaning}`);
  }

  const targetType = read(headers, HEADER_NAMES.targetType);
  if (!targetType.ok) return targetType;
  if (targetType.value !== undefined && targetType.value !== 'integration') {
    return refuse(
      targetType.name,
      `${DISPLAY[targetType.name]} is "${targetType.value.slice(0, 40).replace(/[^\x20-\x7e]/g, "?")}" but must be "integration": only App (integration) webhooks are accepted, not repository or organization hooks`,
    );
  }

  const signature = read(headers, HEADER_NAMES.signature);
  if (!signature.ok) return signature;

  const out: ProviderDeliveryHeaders = { eventType: event.value, deliveryId: delivery.value, targetId: targetId.value };
  if (targetType.value !== undefined) out.targetType = targetType.value;
  if (signature.value !== undefined) out.signature = signature.value;
  return { ok: true, headers: out };
}

/** The exact body bytes and the claimed hex digest (`sha256=` stripped); a malformed header claims nothing. */
export function hubSignatureInput(delivery: RawDelivery): SignatureInput {
  const match = delivery.headers.signature === undefined ? null : SIGNATURE.exec(delivery.headers.signature.trim());
  return { algorithm: 'hmac-sha256', signedBytes: delivery.body, signature: match ? match[1]!.toLowerCase() : null };
}
