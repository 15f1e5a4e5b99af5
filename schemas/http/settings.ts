// Cluster-wide settings (`/api/v1/admin/cluster-settings`, docs/cluster.md) and an organization's
// trust policy (`/trust-policy`, docs/trust-policy.md): the HTTP shapes, shared by the
// orchestrator's routes and `svc-admin`'s `--json` output. Every accepted field is honoured by
// the runtime; a field it would not honour is refused (unknown field → 400).
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/** Bounds of the settings (shared by the routes and the CLI's help text). */
export const CLUSTER_SETTING_BOUNDS = {
  maxDispatchAttempts: { minimum: 1, maximum: 100 },
  sealedSecretsRetryBackoffMs: { minimum: 1_000, maximum: 3_600_000 },
} as const;

export const ClusterSettingsFields = {
  /** Attempts a job (and an internal event delivery) gets before it fails / is dead-lettered. */
  maxDispatchAttempts: Type.Integer(CLUSTER_SETTING_BOUNDS.maxDispatchAttempts),
  /** Wait before a job whose sealed secrets a node cannot open is dispatched again. */
  sealedSecretsRetryBackoffMs: Type.Integer(CLUSTER_SETTING_BOUNDS.sealedSecretsRetryBackoffMs),
};
export type ClusterSettingName = keyof typeof ClusterSettingsFields;
export const CLUSTER_SETTING_NAMES = Object.keys(ClusterSettingsFields) as ClusterSettingName[];

/** The values every node follows. */
export const ClusterSettingsValues = Type.Object(ClusterSettingsFields, strict);
export type ClusterSettingsValues = Static<typeof ClusterSettingsValues>;

/** `GET` / `PATCH /api/v1/admin/cluster-settings` answer. */
export const ClusterSettings = Type.Object(
  {
    settings: ClusterSettingsValues,
    updatedAt: Type.String(),
    updatedBy: Type.String(),
  },
  strict,
);
export type ClusterSettings = Static<typeof ClusterSettings>;

/** `PATCH /api/v1/admin/cluster-settings` body: any non-empty subset; unknown fields → 400. */
export const ClusterSettingsPatch = Type.Object(
  {
    maxDispatchAttempts: Type.Optional(ClusterSettingsFields.maxDispatchAttempts),
    sealedSecretsRetryBackoffMs: Type.Optional(ClusterSettingsFields.sealedSecretsRetryBackoffMs),
  },
  { ...strict, minProperties: 1 },
);
export type ClusterSettingsPatch = Static<typeof ClusterSettingsPatch>;

/** Org ids travel in webhook URLs: one plain path segment (sources/store.ts ORG_ID_PATTERN). */
export const OrgId = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$' });

export const ForkPolicy = Type.Union([Type.Literal('run'), Type.Literal('ignore')]);

/** `GET /trust-policy?org=<org>`. */
export const TrustPolicyQuery = Type.Object({ org: OrgId }, strict);

/**
 * `PATCH /trust-policy` body. `forkPolicy: null` clears the org's value (sources without their
 * own then run forks). The org is named by `org` in the body or the `?org=` query (one of them).
 */
export const TrustPolicyPatch = Type.Object(
  {
    org: Type.Optional(OrgId),
    forkPolicy: Type.Optional(Nullable(ForkPolicy)),
  },
  strict,
);
export type TrustPolicyPatch = Static<typeof TrustPolicyPatch>;

export const TrustPolicyPatchQuery = Type.Object({ org: Type.Optional(OrgId) }, strict);

/** An org's trust policy as stored (`null`: not set) and what the trust step applies. */
export const TrustPolicy = Type.Object(
  {
    org: Type.String(),
    forkPolicy: Nullable(ForkPolicy),
    /** What a source without its own fork policy does with fork pull requests. */
    effective: Type.Object({ forkPolicy: ForkPolicy }, strict),
    updatedAt: Nullable(Type.String()),
    updatedBy: Nullable(Type.String()),
  },
  strict,
);
export type TrustPolicy = Static<typeof TrustPolicy>;
