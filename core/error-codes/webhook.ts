// The webhook front door (kernel/webhook), served by the relay and by an orchestrator in
// independent mode: one code per row of the spec's "Webhook ingest status codes" table, the same
// on both. The statuses are in kernel/webhook/status-codes.ts.
// How to add a code: docs/conventions.md, "Error codes".
import type { ErrorCatalogue } from './catalogue.ts';

export const WEBHOOK_ERROR_CODES = {
  // WEBHOOK
  SVC_ERR_WEBHOOK_BODY_TOO_LARGE: { kind: 'input', message: 'webhook body of {bytes} bytes is larger than the limit of {limit} bytes' },
  SVC_ERR_WEBHOOK_BUFFER_FULL: { kind: 'unavailable', message: 'the relay\'s buffer for org "{orgId}" is full; retry later' },
  SVC_ERR_WEBHOOK_BUFFER_UNAVAILABLE: { kind: 'unavailable', message: 'the relay cannot store this delivery right now; retry later' },
  SVC_ERR_WEBHOOK_RATE_LIMITED: { kind: 'rate_limited', message: 'too many webhooks from this client address, for org "{orgId}" or for source "{routingKey}"; retry later' },
  SVC_ERR_WEBHOOK_SHED: { kind: 'rate_limited', message: 'the orchestrator is shedding load; retry later' },
  SVC_ERR_WEBHOOK_SIGNATURE_REJECTED: { kind: 'authentication', message: 'the webhook signature does not verify against the source secret' },
  SVC_ERR_WEBHOOK_SOURCE_MISCONFIGURED: { kind: 'internal', message: 'the source is misconfigured at the orchestrator: {reason}' },
  SVC_ERR_WEBHOOK_UNKNOWN_ORG: { kind: 'not_found', message: 'org "{orgId}" has no registered source here' },
  SVC_ERR_WEBHOOK_UNKNOWN_SOURCE: { kind: 'not_found', message: 'no source is registered for routing key "{routingKey}" in org "{orgId}"' },
} as const satisfies ErrorCatalogue;
