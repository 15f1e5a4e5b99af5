// One attempt of a run-status webhook: the JSON body (schemas/run-status-webhook.ts), signed with
// HMAC-SHA256 over the exact bytes sent, POSTed with a time limit. A 2xx answer delivers; any
// other answer, a redirect (never followed: the configured URL is the one trusted) or a network
// error is a failure the worker retries.
import { RUN_STATUS_WEBHOOK_HEADERS, RUN_STATUS_WEBHOOK_TYPE, RunStatusWebhookPayload } from '../../../schemas/run-status-webhook.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { KERNEL_VERSION } from '../../../core/plugins/version.ts';
import { SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';
import { hmacSha256Hex } from '../../services/crypto/hmac.ts';
import type { OpenedStatusWebhook } from './webhook-config.ts';
import type { RunView } from './report.ts';
import type { LeasedDelivery } from './store.ts';

const checkPayload = compileSchema(RunStatusWebhookPayload);
const USER_AGENT = `svc-forge-status/${KERNEL_VERSION}`;
/** Bytes of an error answer kept for the delivery's last error. */
const ERROR_BODY_BYTES = 300;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function webhookPayload(delivery: LeasedDelivery, run: RunView, url: string, now: Date): RunStatusWebhookPayload {
  const payload: RunStatusWebhookPayload = {
    type: RUN_STATUS_WEBHOOK_TYPE,
    deliveryId: delivery.id,
    sentAt: now.toISOString(),
    attempt: delivery.attempts,
    run: {
      id: run.id,
      orgId: run.org_id,
      repository: run.repository,
      workflow: run.workflow,
      status: delivery.run_status,
      state: delivery.state,
      conclusion: delivery.conclusion,
      reason: run.reason,
      sha: run.sha,
      ref: run.ref,
      event: run.event_name,
      url,
      changedAt: iso(delivery.changed_at)!,
      createdAt: iso(run.created_at)!,
      startedAt: iso(run.started_at),
      finishedAt: iso(run.finished_at),
    },
    source: { id: delivery.source_id, providerKind: delivery.provider_kind },
  };
  // What leaves is what the schema (and docs/forge-status.md) promises.
  const checked = checkPayload.validate(payload);
  if (!checked.ok) throw new SvcError('SVC_ERR_INTERNAL', `run-status webhook payload does not match its schema: ${formatIssues(checked.issues)}`);
  return payload;
}

/** The request as sent: body bytes and headers (the signature covers exactly these bytes). */
export function signedRequest(payload: RunStatusWebhookPayload, secret: string, now: Date): { body: Buffer; headers: Record<string, string> } {
  const body = Buffer.from(JSON.stringify(payload), 'utf8');
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      [RUN_STATUS_WEBHOOK_HEADERS.event]: RUN_STATUS_WEBHOOK_TYPE,
      [RUN_STATUS_WEBHOOK_HEADERS.delivery]: payload.deliveryId,
      [RUN_STATUS_WEBHOOK_HEADERS.timestamp]: String(Math.floor(now.getTime() / 1000)),
      [RUN_STATUS_WEBHOOK_HEADERS.signature]: `sha256=${hmacSha256Hex(secret, body)}`,
    },
  };
}

/** The URL without its query, for messages (a query may carry a receiver's routing token). */
function shown(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}`;
  } catch {
    return url.slice(0, 200);
  }
}

/** POSTs the notification; resolves with the status code of a 2xx answer, throws otherwise (details.statusCode when one came). */
export async function postWebhook(webhook: OpenedStatusWebhook, payload: RunStatusWebhookPayload, options: { timeoutMs: number; now: Date }): Promise<number> {
  const { body, headers } = signedRequest(payload, webhook.secret, options.now);
  let response: Response;
  try {
    response = await fetch(webhook.url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(options.timeoutMs) });
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${options.timeoutMs} ms` : messageOf(cause ?? error);
    throw new UnavailableError('SVC_ERR_FORGE_STATUS_WEBHOOK_UNREACHABLE', `the run-status webhook ${shown(webhook.url)} could not be reached: ${reason}`, { cause: error });
  }
  let text = '';
  try {
    text = (await response.text()).slice(0, ERROR_BODY_BYTES);
  } catch {
    // The status is what counts.
  }
  if (response.status >= 200 && response.status < 300) return response.status;
  const detail = text.replace(/\s+/g, ' ').trim();
  throw new UnavailableError('SVC_ERR_FORGE_STATUS_WEBHOOK_HTTP', `the run-status webhook ${shown(webhook.url)} answered HTTP ${response.status}${detail ? `: ${detail}` : ''}`, {
    details: { statusCode: response.status },
  });
}
