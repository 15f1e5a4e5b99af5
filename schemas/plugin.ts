// Plugin manifests: what a plugin states about itself before the kernel lets it serve.
// The kernel's sign-in checks a plugin's manifest against these schemas (kernel/host/sign-in.ts);
// `svc-admin plugin verify` uses the same ones. Imports nothing but typebox.
import { Type, type Static } from 'typebox';

/** The six extension point kinds. The order is the order the kernel lists them in. */
export const PLUGIN_KINDS = ['provider', 'generic-source', 'custody', 'sandbox', 'storage', 'scaler'] as const;

export const PluginKind = Type.Union([
  Type.Literal('provider'),
  Type.Literal('generic-source'),
  Type.Literal('custody'),
  Type.Literal('sandbox'),
  Type.Literal('storage'),
  Type.Literal('scaler'),
]);
export type PluginKind = (typeof PLUGIN_KINDS)[number];

/** kebab-case: lower-case letters and digits in dash-separated words (`filesystem`, `aws-kms`). */
export const PluginId = Type.String({ pattern: '^[a-z][a-z0-9]*(-[a-z0-9]+)*$', maxLength: 64 });
export type PluginId = Static<typeof PluginId>;

/** Semantic version `MAJOR.MINOR.PATCH[-pre][+build]` (semver 2.0.0). */
export const PluginVersion = Type.String({
  pattern:
    '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(-[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?(\\+[0-9A-Za-z-]+(\\.[0-9A-Za-z-]+)*)?$',
  maxLength: 128,
});

/** A semver range such as `^0.9.0` or `>=0.9 <2`; checked as a range by the kernel. */
export const KernelRange = Type.String({ minLength: 1, maxLength: 256 });

/** Another plugin this one needs signed in before it (any id of that kind when `id` is absent). */
export const PluginDependency = Type.Object(
  {
    kind: PluginKind,
    id: Type.Optional(PluginId),
  },
  { additionalProperties: false },
);
export type PluginDependency = Static<typeof PluginDependency>;

function manifestOf<K extends PluginKind>(kind: K) {
  return Type.Object(
    {
      id: PluginId,
      kind: Type.Literal(kind),
      version: PluginVersion,
      kernelRange: KernelRange,
      description: Type.String({ minLength: 1, maxLength: 500 }),
      dependencies: Type.Optional(Type.Array(PluginDependency, { maxItems: 32 })),
    },
    { additionalProperties: false },
  );
}

export const ProviderPluginManifest = manifestOf('provider');
export type ProviderPluginManifest = Static<typeof ProviderPluginManifest>;
export const GenericSourcePluginManifest = manifestOf('generic-source');
export type GenericSourcePluginManifest = Static<typeof GenericSourcePluginManifest>;
export const CustodyPluginManifest = manifestOf('custody');
export type CustodyPluginManifest = Static<typeof CustodyPluginManifest>;
export const SandboxPluginManifest = manifestOf('sandbox');
export type SandboxPluginManifest = Static<typeof SandboxPluginManifest>;
export const StoragePluginManifest = manifestOf('storage');
export type StoragePluginManifest = Static<typeof StoragePluginManifest>;
export const ScalerPluginManifest = manifestOf('scaler');
export type ScalerPluginManifest = Static<typeof ScalerPluginManifest>;

/** Manifest schema per kind: the sign-in `manifest` phase picks one by the declared kind. */
export const PluginManifestByKind = {
  provider: ProviderPluginManifest,
  'generic-source': GenericSourcePluginManifest,
  custody: CustodyPluginManifest,
  sandbox: SandboxPluginManifest,
  storage: StoragePluginManifest,
  scaler: ScalerPluginManifest,
} as const;

/** Any plugin's manifest. */
export const PluginManifest = Type.Union([
  ProviderPluginManifest,
  GenericSourcePluginManifest,
  CustodyPluginManifest,
  SandboxPluginManifest,
  StoragePluginManifest,
  ScalerPluginManifest,
]);
export type PluginManifest = Static<typeof PluginManifest>;

/** Which plugins the program loads: third-party modules are named here, never discovered. */
export const PluginsConfig = Type.Object(
  {
    /** Module paths, resolved relative to the config file's directory. */
    modules: Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), { default: [], maxItems: 64 }),
  },
  { additionalProperties: false },
);
export type PluginsConfig = Static<typeof PluginsConfig>;

/** Per-source settings of a generic webhook source (spec: "Generic webhook extras"). */
export const GenericFieldLocation = Type.Union([
  Type.Object({ header: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
  /** Dot path into the JSON payload, e.g. `event.type`. */
  Type.Object({ payloadField: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
]);
export type GenericFieldLocation = Static<typeof GenericFieldLocation>;

export const GenericSignatureMode = Type.Union([
  Type.Literal('hmac'),
  Type.Literal('bearer'),
  Type.Literal('ip-allowlist'),
  Type.Literal('none'),
]);
export type GenericSignatureMode = Static<typeof GenericSignatureMode>;

export const GenericSourceConfig = Type.Object(
  {
    signature: Type.Object(
      {
        mode: GenericSignatureMode,
        /** hmac: the header carrying the hex HMAC-SHA256 of the body (`sha256=` prefix allowed). */
        header: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
        /** ip-allowlist: addresses or CIDR blocks. */
        allow: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 256 })),
      },
      { additionalProperties: false },
    ),
    maxPayloadBytes: Type.Integer({ minimum: 1, maximum: 25 * 1024 * 1024 }),
    rateLimitRpm: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
    eventType: GenericFieldLocation,
    /** Absent: the kernel generates a UUID per delivery. */
    deliveryId: Type.Optional(GenericFieldLocation),
    idempotencyWindowSeconds: Type.Integer({ minimum: 0, maximum: 7 * 24 * 3600 }),
  },
  { additionalProperties: false },
);
export type GenericSourceConfig = Static<typeof GenericSourceConfig>;
