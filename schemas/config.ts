// The server configuration: one shape for defaults, the local YAML file, `SVC_*` environment
// overrides and stored shared config versions (spec: "Shared configuration and config versions").
// `SvcConfig` is the effective config after layering: every section is present and every field
// with a default is filled. `SvcConfigOverlay` is the same tree with everything optional, for one
// layer on its own (a config file, a stored shared config document).
import { Type, type Static, type TSchema } from 'typebox';

const strict = { additionalProperties: false } as const;

const NonEmpty = Type.String({ minLength: 1 });
/**
 * `secret: true` marks a secret field (a custom schema option; validation ignores it). The one
 * list of secret config paths is derived from these marks (kernel/services/config/secret-paths.ts):
 * sealed in stored config versions, replaced in redacted exports, never echoed in errors, and
 * re-sealed by `svc-admin rotate-key`. test/kernel/services/config/secret-paths.test.ts fails on
 * a secret-looking field name that is not marked.
 */
const Secret = Type.String({ minLength: 1, secret: true });
const LongSecret = Type.String({ minLength: 16, secret: true });
const Port = Type.Integer({ minimum: 0, maximum: 65535 });
const PositiveInt = Type.Integer({ minimum: 1 });
const NonNegativeInt = Type.Integer({ minimum: 0 });
/** Absolute http(s) address; trailing slash allowed. */
const HttpUrl = Type.String({ minLength: 1, pattern: '^https?://[^\\s/?#]+([/?#][^\\s]*)?$' });
const ConnectionUrl = Type.String({ minLength: 1, pattern: '^postgres(ql)?://\\S+$' });

export const InstanceMode = Type.Enum(['platform', 'hybrid', 'independent', 'observed']);
export type InstanceMode = Static<typeof InstanceMode>;

export const LogLevel = Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
export type LogLevel = Static<typeof LogLevel>;

export const StorageType = Type.Enum(['filesystem', 's3']);
export type StorageType = Static<typeof StorageType>;

export const AgentAuth = Type.Enum(['token', 'none']);
export type AgentAuth = Static<typeof AgentAuth>;

export const SignerKind = Type.Enum(['db', 'aws-kms', 'command']);
export type SignerKind = Static<typeof SignerKind>;

/** `<kind>:<id>`, e.g. `provider:github`, `storage:s3`. */
export const PluginConfigKey = '^[a-z][a-z0-9-]*:[a-z0-9][a-z0-9._-]*$';

/** One identity provider the relay signs people in with (docs/sso.md). */
export const SsoProviderConfig = Type.Object(
  {
    /** `oidc`: any OpenID Connect provider, by issuer URL; `github`: a GitHub OAuth app. */
    kind: Type.Enum(['oidc', 'github']),
    /** Shown on the sign-in button (default: the provider id). */
    displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 80 })),
    /** oidc only: the issuer; discovery is read from <issuer>/.well-known/openid-configuration. */
    issuer: Type.Optional(HttpUrl),
    clientId: NonEmpty,
    clientSecret: Secret,
    /** oidc only: scopes requested (default openid, profile, email, offline_access). */
    scopes: Type.Optional(Type.Array(Type.String({ pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,100}$' }), { minItems: 1, maxItems: 20 })),
    /** oidc only: the ID token / userinfo claim holding the person's groups (default `groups`). */
    groupsClaim: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    /** oidc only: `prompt` sent with the authorization request (e.g. `consent` for providers that issue refresh tokens only then). */
    prompt: Type.Optional(Type.Enum(['none', 'login', 'consent', 'select_account'])),
    /** github only: the web and API bases (default https://github.com, https://api.github.com; GitHub Enterprise Server elsewhere). */
    webUrl: Type.Optional(HttpUrl),
    apiUrl: Type.Optional(HttpUrl),
    /** A provider group → the org roles it gives, each `<org>:<role>` (docs/roles.md). */
    groupRoles: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 200 }), Type.Array(Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}:(viewer|developer|approver|admin)$' }), { minItems: 1 })),
    ),
  },
  strict,
);
export type SsoProviderConfig = Static<typeof SsoProviderConfig>;

export const SvcConfig = Type.Object(
  {
    // ---- local fields (spec: "Local config fields") ----
    database: Type.Object(
      {
        /** Absent: the embedded PostgreSQL under `dataDir`. */
        url: Type.Optional(ConnectionUrl),
      },
      strict,
    ),
    instance: Type.Object(
      {
        id: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9._-]*$' })),
        /** Absent: the role decides (independent without `platform.url`). */
        mode: Type.Optional(InstanceMode),
      },
      strict,
    ),
    server: Type.Object(
      {
        port: Port,
        /** Address the HTTP listener binds to. */
        host: NonEmpty,
        /** Public base address (`{base_url}`) agents and developers reach this server at; pre-signed URLs start with it. Default: the provenance issuer, else `http://127.0.0.1:<port><basePath>`. */
        publicUrl: Type.Optional(Type.String({ pattern: '^https?://[^\\s?#]+$' })),
        /** URL path prefix the server is mounted under, e.g. `/ci`. */
        basePath: Type.Optional(Type.String({ pattern: '^(/[A-Za-z0-9._~-]+)*/?$' })),
        logLevel: LogLevel,
      },
      strict,
    ),
    scaler: Type.Object(
      {
        configPath: Type.Optional(NonEmpty),
        configDir: Type.Optional(NonEmpty),
      },
      strict,
    ),

    // ---- shared fields ----
    platform: Type.Object(
      {
        url: Type.Optional(HttpUrl),
        token: Type.Optional(Secret),
      },
      strict,
    ),
    storage: Type.Object(
      {
        type: StorageType,
        fsPath: Type.Optional(NonEmpty),
        bucket: Type.Optional(Type.String({ minLength: 3, maxLength: 63, pattern: '^[a-z0-9][a-z0-9.-]*[a-z0-9]$' })),
        endpoint: Type.Optional(HttpUrl),
        forcePathStyle: Type.Boolean(),
        /** Address developers' machines reach storage at (pre-signed uploads). */
        uploadEndpoint: Type.Optional(HttpUrl),
        /** Address agents reach storage at. */
        externalEndpoint: Type.Optional(HttpUrl),
        region: Type.Optional(NonEmpty),
        /** s3 credentials; both or neither (then the AWS SDK's default chain: env, profile, instance role). */
        accessKeyId: Type.Optional(NonEmpty),
        secretAccessKey: Type.Optional(Secret),
      },
      strict,
    ),
    agentAuth: AgentAuth,
    agentTokenTtlMs: Type.Optional(PositiveInt),
    queue: Type.Object({ maxDepth: PositiveInt, timeoutMs: PositiveInt }, strict),
    lockfileCache: Type.Object({ max: PositiveInt, ttlMs: PositiveInt }, strict),
    staleDetector: Type.Object(
      {
        /** How often the recovery sweep fails dead agents' jobs; absent: a quarter of the recovery window, 100 ms to 5 s. */
        scanIntervalMs: Type.Optional(PositiveInt),
      },
      strict,
    ),
    secrets: Type.Object(
      {
        /** Master key, 32 bytes as base64 or 64 hex characters. */
        key: Type.Optional(Secret),
        keyFile: Type.Optional(NonEmpty),
        /** Previous master key during rotation. */
        keyOld: Type.Optional(Secret),
        keyFileOld: Type.Optional(NonEmpty),
        bootstrapAdminToken: Type.Optional(LongSecret),
      },
      strict,
    ),
    /** Store customer secrets in PostgreSQL (sealed with the master key). */
    pgCustomerSecrets: Type.Boolean(),
    cluster: Type.Object(
      {
        joinToken: Type.Optional(LongSecret),
        heartbeatMs: PositiveInt,
        leaseDurationMs: PositiveInt,
        maxDispatchAttempts: PositiveInt,
      },
      strict,
    ),
    /** Internal event delivery (docs/events.md): the circuit breaker and the retry back-off. */
    events: Type.Object(
      {
        /** Deepest event chain allowed (event → run → event …); a deeper emit is refused. */
        maxChainDepth: PositiveInt,
        /** Events one org may store per minute on one node; more are refused. */
        rateLimitPerOrgPerMinute: PositiveInt,
        /** First retry delay of a failed delivery; doubles per attempt (full jitter) up to retryMaxMs. */
        retryBaseMs: PositiveInt,
        retryMaxMs: PositiveInt,
      },
      strict,
    ),
    /** Reconciliation after downtime: forge delivery logs read by the leader (docs/ingest.md). */
    reconcile: Type.Object({ intervalMs: PositiveInt, lookbackMs: PositiveInt }, strict),
    /** Verified deliveries kept after a passing failure and retried by the orchestrator (docs/ingest.md). */
    ingestRetry: Type.Object(
      {
        /** First retry delay; doubles per attempt (between half and all of it) up to maxMs. */
        baseMs: PositiveInt,
        maxMs: PositiveInt,
        /** Past this age a kept delivery is recorded failed (an operator can still retry it). */
        giveUpAfterMs: PositiveInt,
      },
      strict,
    ),
    eventLog: Type.Object(
      {
        maxPayloadBytes: PositiveInt,
        /** Days a delivery record stays warm; older ones are archived hourly (docs/ingest.md). */
        warmRetentionDays: PositiveInt,
      },
      strict,
    ),
    /** Run status reported back to the forge (docs/forge-status.md): check runs, run-status webhooks. */
    forgeStatus: Type.Object(
      {
        /**
         * Link to a run page in reports, with `{orgId}` and `{runId}` placeholders. Default: the
         * relay's run route (`platform.url`), else this orchestrator's admin run route.
         */
        runUrlTemplate: Type.Optional(HttpUrl),
        /** Attempts per delivery before it is marked failed. */
        maxAttempts: PositiveInt,
        /** First retry delay; doubles per attempt (with jitter) up to retryMaxMs. */
        retryBaseMs: PositiveInt,
        retryMaxMs: PositiveInt,
        /** Time limit of one webhook request. */
        requestTimeoutMs: PositiveInt,
        /** The reporter also looks for work this often, notification or not. */
        tickMs: PositiveInt,
      },
      strict,
    ),
    cache: Type.Object(
      {
        ttlDays: PositiveInt,
        /** Per-org user cache size; absent means no quota. */
        userQuotaBytes: Type.Optional(PositiveInt),
      },
      strict,
    ),
    artifacts: Type.Object(
      {
        /** Days a run's artifacts are kept; a step may ask for fewer, never more. */
        retentionDays: PositiveInt,
        /** Largest packed artifact (gzipped tarball) accepted. */
        maxSizeBytes: PositiveInt,
        /** Artifacts one run may store. */
        maxPerRun: PositiveInt,
      },
      strict,
    ),
    /** The audit trail (docs/audit.md): records older than this many days are purged. */
    audit: Type.Object({ retentionDays: PositiveInt }, strict),
    agent: Type.Object({ maxReconnectDelayMs: PositiveInt }, strict),
    orchestrator: Type.Object(
      {
        /** Issuer base URL; when set, orchestrator-owned signing is on. */
        provenanceIssuer: Type.Optional(HttpUrl),
        signerKind: SignerKind,
        kms: Type.Object(
          {
            keyArn: Type.Optional(NonEmpty),
            region: Type.Optional(NonEmpty),
            accessKeyId: Type.Optional(NonEmpty),
            secretAccessKey: Type.Optional(Secret),
            endpoint: Type.Optional(HttpUrl),
          },
          strict,
        ),
        signerCommand: Type.Optional(NonEmpty),
        /** RFC 3161 timestamp authority (POST application/timestamp-query) stamping every attestation signature. */
        timestampUrl: Type.Optional(HttpUrl),
        /** PEM file with the TSA's certificate chain; its self-signed certificates are the trust anchors. */
        timestampCertChainFile: Type.Optional(NonEmpty),
      },
      strict,
    ),
    relay: Type.Object(
      {
        port: Port,
        /** Address the relay's public listener binds to. */
        host: NonEmpty,
        /** Absent: embedded PostgreSQL. */
        databaseUrl: Type.Optional(ConnectionUrl),
        /** Ingress token bucket per org (requests per minute; also the burst size). */
        rateLimitPerOrgRpm: PositiveInt,
        /** Ingress token bucket per client IP (requests per minute; also the burst size). */
        rateLimitPerIpRpm: PositiveInt,
        /** Durable buffer budget per org: deliveries held. */
        bufferMaxItems: PositiveInt,
        /** Durable buffer budget per org: body bytes held. */
        bufferMaxBytes: PositiveInt,
        /** A buffered delivery not replayed within this time is dropped as expired. */
        bufferTtlMs: PositiveInt,
        /** Single sign-on (docs/sso.md): the identity providers people sign in with. */
        sso: Type.Optional(
          Type.Object(
            {
              /** Keyed by provider id (lower case, used in /signin/<id> and the callback URL). */
              providers: Type.Optional(Type.Record(Type.String({ pattern: '^[a-z][a-z0-9-]{0,30}$' }), SsoProviderConfig, strict)),
              /** Lifetime of a token `svc login` gets through a provider; it is renewed with its refresh token (default 8 h). */
              tokenTtlSeconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 30 * 86_400 })),
              /** The relay's public base URL for the providers' redirect URIs (default: the request's own origin). */
              publicUrl: Type.Optional(HttpUrl),
            },
            strict,
          ),
        ),
      },
      strict,
    ),
    dataDir: NonEmpty,
    metrics: Type.Object(
      {
        /** Separate metrics listener; absent: `/metrics` on the server port. */
        port: Type.Optional(Port),
      },
      strict,
    ),
    sealedSecretsRetryBackoffMs: PositiveInt,
    plugins: Type.Object(
      {
        /** Module paths (or package names) of third-party plugins to load. */
        modules: Type.Array(NonEmpty),
        /** Per-plugin config slices keyed `<kind>:<id>`; each plugin validates its own. */
        config: Type.Record(Type.String({ pattern: PluginConfigKey }), Type.Unknown(), strict),
      },
      strict,
    ),
  },
  strict,
);
export type SvcConfig = Static<typeof SvcConfig>;

type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends Record<string, unknown>
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

function deepOptional(schema: TSchema): TSchema {
  if (!Type.IsObject(schema)) return schema;
  const properties: Record<string, TSchema> = {};
  for (const [key, value] of Object.entries(schema.properties as Record<string, TSchema>)) {
    properties[key] = Type.Optional(deepOptional(value));
  }
  return Type.Object(properties, strict);
}

/** One layer on its own: every field optional, still strict. */
export const SvcConfigOverlay = deepOptional(SvcConfig);
export type SvcConfigOverlay = DeepPartial<SvcConfig>;
