// How the webhook front door answers, one entry per row of the spec's "Webhook ingest status
// codes" table: the status, and for refusals the one `SVC_ERR_WEBHOOK_*` code of the row and
// whether Retry-After is sent. The relay and the orchestrator's independent mode answer from this
// table and nothing else, so the same condition reads the same on both.
//
// Webhook answers do not go through the kernel's error mapping (kernel/services/http): the spec's
// table fixes statuses that kinds do not give (413, a 500 whose reason is shown to the sender),
// and a flood of refusals must not pay for an Error and its stack per request.
import type { ErrorCode } from '../../core/error-codes.ts';
import type { AckResult } from '../../schemas/wire/relay.ts';

/** spec Limits: "Buffered-delivery 503 retry hint". */
export const BUFFER_FULL_RETRY_AFTER_SECONDS = 5;

export interface WebhookRefusalRow {
  /** The condition, as the spec's table words it. */
  readonly condition: string;
  readonly status: number;
  /** Declared in core/error-codes/webhook.ts. */
  readonly code: ErrorCode;
  /** Said when the answer brings no message of its own. */
  readonly message: string;
  /** 'given': every answer of this row carries its own Retry-After; a number: always that one. */
  readonly retryAfter?: 'given' | number;
  /** False for a condition the spec's table does not list (kept apart so the table stays exact). */
  readonly inSpecTable: boolean;
}

export interface WebhookSuccessRow {
  readonly condition: string;
  readonly status: 200;
  /** `status` of the answer body. */
  readonly answer: 'accepted' | 'buffered' | 'duplicate';
}

export const WEBHOOK_REFUSALS = {
  bodyTooLarge: {
    condition: 'Body larger than 25 MiB (or than a generic source\'s maxPayloadBytes)',
    status: 413,
    code: 'SVC_ERR_WEBHOOK_BODY_TOO_LARGE',
    message: 'the webhook body is larger than the limit',
    inSpecTable: true,
  },
  /** Both rows: a negative-cache hit, and an ack `rejected_unknown_source`; the sender sees one condition. */
  unknownSource: {
    condition: 'Negative-cache hit on unknown (org, routing key); ack rejected_unknown_source',
    status: 404,
    code: 'SVC_ERR_WEBHOOK_UNKNOWN_SOURCE',
    message: 'no source is registered for this routing key',
    inSpecTable: true,
  },
  signatureRejected: {
    condition: 'Ack rejected_signature',
    status: 401,
    code: 'SVC_ERR_WEBHOOK_SIGNATURE_REJECTED',
    message: 'the webhook signature does not verify against the source secret',
    inSpecTable: true,
  },
  sourceMisconfigured: {
    condition: 'Ack rejected_misconfigured',
    status: 500,
    code: 'SVC_ERR_WEBHOOK_SOURCE_MISCONFIGURED',
    message: 'the source is misconfigured at the orchestrator',
    inSpecTable: true,
  },
  shed: {
    condition: 'Ack shed_retry_later (admission refused)',
    status: 429,
    code: 'SVC_ERR_WEBHOOK_SHED',
    message: 'the orchestrator is shedding load; retry later',
    retryAfter: 'given',
    inSpecTable: true,
  },
  rateLimited: {
    condition: 'Ingress rate limit exceeded for org or client IP (or a generic source\'s rateLimitRpm)',
    status: 429,
    code: 'SVC_ERR_WEBHOOK_RATE_LIMITED',
    message: 'too many webhooks; retry later',
    retryAfter: 'given',
    inSpecTable: true,
  },
  bufferFull: {
    condition: 'Buffer budget exhausted',
    status: 503,
    code: 'SVC_ERR_WEBHOOK_BUFFER_FULL',
    message: "the relay's buffer for this org is full; retry later",
    retryAfter: BUFFER_FULL_RETRY_AFTER_SECONDS,
    inSpecTable: true,
  },
  unknownOrg: {
    condition: 'Unknown org with no registered source',
    status: 404,
    code: 'SVC_ERR_WEBHOOK_UNKNOWN_ORG',
    message: 'the org has no registered source here',
    inSpecTable: true,
  },
  /** The buffer's database refused the write: answered like a full buffer, told apart for operators. */
  bufferUnavailable: {
    condition: 'The buffer cannot be written (database error)',
    status: 503,
    code: 'SVC_ERR_WEBHOOK_BUFFER_UNAVAILABLE',
    message: 'the relay cannot store this delivery right now; retry later',
    retryAfter: BUFFER_FULL_RETRY_AFTER_SECONDS,
    inSpecTable: false,
  },
} as const satisfies Record<string, WebhookRefusalRow>;

export const WEBHOOK_SUCCESSES = {
  accepted: { condition: 'Orchestrator ack accepted', status: 200, answer: 'accepted' },
  buffered: { condition: 'No orchestrator in the pool, all candidates timed out, or relay budget spent', status: 200, answer: 'buffered' },
  duplicate: { condition: 'Duplicate delivery id or duplicate body for the same source inside the dedup window', status: 200, answer: 'duplicate' },
} as const satisfies Record<string, WebhookSuccessRow>;

export type WebhookRefusal = keyof typeof WEBHOOK_REFUSALS;

/** The row of each ack result (relay: the orchestrator's ack; independent mode: the pipeline's outcome). */
export const ROW_OF_ACK: Readonly<Record<AckResult, WebhookRefusal | 'accepted' | 'duplicate'>> = Object.freeze({
  accepted: 'accepted',
  duplicate: 'duplicate',
  rejected_signature: 'signatureRejected',
  rejected_unknown_source: 'unknownSource',
  rejected_misconfigured: 'sourceMisconfigured',
  shed_retry_later: 'shed',
});
