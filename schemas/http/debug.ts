// A node's debug information (`GET /api/v1/admin/debug`), read by `svc-admin debug-bundle` and
// `svc-admin diagnose`: versions, health, redacted config and its recent (already redacted) log
// lines. Secrets never appear: the config is redacted on the node before it is sent.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;

export const NodeVersions = Type.Object(
  {
    package: Type.String(),
    node: Type.String(),
    /** Newest applied migration file, or null when none is recorded. */
    migration: Type.Union([Type.String(), Type.Null()]),
    migrationsApplied: Type.Integer(),
    migrationsKnown: Type.Integer(),
    lockSchema: Type.Integer(),
    compileSchema: Type.Integer(),
    wireProtocol: Type.Integer(),
    minWireProtocol: Type.Integer(),
  },
  strict,
);
export type NodeVersions = Static<typeof NodeVersions>;

export const HealthStatus = Type.Union([Type.Literal('pass'), Type.Literal('warn'), Type.Literal('fail')]);

export const NodeHealth = Type.Object(
  {
    status: HealthStatus,
    uptimeSeconds: Type.Number(),
    database: Type.Object({ status: HealthStatus, message: Type.String() }, strict),
    relayLink: Type.Object({ configured: Type.Boolean(), connected: Type.Boolean() }, strict),
    leader: Type.Boolean(),
    memory: Type.Object({ rssBytes: Type.Number(), heapUsedBytes: Type.Number() }, strict),
  },
  strict,
);
export type NodeHealth = Static<typeof NodeHealth>;

export const NodeDebug = Type.Object(
  {
    nodeId: Type.String(),
    nodeUrl: Type.String(),
    publicUrl: Type.String(),
    pid: Type.Integer(),
    collectedAt: Type.String(),
    versions: NodeVersions,
    health: NodeHealth,
    /** The effective config with every secret replaced by ***REDACTED***. */
    config: Type.Record(Type.String(), Type.Unknown()),
    /** The node's most recent log lines (pino JSON, redacted when written), oldest first. */
    logs: Type.Array(Type.String()),
  },
  strict,
);
export type NodeDebug = Static<typeof NodeDebug>;
