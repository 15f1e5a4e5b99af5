// Operator routes of the forge status reporter (the HTTP side of `svc-admin forge-status`):
//   GET /api/v1/admin/forge-status?run=&org=&status=&target=&limit=  → { deliveries: ForgeStatusDelivery[] }
//   GET /api/v1/admin/forge-status/:id                                → ForgeStatusDeliveryDetail
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Time = Type.String({ format: 'date-time' });

export const FORGE_STATUS_DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'skipped', 'superseded'] as const;
export const FORGE_STATUS_TARGETS = ['provider', 'webhook'] as const;

/** One outbound status delivery: a run status change for one target (a check run, a webhook). */
export const ForgeStatusDelivery = Type.Object(
  {
    id: Type.String(),
    orgId: Type.String(),
    runId: Type.String(),
    /** `provider` (the forge's own status API: a GitHub check run) or `webhook` (the source's run-status webhook). */
    target: Type.String(),
    sourceId: Type.String(),
    providerKind: Type.String(),
    /** The run status that changed, and what is reported for it. */
    runStatus: Type.String(),
    state: Type.String(),
    conclusion: Nullable(Type.String()),
    /** pending, delivered, failed, skipped or superseded. */
    status: Type.String(),
    attempts: Type.Integer({ minimum: 0 }),
    /** When the next attempt is due (pending only). */
    nextAttemptAt: Nullable(Time),
    lastAttemptAt: Nullable(Time),
    lastError: Nullable(Type.String()),
    lastStatusCode: Nullable(Type.Integer()),
    /** The forge object the delivery created or updated (a check run id). */
    externalId: Nullable(Type.String()),
    deliveredAt: Nullable(Time),
    changedAt: Time,
    createdAt: Time,
  },
  strict,
);
export type ForgeStatusDelivery = Static<typeof ForgeStatusDelivery>;

/** One attempt of a delivery. */
export const ForgeStatusAttempt = Type.Object(
  {
    attempt: Type.Integer({ minimum: 1 }),
    nodeId: Type.String(),
    startedAt: Time,
    finishedAt: Time,
    /** delivered, retry, failed or skipped. */
    outcome: Type.String(),
    statusCode: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
  },
  strict,
);
export type ForgeStatusAttempt = Static<typeof ForgeStatusAttempt>;

export const ForgeStatusDeliveryDetail = Type.Object({ ...ForgeStatusDelivery.properties, history: Type.Array(ForgeStatusAttempt) }, strict);
export type ForgeStatusDeliveryDetail = Static<typeof ForgeStatusDeliveryDetail>;

export const ForgeStatusQuery = Type.Object(
  {
    run: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    org: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    status: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    target: Type.Optional(Type.String({ minLength: 1, maxLength: 40 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  strict,
);
export type ForgeStatusQuery = Static<typeof ForgeStatusQuery>;

export const ForgeStatusParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, strict);
