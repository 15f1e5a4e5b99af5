// Built-in defaults: the bottom config layer. Values fixed by the spec are marked (spec); the
// rest are our choice where the spec says "not shown", picked to be safe for one machine.
import type { SvcConfig } from '../../../schemas/config.ts';

export function configDefaults(): SvcConfig {
  return {
    database: {},
    instance: {},
    server: { port: 7700, host: '0.0.0.0', logLevel: 'info' },
    scaler: {},
    platform: {},
    storage: { type: 'filesystem', forcePathStyle: false },
    agentAuth: 'token',
    queue: { maxDepth: 10_000, timeoutMs: 60 * 60_000 },
    lockfileCache: { max: 500, ttlMs: 5 * 60_000 },
    staleDetector: {}, // absent: derived from the recovery window (dispatch/service.ts)
    secrets: {},
    pgCustomerSecrets: true, // customer secrets live in PostgreSQL, sealed; false is refused (unsupported.ts)
    cluster: {
      heartbeatMs: 10_000,
      leaseDurationMs: 60_000, // spec: lease default 60 s
      maxDispatchAttempts: 5, // spec
    },
    // Not shown by the spec: our choices.
    events: { maxChainDepth: 10, rateLimitPerOrgPerMinute: 6000, retryBaseMs: 1000, retryMaxMs: 5 * 60_000 },
    // Not shown by the spec: our choices (a pass every 10 min over the last day; GitHub keeps three).
    reconcile: { intervalMs: 10 * 60_000, lookbackMs: 24 * 3600_000 },
    // Not shown by the spec: our choices (2 s doubling to 5 min; given up after a day).
    ingestRetry: { baseMs: 2000, maxMs: 5 * 60_000, giveUpAfterMs: 24 * 3600_000 },
    eventLog: { maxPayloadBytes: 5 * 1024 * 1024, warmRetentionDays: 30 }, // spec: 5 MB; warm 30 days
    // Not shown by the spec: our choices (12 attempts spread over up to about four hours).
    forgeStatus: { maxAttempts: 12, retryBaseMs: 10_000, retryMaxMs: 60 * 60_000, requestTimeoutMs: 10_000, tickMs: 5_000 },
    cache: { ttlDays: 30 }, // spec
    // Retention 30 days (issue 13); size and count bounds are our choice.
    artifacts: { retentionDays: 30, maxSizeBytes: 2 * 1024 * 1024 * 1024, maxPerRun: 500 },
    // Not shown by the spec: our choice (a year, what audits usually ask of change records).
    audit: { retentionDays: 365 },
    agent: { maxReconnectDelayMs: 60_000 }, // spec
    orchestrator: { signerKind: 'db', kms: {} }, // spec: db is the default custody
    relay: {
      port: 7800,
      host: '0.0.0.0', // the relay is the public ingest point
      // Not shown by the spec: our choices.
      rateLimitPerOrgRpm: 6000,
      rateLimitPerIpRpm: 1200,
      bufferMaxItems: 10_000,
      bufferMaxBytes: 1024 * 1024 * 1024,
      bufferTtlMs: 72 * 60 * 60_000, // providers keep deliveries ~3 days for manual redelivery
    },
    dataDir: './.svc-data',
    metrics: {},
    sealedSecretsRetryBackoffMs: 60_000,
    plugins: { modules: [], config: {} },
  };
}
