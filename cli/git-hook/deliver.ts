// Sending one signed push webhook: HMAC-SHA256 over the exact body bytes, the spec's
// `X-Provider-*` headers, bounded retries of transient failures inside a deadline.
import { createHmac, randomUUID } from 'node:crypto';

export const MAX_ATTEMPTS = 3;
const BACKOFF_MS = [500, 1500];

export interface DeliveryRequest {
  url: string;
  secret: string;
  sourceId: string;
  event: string;
  body: Buffer;
  /** Epoch ms after which no attempt starts and any attempt is cut off. */
  deadline: number;
  deliveryId?: string;
  /**
   * The clock `deadline` is on, and the signal that cuts an attempt off after `ms` of it; default
   * Date.now and AbortSignal.timeout. Callers in-process (tests) move time with their own instead
   * of waiting out the budget; no flag or setting reaches these.
   */
  now?: () => number;
  timeout?: (ms: number) => AbortSignal;
}

export interface DeliveryResult {
  deliveryId: string;
  ok: boolean;
  /** Last HTTP status, null when no answer arrived. */
  status: number | null;
  /** `status` field of the JSON answer (`buffered`, `accepted`, …) or a reason on failure. */
  outcome: string;
  attempts: number;
}

export function signatureHeader(secret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

function transient(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function retryAfterMs(value: string | null): number | null {
  if (value === null) return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : null;
}

async function outcomeOf(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { status?: unknown; error?: { code?: unknown; message?: unknown } };
    if (typeof body.status === 'string') return body.status;
    if (body.error && typeof body.error.message === 'string') return `${String(body.error.code ?? 'error')}: ${body.error.message}`.slice(0, 200);
  } catch {
    // not JSON
  }
  return text.trim().split('\n')[0]?.slice(0, 200) || response.statusText || 'no body';
}

export async function deliverWebhook(request: DeliveryRequest): Promise<DeliveryResult> {
  const deliveryId = request.deliveryId ?? randomUUID();
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'svc-hook/post-receive',
    'x-provider-event': request.event,
    'x-provider-delivery': deliveryId,
    'x-provider-hook-installation-target-id': request.sourceId,
    'x-provider-hook-installation-target-type': 'integration',
    'x-hub-signature-256': signatureHeader(request.secret, request.body),
  };
  const now = request.now ?? Date.now;
  const timeout = request.timeout ?? ((ms: number) => AbortSignal.timeout(ms));
  let last: DeliveryResult = { deliveryId, ok: false, status: null, outcome: 'not sent: no time left', attempts: 0 };
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const remaining = request.deadline - now();
    if (remaining <= 0) break;
    let wait = BACKOFF_MS[attempt - 1] ?? 0;
    try {
      const response = await fetch(request.url, { method: 'POST', headers, body: request.body, signal: timeout(remaining), redirect: 'error' });
      const outcome = await outcomeOf(response);
      last = { deliveryId, ok: response.ok, status: response.status, outcome, attempts: attempt };
      if (response.ok || !transient(response.status)) return last;
      const hinted = retryAfterMs(response.headers.get('retry-after'));
      if (hinted !== null) wait = hinted;
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = (error as Error).name === 'TimeoutError' ? 'timed out' : (cause?.code ?? cause?.message ?? (error as Error).message);
      last = { deliveryId, ok: false, status: null, outcome: reason, attempts: attempt };
    }
    if (attempt === MAX_ATTEMPTS) break;
    // Never sleep past the deadline: the push is waiting on us.
    if (now() + wait >= request.deadline) break;
    await sleep(wait);
  }
  return last;
}
