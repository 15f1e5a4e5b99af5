// Operator admin routes for the cluster and internal events (docs/events.md) and the webhook
// event log (docs/ingest.md), shared by the orchestrator's routes and `svc-admin`'s `--json` output.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const Uuid = Type.String({ pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/** One orchestrator of the cluster (`GET /api/v1/admin/cluster/nodes`). */
export const ClusterNode = Type.Object(
  {
    nodeId: Type.String(),
    address: Type.String(),
    version: Type.String(),
    pid: Type.Number(),
    leader: Type.Boolean(),
    alive: Type.Boolean(),
    startedAt: Type.String(),
    lastSeenAt: Type.String(),
    lastSeenAgoMs: Type.Number(),
    stoppedAt: Nullable(Type.String()),
  },
  strict,
);
export type ClusterNode = Static<typeof ClusterNode>;

/** One dead-lettered internal event (`GET /api/v1/admin/events/dlq`). */
export const DlqEntry = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    orgId: Type.String(),
    target: Nullable(Type.String()),
    source: Type.String(),
    runId: Nullable(Type.String()),
    attempts: Type.Number(),
    dlqReason: Type.String(),
    lastError: Nullable(Type.String()),
    createdAt: Type.String(),
    dlqAt: Nullable(Type.String()),
  },
  strict,
);
export type DlqEntry = Static<typeof DlqEntry>;

export const DlqQuery = Type.Object(
  {
    org: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  strict,
);

/** `POST /api/v1/admin/events/dlq/retry`: named events, or every one matching the filter with `all`. */
export const DlqRetryBody = Type.Object(
  {
    ids: Type.Optional(Type.Array(Uuid, { maxItems: 1000 })),
    all: Type.Optional(Type.Boolean()),
    org: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  strict,
);

/** `POST /api/v1/admin/events/dlq/discard`: as retry, with the operator's reason (kept on the event). */
export const DlqDiscardBody = Type.Object({ ...DlqRetryBody.properties, reason: Type.String({ minLength: 1, maxLength: 1000 }) }, strict);

/** One pipeline step of a webhook delivery, in the order the steps ran (docs/ingest.md). */
export const DeliveryStep = Type.Object(
  {
    step: Type.String(),
    outcome: Type.String(),
    detail: Type.Optional(Type.String()),
  },
  strict,
);
export type DeliveryStep = Static<typeof DeliveryStep>;

const deliveryFields = {
  orgId: Type.String(),
  deliveryId: Type.String(),
  sourceId: Nullable(Type.String()),
  routingKey: Type.String(),
  providerKind: Type.String(),
  status: Type.String(),
  shedReason: Nullable(Type.String()),
  message: Nullable(Type.String()),
  eventType: Nullable(Type.String()),
  action: Nullable(Type.String()),
  eventName: Nullable(Type.String()),
  repository: Nullable(Type.String()),
  ref: Nullable(Type.String()),
  sha: Nullable(Type.String()),
  sender: Nullable(Type.String()),
  trustTier: Nullable(Type.String()),
  workflowModified: Type.Boolean(),
  runIds: Type.Array(Type.String()),
  /** Where the gzipped payload is (or was to be) stored; the payload itself is never in a record. */
  payloadKey: Nullable(Type.String()),
  payloadBytes: Nullable(Type.Number()),
  payloadOmitted: Type.Boolean(),
  payloadOmittedReason: Nullable(Type.String()),
  duplicates: Type.Number(),
  generation: Type.Number(),
  attempts: Type.Number(),
  nodeId: Nullable(Type.String()),
  receivedAt: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  /** Set once the record passed the warm retention window (docs/ingest.md "Retention"); null while warm. */
  archivedAt: Nullable(Type.String()),
};

/** A webhook delivery record as listed (`GET /api/v1/admin/deliveries`): every field but the steps. */
export const DeliverySummary = Type.Object(deliveryFields, strict);
export type DeliverySummary = Static<typeof DeliverySummary>;

/** One webhook delivery record with its pipeline steps (`GET /api/v1/admin/deliveries/:orgId/:deliveryId`). */
export const DeliveryRecord = Type.Object({ ...deliveryFields, steps: Type.Array(DeliveryStep) }, strict);
export type DeliveryRecord = Static<typeof DeliveryRecord>;

/**
 * `GET /api/v1/admin/deliveries`: `status` one of the record's statuses, `since`/`until` an ISO
 * timestamp or a duration back from now (`30m`, `1h`, `7d`); checked by the query (clear codes).
 */
export const DeliveriesQuery = Type.Object(
  {
    org: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    status: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    since: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    until: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    repository: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    /** true: archived records too (marked by `archivedAt`); default warm records only. */
    archived: Type.Optional(Type.Boolean()),
  },
  strict,
);

export const DeliveryParams = Type.Object(
  {
    orgId: Type.String({ minLength: 1, maxLength: 200 }),
    deliveryId: Type.String({ minLength: 1, maxLength: 1000 }),
  },
  strict,
);

/** `GET /api/v1/admin/deliveries/:orgId/:deliveryId` takes no query parameters. */
export const DeliveryRecordQuery = Type.Object({}, strict);

/** Most runs `GET /api/v1/admin/runs` (and `svc-admin runs list`) return at once. */
export const MAX_ADMIN_RUN_LIST = 500;

/** `GET /api/v1/admin/runs?limit=&org=`. */
export const RunListQuery = Type.Object(
  { limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ADMIN_RUN_LIST })), org: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })) },
  strict,
);
export type RunListQuery = Static<typeof RunListQuery>;

/** `GET /api/v1/admin/runs/:runId`: any text; an id that is not a UUID is simply not found (404). */
export const RunDetailParams = Type.Object({ runId: Type.String({ minLength: 1, maxLength: 200 }) }, strict);
export type RunDetailParams = Static<typeof RunDetailParams>;
