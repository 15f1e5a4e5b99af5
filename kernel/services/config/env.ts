// The `SVC_*` environment layer. Names are an explicit table rather than a derivation rule,
// because the spec fixes several names that no rule produces (SVC_SECRET_KEY → secrets.key,
// SVC_USER_CACHE_QUOTA_BYTES → cache.userQuotaBytes). The rule for names we chose ourselves:
// `SVC_` + the dot path in upper snake case (server.basePath → SVC_SERVER_BASE_PATH).

/** Environment variable → config dot path. */
export const CONFIG_ENV: Readonly<Record<string, string>> = Object.freeze({
  SVC_DATABASE_URL: 'database.url',
  SVC_INSTANCE_ID: 'instance.id',
  SVC_INSTANCE_MODE: 'instance.mode',
  SVC_SERVER_PORT: 'server.port',
  SVC_SERVER_HOST: 'server.host',
  SVC_SERVER_PUBLIC_URL: 'server.publicUrl',
  SVC_SERVER_BASE_PATH: 'server.basePath',
  SVC_SERVER_LOG_LEVEL: 'server.logLevel',
  SVC_SCALER_CONFIG_PATH: 'scaler.configPath',
  SVC_SCALER_CONFIG_DIR: 'scaler.configDir',
  SVC_PLATFORM_URL: 'platform.url',
  SVC_PLATFORM_TOKEN: 'platform.token',
  SVC_STORAGE_TYPE: 'storage.type',
  SVC_STORAGE_FS_PATH: 'storage.fsPath',
  SVC_STORAGE_BUCKET: 'storage.bucket',
  SVC_STORAGE_ENDPOINT: 'storage.endpoint',
  SVC_STORAGE_FORCE_PATH_STYLE: 'storage.forcePathStyle',
  SVC_STORAGE_UPLOAD_ENDPOINT: 'storage.uploadEndpoint',
  SVC_STORAGE_EXTERNAL_ENDPOINT: 'storage.externalEndpoint',
  SVC_STORAGE_REGION: 'storage.region',
  SVC_STORAGE_ACCESS_KEY_ID: 'storage.accessKeyId',
  SVC_STORAGE_SECRET_ACCESS_KEY: 'storage.secretAccessKey',
  SVC_AGENT_AUTH: 'agentAuth',
  SVC_AGENT_TOKEN_TTL_MS: 'agentTokenTtlMs',
  SVC_QUEUE_MAX_DEPTH: 'queue.maxDepth',
  SVC_QUEUE_TIMEOUT_MS: 'queue.timeoutMs',
  SVC_LOCKFILE_CACHE_MAX: 'lockfileCache.max',
  SVC_LOCKFILE_CACHE_TTL_MS: 'lockfileCache.ttlMs',
  SVC_STALE_DETECTOR_SCAN_INTERVAL_MS: 'staleDetector.scanIntervalMs',
  SVC_SECRET_KEY: 'secrets.key',
  SVC_SECRET_KEY_FILE: 'secrets.keyFile',
  SVC_SECRET_KEY_OLD: 'secrets.keyOld',
  SVC_SECRET_KEY_FILE_OLD: 'secrets.keyFileOld',
  SVC_BOOTSTRAP_ADMIN_TOKEN: 'secrets.bootstrapAdminToken',
  SVC_PG_CUSTOMER_SECRETS: 'pgCustomerSecrets',
  SVC_CLUSTER_JOIN_TOKEN: 'cluster.joinToken',
  SVC_CLUSTER_HEARTBEAT_MS: 'cluster.heartbeatMs',
  SVC_CLUSTER_LEASE_DURATION_MS: 'cluster.leaseDurationMs',
  SVC_CLUSTER_MAX_DISPATCH_ATTEMPTS: 'cluster.maxDispatchAttempts',
  SVC_EVENTS_MAX_CHAIN_DEPTH: 'events.maxChainDepth',
  SVC_EVENTS_RATE_LIMIT_PER_ORG_PER_MINUTE: 'events.rateLimitPerOrgPerMinute',
  SVC_EVENTS_RETRY_BASE_MS: 'events.retryBaseMs',
  SVC_EVENTS_RETRY_MAX_MS: 'events.retryMaxMs',
  SVC_RECONCILE_INTERVAL_MS: 'reconcile.intervalMs',
  SVC_RECONCILE_LOOKBACK_MS: 'reconcile.lookbackMs',
  SVC_INGEST_RETRY_BASE_MS: 'ingestRetry.baseMs',
  SVC_INGEST_RETRY_MAX_MS: 'ingestRetry.maxMs',
  SVC_INGEST_RETRY_GIVE_UP_AFTER_MS: 'ingestRetry.giveUpAfterMs',
  SVC_EVENT_LOG_MAX_PAYLOAD_BYTES: 'eventLog.maxPayloadBytes',
  SVC_EVENT_LOG_WARM_RETENTION_DAYS: 'eventLog.warmRetentionDays',
  SVC_FORGE_STATUS_RUN_URL_TEMPLATE: 'forgeStatus.runUrlTemplate',
  SVC_FORGE_STATUS_MAX_ATTEMPTS: 'forgeStatus.maxAttempts',
  SVC_FORGE_STATUS_RETRY_BASE_MS: 'forgeStatus.retryBaseMs',
  SVC_FORGE_STATUS_RETRY_MAX_MS: 'forgeStatus.retryMaxMs',
  SVC_FORGE_STATUS_REQUEST_TIMEOUT_MS: 'forgeStatus.requestTimeoutMs',
  SVC_FORGE_STATUS_TICK_MS: 'forgeStatus.tickMs',
  SVC_CACHE_TTL_DAYS: 'cache.ttlDays',
  SVC_USER_CACHE_QUOTA_BYTES: 'cache.userQuotaBytes',
  SVC_ARTIFACTS_RETENTION_DAYS: 'artifacts.retentionDays',
  SVC_ARTIFACTS_MAX_SIZE_BYTES: 'artifacts.maxSizeBytes',
  SVC_ARTIFACTS_MAX_PER_RUN: 'artifacts.maxPerRun',
  SVC_AUDIT_RETENTION_DAYS: 'audit.retentionDays',
  SVC_AGENT_MAX_RECONNECT_DELAY_MS: 'agent.maxReconnectDelayMs',
  SVC_ORCHESTRATOR_PROVENANCE_ISSUER: 'orchestrator.provenanceIssuer',
  SVC_ORCHESTRATOR_SIGNER_KIND: 'orchestrator.signerKind',
  SVC_ORCHESTRATOR_KMS_KEY_ARN: 'orchestrator.kms.keyArn',
  SVC_ORCHESTRATOR_KMS_REGION: 'orchestrator.kms.region',
  SVC_ORCHESTRATOR_KMS_ACCESS_KEY_ID: 'orchestrator.kms.accessKeyId',
  SVC_ORCHESTRATOR_KMS_SECRET_ACCESS_KEY: 'orchestrator.kms.secretAccessKey',
  SVC_ORCHESTRATOR_KMS_ENDPOINT: 'orchestrator.kms.endpoint',
  SVC_ORCHESTRATOR_SIGNER_COMMAND: 'orchestrator.signerCommand',
  SVC_ORCHESTRATOR_TIMESTAMP_URL: 'orchestrator.timestampUrl',
  SVC_ORCHESTRATOR_TIMESTAMP_CERT_CHAIN_FILE: 'orchestrator.timestampCertChainFile',
  SVC_RELAY_PORT: 'relay.port',
  SVC_RELAY_DATABASE_URL: 'relay.databaseUrl',
  SVC_RELAY_HOST: 'relay.host',
  SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: 'relay.rateLimitPerOrgRpm',
  SVC_RELAY_RATE_LIMIT_PER_IP_RPM: 'relay.rateLimitPerIpRpm',
  SVC_RELAY_BUFFER_MAX_ITEMS: 'relay.bufferMaxItems',
  SVC_RELAY_BUFFER_MAX_BYTES: 'relay.bufferMaxBytes',
  SVC_RELAY_BUFFER_TTL_MS: 'relay.bufferTtlMs',
  SVC_RELAY_SSO_PROVIDERS: 'relay.sso.providers',
  SVC_RELAY_SSO_TOKEN_TTL_SECONDS: 'relay.sso.tokenTtlSeconds',
  SVC_RELAY_SSO_PUBLIC_URL: 'relay.sso.publicUrl',
  SVC_DATA_DIR: 'dataDir',
  SVC_METRICS_PORT: 'metrics.port',
  SVC_SEALED_SECRETS_RETRY_BACKOFF_MS: 'sealedSecretsRetryBackoffMs',
  SVC_PLUGINS_MODULES: 'plugins.modules',
  SVC_PLUGINS_CONFIG: 'plugins.config',
});

/** Config dot path → its environment variable. */
export const CONFIG_ENV_BY_PATH: ReadonlyMap<string, string> = new Map(
  Object.entries(CONFIG_ENV).map(([name, path]) => [path, name]),
);

/**
 * `SVC_*` variables read by other programs (agent, CLIs, tests) or by the loader itself. They
 * are not config and are never refused. Anything else starting with `SVC_` is a config typo.
 */
export const NON_CONFIG_ENV_NAMES: ReadonlySet<string> = new Set([
  'SVC_CONFIG_FILE',
  'SVC_ORCHESTRATOR_URL',
  'SVC_AGENT_TOKEN',
  'SVC_AGENT_LABELS',
  'SVC_AGENT_ID',
  // The agent's own settings (agent/env.ts AGENT_ENV_NAMES).
  'SVC_AGENT_EPHEMERAL',
  'SVC_AGENT_SANDBOX',
  'SVC_AGENT_WORK_DIR',
  'SVC_AGENT_LOG_LEVEL',
  'SVC_AGENT_BWRAP',
  'SVC_AGENT_CONTAINER_RUNTIME',
  'SVC_AGENT_FIRECRACKER_BIN',
  'SVC_AGENT_FIRECRACKER_KERNEL',
  'SVC_AGENT_FIRECRACKER_ROOTFS',
  'SVC_AGENT_METRICS_PORT',
  'SVC_AGENT_METRICS_HOST',
  'SVC_AGENT_PASS_ENV',
]);

export const NON_CONFIG_ENV_PREFIXES: readonly string[] = ['SVC_TEST_'];

export function isNonConfigEnv(name: string, extra: readonly string[] = []): boolean {
  return NON_CONFIG_ENV_NAMES.has(name) || extra.includes(name) || NON_CONFIG_ENV_PREFIXES.some((p) => name.startsWith(p));
}

/** Closest known config variable, for "did you mean" in refusals. */
export function closestEnvName(name: string): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of Object.keys(CONFIG_ENV)) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      bestDistance = d;
      best = candidate;
    }
  }
  // Only suggest near misses; a far match is noise.
  return bestDistance <= Math.max(2, Math.floor(name.length / 6)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}
