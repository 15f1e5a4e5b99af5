// Operator admin routes for the cluster and internal events (docs/events.md), shared by the
// orchestrator's routes and `svc-admin`'s `--json` output.
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
export const DlqDiscardBody = Type.Object(
  {
    ids: Type.Optional(Type.Array(Uuid, { maxItems: 1000 })),
    all: Type.Optional(Type.Boolean()),
    org: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    reason: Type.String({ minLength: 1, maxLength: 1000 }),
  },
  strict,
);
