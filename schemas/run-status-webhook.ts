// The outbound run-status webhook (docs/forge-status.md): what the orchestrator POSTs to the URL
// an operator configured on a source (`svc-admin source status-webhook set`) each time one of
// the source's runs changes status. The body is JSON; `X-Svc-Signature-256` carries
// `sha256=<hex HMAC-SHA256 of the exact body bytes under the webhook secret>`.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Timestamp = Type.String({ format: 'date-time' });

export const RUN_STATUS_WEBHOOK_TYPE = 'run.status';

/** Request headers (lower-case, as node:http gives them to a receiver). */
export const RUN_STATUS_WEBHOOK_HEADERS = {
  /** `sha256=<64 hex>`: HMAC-SHA256 of the raw body bytes, keyed with the webhook secret. */
  signature: 'x-svc-signature-256',
  /** The delivery id (also `deliveryId` in the body): the same on every retry of one notification. */
  delivery: 'x-svc-delivery',
  /** Unix seconds when this attempt was sent (also `sentAt` in the body, which the signature covers). */
  timestamp: 'x-svc-timestamp',
  /** Always `run.status`. */
  event: 'x-svc-event',
} as const;

export const RunReportStateSchema = Type.Union([Type.Literal('queued'), Type.Literal('in_progress'), Type.Literal('completed')]);
export const RunReportConclusionSchema = Type.Union([
  Type.Literal('success'),
  Type.Literal('failure'),
  Type.Literal('cancelled'),
  Type.Literal('skipped'),
  Type.Literal('timed_out'),
  Type.Literal('neutral'),
]);

export const RunStatusWebhookPayload = Type.Object(
  {
    type: Type.Literal(RUN_STATUS_WEBHOOK_TYPE),
    /** One id per notification (run status change and webhook); retries repeat it: deduplicate on it. */
    deliveryId: Type.String({ format: 'uuid' }),
    /** When this attempt was sent; reject old ones to stop replays (the signature covers it). */
    sentAt: Timestamp,
    /** 1 for the first attempt, then 2, 3, … */
    attempt: Type.Integer({ minimum: 1 }),
    run: Type.Object(
      {
        id: Type.String({ format: 'uuid' }),
        orgId: Type.String(),
        repository: Type.String(),
        workflow: Type.String(),
        /** The run status this notification reports: held, queued, running, completed, failed, cancelled, skipped, … */
        status: Type.String(),
        /** The same as a forge sees it: queued (held or queued), in_progress or completed. */
        state: RunReportStateSchema,
        /** How the run ended, when `state` is completed; null before. */
        conclusion: Nullable(RunReportConclusionSchema),
        /** Why the run ended as it did (`job failed: unit`), when known. */
        reason: Nullable(Type.String()),
        sha: Type.String(),
        ref: Nullable(Type.String()),
        /** The event that started the run (`push`, `pull_request:opened`, `schedule`, `rerun`, …). */
        event: Type.String(),
        /** A page about the run. */
        url: Type.String(),
        /** When the run changed to `status`. */
        changedAt: Timestamp,
        createdAt: Timestamp,
        startedAt: Nullable(Timestamp),
        finishedAt: Nullable(Timestamp),
      },
      strict,
    ),
    /** The source whose webhook this is. */
    source: Type.Object({ id: Type.String({ format: 'uuid' }), providerKind: Type.String() }, strict),
  },
  strict,
);
export type RunStatusWebhookPayload = Static<typeof RunStatusWebhookPayload>;
