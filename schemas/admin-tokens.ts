// Operator admin tokens and their scopes (docs/admin-api.md). One scope per kind of admin work; a
// route names the one scope it needs. The bootstrap token and tokens minted `--unrestricted` hold
// every scope; a few routes (signing keys) also require a token without scope restrictions.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;

/** Every admin scope, in the order docs/admin-api.md lists them. */
export const ADMIN_SCOPES = [
  'secret.read',
  'runs.read',
  'runs.write',
  'events.read',
  'events.write',
  'deliveries.read',
  'forge-status.read',
  'cluster.read',
  'cluster.write',
  'config.read',
  'config.write',
  'trust-policy.write',
  'cache.write',
  'sources.write',
  'audit.read',
] as const;

export const AdminScope = Type.Enum([...ADMIN_SCOPES]);
export type AdminScope = (typeof ADMIN_SCOPES)[number];

/** An admin token as `svc-admin admin-token list --json` shows it (never the token itself). */
export const AdminTokenSummary = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    /** Every scope when true; `scopes` is then empty. */
    unrestricted: Type.Boolean(),
    scopes: Type.Array(AdminScope),
    createdAt: Type.String(),
    createdBy: Type.String(),
    expiresAt: Type.Union([Type.String(), Type.Null()]),
    revokedAt: Type.Union([Type.String(), Type.Null()]),
    lastUsedAt: Type.Union([Type.String(), Type.Null()]),
    state: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('revoked')]),
  },
  strict,
);
export type AdminTokenSummary = Static<typeof AdminTokenSummary>;

/** What `admin-token create` returns: the summary plus the token, shown only then. */
export const CreatedAdminToken = Type.Object({ ...AdminTokenSummary.properties, token: Type.String() }, strict);
export type CreatedAdminToken = Static<typeof CreatedAdminToken>;
