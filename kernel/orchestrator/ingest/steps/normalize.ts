// Step 5: the provider turns its payload into the one event shape matching reads; the kernel
// validates the result, so a provider bug is a recorded skip, never a bad match.
import { NormalizedEvent } from '../../../../schemas/event.ts';
import { compileSchema, formatIssues } from '../../../../schemas/validate.ts';
import type { SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';
import { messageOf } from '../../../../core/errors.ts';
import type { IncomingDelivery } from '../types.ts';

const eventCheck = compileSchema(NormalizedEvent);

export type Normalized = { ok: true; event: NormalizedEvent; payload: unknown } | { ok: false; reason: string };

export function parsePayload(body: Buffer): { ok: true; payload: unknown } | { ok: false; reason: string } {
  try {
    return { ok: true, payload: JSON.parse(body.toString('utf8')) };
  } catch (error) {
    return { ok: false, reason: `the body is not JSON: ${messageOf(error)}` };
  }
}

export function checkEvent(value: unknown): { ok: true; event: NormalizedEvent } | { ok: false; reason: string } {
  const checked = eventCheck.validate(value);
  return checked.ok ? { ok: true, event: checked.value } : { ok: false, reason: `normalized event is invalid: ${formatIssues(checked.issues)}` };
}

export function normalizeDelivery(provider: SourceProviderExtensionPoint, delivery: IncomingDelivery): Normalized {
  const parsed = parsePayload(delivery.body);
  if (!parsed.ok) return parsed;
  const extracted = provider.extractHeaders(delivery.headers);
  if (!extracted.ok) return { ok: false, reason: `header ${extracted.missing}: ${extracted.message}` };
  let value: unknown;
  try {
    value = provider.normalize({ headers: extracted.headers, body: delivery.body }, parsed.payload);
  } catch (error) {
    return { ok: false, reason: `the provider could not normalize the event: ${messageOf(error)}` };
  }
  const checked = checkEvent(value);
  return checked.ok ? { ok: true, event: checked.event, payload: parsed.payload } : checked;
}
