// Shared config versions and reload (docs/config.md): the `/admin/config…` routes' bodies and
// answers, shared with `svc-admin config … --json`.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;

/** Who wrote a version: `<channel>:<action>` (cli:seed, cli:set, cli:rollback, api:set, api:rollback). */
export const ConfigCreatedBy = Type.String({ pattern: '^[a-z]+:[a-z][a-z-]*$', maxLength: 64 });

/** One version without its document (`GET /admin/config/versions`). */
export const ConfigVersionSummary = Type.Object(
  {
    id: Type.String(),
    version: Type.Integer({ minimum: 1 }),
    createdAt: Type.String(),
    createdBy: ConfigCreatedBy,
    description: Type.Union([Type.String(), Type.Null()]),
    /** Dot paths whose stored values are sealed with the master key. */
    encryptedPaths: Type.Array(Type.String()),
  },
  strict,
);
export type ConfigVersionSummary = Static<typeof ConfigVersionSummary>;

/** One version with its (redacted) document (`GET /admin/config/versions/:version`). */
export const ConfigVersionDetail = Type.Object(
  { ...ConfigVersionSummary.properties, config: Type.Record(Type.String(), Type.Unknown()) },
  strict,
);
export type ConfigVersionDetail = Static<typeof ConfigVersionDetail>;

export const ConfigVersionList = Type.Object({ versions: Type.Array(ConfigVersionSummary) }, strict);
export type ConfigVersionList = Static<typeof ConfigVersionList>;

export const ConfigVersionParams = Type.Object({ version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) }, strict);

export const ConfigVersionsQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) }, strict);

/** `PUT /admin/config`: the whole shared document of the new version (not a patch). */
export const PutConfigBody = Type.Object(
  {
    config: Type.Record(Type.String(), Type.Unknown()),
    description: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
  },
  strict,
);
export type PutConfigBody = Static<typeof PutConfigBody>;

/** `POST /admin/config/rollback`: copy version `version` into a new version. */
export const RollbackConfigBody = Type.Object(
  {
    version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
    description: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
  },
  strict,
);
export type RollbackConfigBody = Static<typeof RollbackConfigBody>;

/** `POST /admin/config/reload?source=cli`: the metric label; `svc-admin config reload` sends `cli`. */
export const ReloadConfigQuery = Type.Object({ source: Type.Optional(Type.Enum(['http', 'cli'])) }, strict);

export const ExportConfigQuery = Type.Object({ redacted: Type.Optional(Type.Boolean()) }, strict);

/** A reload's outcome. `Reload already in progress` comes back with success false and nothing else done. */
export const ConfigReloadResult = Type.Object(
  {
    success: Type.Boolean(),
    result: Type.Optional(Type.Enum(['success', 'failed'])),
    /** Shared config version in effect after the reload (null: none written yet). */
    version: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
    /** Dot paths whose running value changed. */
    changed: Type.Optional(Type.Array(Type.String())),
    /** Changes kept at their running value: held (spec) or needing a restart. */
    warnings: Type.Optional(Type.Array(Type.String())),
    error: Type.Optional(Type.String()),
  },
  strict,
);
export type ConfigReloadResult = Static<typeof ConfigReloadResult>;

/** `GET /admin/config`: the shared fields of the running config, redacted. */
export const EffectiveSharedConfig = Type.Object(
  {
    version: Type.Union([Type.Integer(), Type.Null()]),
    config: Type.Record(Type.String(), Type.Unknown()),
    /** Shared fields the node's file or environment sets, which win over the version. */
    localOverrides: Type.Array(Type.String()),
    /** Changes of a version that wait for a restart (or are held), as the last reload reported. */
    pending: Type.Array(Type.String()),
  },
  strict,
);
export type EffectiveSharedConfig = Static<typeof EffectiveSharedConfig>;
