import t from 'tap';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { TSchema } from 'typebox';
import { SvcConfig, SvcConfigOverlay } from '../../../../schemas/config.ts';
import { compileSchema } from '../../../../schemas/validate.ts';
import {
  CONFIG_ENV,
  CONFIG_ENV_BY_PATH,
  configDefaults,
  getPath,
  loadConfig,
} from '../../../../kernel/services/config/index.ts';
import { InputError } from '../../../../core/errors.ts';
import { AGENT_ENV_NAMES } from '../../../../agent/env.ts';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-config-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

let counter = 0;
async function writeYaml(value: unknown): Promise<string> {
  const file = path.join(dir, `c${counter++}.yaml`);
  await writeFile(file, typeof value === 'string' ? value : stringify(value));
  return file;
}

function nest(dotPath: string, value: unknown): Record<string, unknown> {
  const parts = dotPath.split('.');
  let out: unknown = value;
  for (let i = parts.length - 1; i >= 0; i--) out = { [parts[i]!]: out };
  return out as Record<string, unknown>;
}

/** Every leaf path of the schema (objects with properties are walked; records are leaves). */
function leaves(schema: TSchema, prefix = ''): string[] {
  const properties = (schema as { properties?: Record<string, TSchema> }).properties;
  if (!properties) return [prefix];
  return Object.entries(properties).flatMap(([key, inner]) => leaves(inner, prefix === '' ? key : `${prefix}.${key}`));
}

interface FieldCase {
  /** Good value written in the YAML file. */
  file: unknown;
  /** Good env string and what it coerces to. */
  env: string;
  envValue: unknown;
  /** Bad value in the file. */
  badFile: unknown;
  /** Bad env string, or null when every non-empty string is valid for the field. */
  badEnv: string | null;
  /**
   * A field this version does not honour (kernel/services/config/unsupported.ts): `file` and
   * `env` are refused with SVC_ERR_CONFIG_UNSUPPORTED and this message; `accepted` is a value
   * that matches what the code does and still loads.
   */
  refused?: { message: RegExp; accepted?: { env: string; envValue: unknown } };
}

const NO_S3 = /an s3 storage setting, and storage\.type is filesystem \(nothing reads it\): remove storage\.\w+ \(SVC_STORAGE_\w+\) or set storage\.type to s3 \(SVC_STORAGE_TYPE=s3\)/;
const refusedS3 = (c: FieldCase): FieldCase => ({ ...c, refused: { message: NO_S3 } });

const url = (n: number) => `https://h${n}.example.test:${8000 + n}/p`;
const int = (a: number, b: number): Omit<FieldCase, 'badEnv' | 'badFile'> & { badFile: unknown; badEnv: string } => ({
  file: a,
  env: String(b),
  envValue: b,
  badFile: 0,
  badEnv: 'abc',
});
const str = (a: string, b: string, badFile: unknown = ''): FieldCase => ({ file: a, env: b, envValue: b, badFile, badEnv: null });
const urlField = (a: number, b: number): FieldCase => ({ file: url(a), env: url(b), envValue: url(b), badFile: 'ftp://x', badEnv: 'not a url' });
const portField = (a: number, b: number): FieldCase => ({ file: a, env: String(b), envValue: b, badFile: 70000, badEnv: '65536' });
const enumField = (a: string, b: string, bad: string): FieldCase => ({ file: a, env: b, envValue: b, badFile: bad, badEnv: bad });
const boolField = (): FieldCase => ({ file: true, env: 'false', envValue: false, badFile: 'yes', badEnv: 'maybe' });

const FIELDS: Record<string, FieldCase> = {
  'database.url': { file: 'postgres://a@127.0.0.1/db', env: 'postgresql://b@127.0.0.1:5433/db', envValue: 'postgresql://b@127.0.0.1:5433/db', badFile: 'mysql://x', badEnv: 'http://x' },
  'instance.id': { file: 'orch-1', env: 'orch-2', envValue: 'orch-2', badFile: '-bad', badEnv: 'has space' },
  'instance.mode': {
    ...enumField('hybrid', 'observed', 'cloud'),
    refused: { message: /mode (hybrid|observed) is not supported in this version: the node's role follows platform\.url alone .*remove instance\.mode \(SVC_INSTANCE_MODE\)/, accepted: { env: 'independent', envValue: 'independent' } },
  },
  'server.port': portField(8000, 9000),
  'server.host': str('127.0.0.1', '::1'),
  'server.publicUrl': { file: 'https://ci.example.test', env: 'http://127.0.0.1:7700/ci', envValue: 'http://127.0.0.1:7700/ci', badFile: 'ftp://x', badEnv: 'not a url' },
  'server.basePath': { file: '/ci', env: '/x/y', envValue: '/x/y', badFile: 'ci', badEnv: 'no-slash' },
  'server.logLevel': enumField('debug', 'warn', 'loud'),
  // Read by the scaling subsystem and the composition root (docs/scalers.md).
  'scaler.configPath': str('/etc/svc/scaler.yaml', '/opt/scaler.yaml'),
  'scaler.configDir': str('/etc/svc/scalers', '/opt/scalers'),
  'platform.url': urlField(1, 2),
  'platform.token': str('platform-token-file', 'platform-token-env', 123),
  'storage.type': {
    ...enumField('s3', 's3', 'gcs'),
    // s3 alone (no bucket) is refused; with a bucket it loads (test 's3 storage settings' below).
    refused: { message: /s3 storage needs a bucket: set storage\.bucket \(SVC_STORAGE_BUCKET\)/, accepted: { env: 'filesystem', envValue: 'filesystem' } },
  },
  'storage.fsPath': str('/var/a', '/var/b', []),
  'storage.bucket': refusedS3({ file: 'bucket-a', env: 'bucket-b', envValue: 'bucket-b', badFile: 'A', badEnv: 'Bad_Bucket' }),
  'storage.endpoint': refusedS3(urlField(3, 4)),
  'storage.forcePathStyle': { ...boolField(), env: 'true', envValue: true, refused: { message: NO_S3, accepted: { env: 'false', envValue: false } } },
  'storage.uploadEndpoint': refusedS3(urlField(5, 6)),
  'storage.externalEndpoint': refusedS3(urlField(7, 8)),
  'storage.region': refusedS3(str('us-east-1', 'eu-west-1', 5)),
  'storage.accessKeyId': refusedS3(str('AKIAFILE', 'AKIAENV', 7)),
  'storage.secretAccessKey': refusedS3(str('secret-file', 'secret-env', false)),
  agentAuth: enumField('none', 'token', 'basic'),
  agentTokenTtlMs: int(1000, 2000),
  'queue.maxDepth': { ...int(5, 6), badEnv: '1.5' },
  'queue.timeoutMs': int(1001, 1002),
  'lockfileCache.max': int(7, 8),
  'lockfileCache.ttlMs': { ...int(9, 10), badEnv: '-1' },
  'staleDetector.scanIntervalMs': int(11, 12),
  'secrets.key': str('key-from-file', 'key-from-env', 1),
  'secrets.keyFile': str('/run/secrets/a', '/run/secrets/b'),
  'secrets.keyOld': str('old-key-from-file', 'old-key-from-env', true),
  'secrets.keyFileOld': str('/run/secrets/old-a', '/run/secrets/old-b'),
  'secrets.bootstrapAdminToken': { file: 'bootstrap-token-file-0123', env: 'bootstrap-token-env-0123', envValue: 'bootstrap-token-env-0123', badFile: 'short', badEnv: 'short' },
  pgCustomerSecrets: {
    file: false,
    env: 'false',
    envValue: false,
    badFile: 'yes',
    badEnv: 'maybe',
    refused: { message: /customer secrets \(secret contexts\) are always stored in PostgreSQL, sealed with the master key; remove pgCustomerSecrets \(SVC_PG_CUSTOMER_SECRETS\) or set it to true/, accepted: { env: 'true', envValue: true } },
  },
  'cluster.joinToken': { file: 'join-token-file-0123456', env: 'join-token-env-0123456', envValue: 'join-token-env-0123456', badFile: 'short', badEnv: 'short' },
  'cluster.heartbeatMs': int(13, 14),
  'cluster.leaseDurationMs': int(15, 16),
  'cluster.maxDispatchAttempts': int(3, 4),
  'events.maxChainDepth': int(3, 4),
  'events.rateLimitPerOrgPerMinute': int(100, 200),
  'events.retryBaseMs': int(250, 500),
  'events.retryMaxMs': int(10_000, 20_000),
  'reconcile.intervalMs': int(60_000, 120_000),
  'reconcile.lookbackMs': int(3_600_000, 7_200_000),
  'ingestRetry.baseMs': int(500, 700),
  'ingestRetry.maxMs': int(30_000, 40_000),
  'ingestRetry.giveUpAfterMs': int(600_000, 900_000),
  'eventLog.maxPayloadBytes': int(1024, 2048),
  'eventLog.warmRetentionDays': int(7, 90),
  'forgeStatus.runUrlTemplate': { file: 'https://ci.example.test/runs/{orgId}/{runId}', env: 'http://127.0.0.1:7800/v1/orgs/{orgId}/runs/{runId}', envValue: 'http://127.0.0.1:7800/v1/orgs/{orgId}/runs/{runId}', badFile: 'ftp://x/{runId}', badEnv: 'runs/{runId}' },
  'forgeStatus.maxAttempts': int(3, 4),
  'forgeStatus.retryBaseMs': int(100, 200),
  'forgeStatus.retryMaxMs': int(1_000, 2_000),
  'forgeStatus.requestTimeoutMs': int(500, 600),
  'forgeStatus.tickMs': int(250, 500),
  'cache.ttlDays': int(7, 14),
  'cache.userQuotaBytes': int(1_000_000, 2_000_000),
  'artifacts.retentionDays': int(7, 14),
  'artifacts.maxSizeBytes': int(1_000_000, 2_000_000),
  'artifacts.maxPerRun': int(10, 20),
  'audit.retentionDays': int(90, 180),
  'agent.maxReconnectDelayMs': int(17, 18),
  'orchestrator.provenanceIssuer': urlField(9, 10),
  'orchestrator.signerKind': enumField('aws-kms', 'command', 'hsm'),
  'orchestrator.kms.keyArn': str('arn:aws:kms:us-east-1:1:key/a', 'arn:aws:kms:us-east-1:1:key/b'),
  'orchestrator.kms.region': str('us-east-1', 'us-west-2', 7),
  'orchestrator.kms.accessKeyId': str('AKIAFILE', 'AKIAENV'),
  'orchestrator.kms.secretAccessKey': str('secret-file', 'secret-env', false),
  'orchestrator.kms.endpoint': urlField(11, 12),
  'orchestrator.signerCommand': str('/usr/bin/sign-a', '/usr/bin/sign-b'),
  'orchestrator.timestampUrl': urlField(13, 14),
  'orchestrator.timestampCertChainFile': str('/etc/svc/tsa-a.pem', '/etc/svc/tsa-b.pem'),
  'relay.port': portField(7801, 7802),
  'relay.databaseUrl': { file: 'postgres://r@127.0.0.1/relay', env: 'postgres://s@127.0.0.1/relay', envValue: 'postgres://s@127.0.0.1/relay', badFile: 42, badEnv: 'sqlite:relay.db' },
  'relay.host': str('127.0.0.1', '::1'),
  'relay.rateLimitPerOrgRpm': int(60, 120),
  'relay.rateLimitPerIpRpm': int(30, 90),
  'relay.bufferMaxItems': int(100, 200),
  'relay.bufferMaxBytes': int(1_000_000, 2_000_000),
  'relay.bufferTtlMs': int(60_000, 120_000),
  dataDir: str('/data/a', '/data/b'),
  'metrics.port': portField(9100, 9101),
  sealedSecretsRetryBackoffMs: int(19, 20),
  'plugins.modules': { file: ['./a.ts'], env: 'pkg-b, ./c.ts', envValue: ['pkg-b', './c.ts'], badFile: [1], badEnv: null },
  'relay.sso.providers': {
    file: { corp: { kind: 'github', clientId: 'c', clientSecret: 's' } },
    env: '{"corp":{"kind":"github","clientId":"c2","clientSecret":"s2"}}',
    envValue: { corp: { kind: 'github', clientId: 'c2', clientSecret: 's2' } },
    badFile: { Bad: { kind: 'github', clientId: 'c', clientSecret: 's' } },
    badEnv: 'not json',
  },
  'relay.sso.tokenTtlSeconds': { file: 3600, env: '7200', envValue: 7200, badFile: 10, badEnv: 'soon' },
  'relay.sso.publicUrl': { file: 'https://ci.example.com', env: 'https://ci2.example.com', envValue: 'https://ci2.example.com', badFile: 'ftp://ci.example.com', badEnv: 'ci.example.com' },
  'plugins.config': {
    file: { 'provider:github': { appId: 1 } },
    env: '{"provider:github":{"appId":2}}',
    envValue: { 'provider:github': { appId: 2 } },
    badFile: { Bad: {} },
    badEnv: 'not json',
  },
};

t.test('the field table covers every schema field and env table entry', async (t) => {
  const schemaLeaves = leaves(SvcConfig).sort();
  t.same(Object.keys(FIELDS).sort(), schemaLeaves, 'one case per field');
  for (const leaf of schemaLeaves) t.ok(CONFIG_ENV_BY_PATH.get(leaf), `${leaf} has an env name`);
  t.equal(Object.keys(CONFIG_ENV).length, schemaLeaves.length, 'no env name without a field');
});

t.test('spec env names map to their paths', async (t) => {
  const expected: Record<string, string> = {
    SVC_DATABASE_URL: 'database.url',
    SVC_SERVER_PORT: 'server.port',
    SVC_ORCHESTRATOR_SIGNER_KIND: 'orchestrator.signerKind',
    SVC_ORCHESTRATOR_KMS_KEY_ARN: 'orchestrator.kms.keyArn',
    SVC_ORCHESTRATOR_KMS_REGION: 'orchestrator.kms.region',
    SVC_ORCHESTRATOR_KMS_ACCESS_KEY_ID: 'orchestrator.kms.accessKeyId',
    SVC_ORCHESTRATOR_KMS_SECRET_ACCESS_KEY: 'orchestrator.kms.secretAccessKey',
    SVC_SECRET_KEY: 'secrets.key',
    SVC_SECRET_KEY_FILE: 'secrets.keyFile',
    SVC_SECRET_KEY_OLD: 'secrets.keyOld',
    SVC_SECRET_KEY_FILE_OLD: 'secrets.keyFileOld',
    SVC_STORAGE_FS_PATH: 'storage.fsPath',
    SVC_STORAGE_FORCE_PATH_STYLE: 'storage.forcePathStyle',
    SVC_STORAGE_UPLOAD_ENDPOINT: 'storage.uploadEndpoint',
    SVC_STORAGE_EXTERNAL_ENDPOINT: 'storage.externalEndpoint',
    SVC_PLATFORM_URL: 'platform.url',
    SVC_PLATFORM_TOKEN: 'platform.token',
    SVC_RELAY_PORT: 'relay.port',
    SVC_RELAY_DATABASE_URL: 'relay.databaseUrl',
    SVC_DATA_DIR: 'dataDir',
    SVC_METRICS_PORT: 'metrics.port',
    SVC_AGENT_MAX_RECONNECT_DELAY_MS: 'agent.maxReconnectDelayMs',
    SVC_CACHE_TTL_DAYS: 'cache.ttlDays',
    SVC_USER_CACHE_QUOTA_BYTES: 'cache.userQuotaBytes',
    SVC_ARTIFACTS_RETENTION_DAYS: 'artifacts.retentionDays',
    SVC_ARTIFACTS_MAX_SIZE_BYTES: 'artifacts.maxSizeBytes',
    SVC_ARTIFACTS_MAX_PER_RUN: 'artifacts.maxPerRun',
    SVC_AUDIT_RETENTION_DAYS: 'audit.retentionDays',
    SVC_ORCHESTRATOR_PROVENANCE_ISSUER: 'orchestrator.provenanceIssuer',
    SVC_ORCHESTRATOR_SIGNER_COMMAND: 'orchestrator.signerCommand',
    SVC_SEALED_SECRETS_RETRY_BACKOFF_MS: 'sealedSecretsRetryBackoffMs',
  };
  for (const [name, dotPath] of Object.entries(expected)) t.equal(CONFIG_ENV[name], dotPath, name);
});

t.test('defaults', async (t) => {
  const { config, sources } = await loadConfig({ env: {} });
  t.equal(config.server.port, 7700);
  t.equal(config.relay.port, 7800);
  t.equal(config.dataDir, './.svc-data');
  t.equal(config.cluster.maxDispatchAttempts, 5);
  t.equal(config.cluster.leaseDurationMs, 60_000);
  t.equal(config.eventLog.maxPayloadBytes, 5 * 1024 * 1024);
  t.equal(config.eventLog.warmRetentionDays, 30);
  t.equal(config.cache.ttlDays, 30);
  t.equal(config.agent.maxReconnectDelayMs, 60_000);
  t.equal(config.orchestrator.signerKind, 'db');
  t.equal(config.sealedSecretsRetryBackoffMs, 60_000);
  t.equal(config.storage.type, 'filesystem');
  t.same(config.plugins, { modules: [], config: {} });
  t.equal(config.database.url, undefined);
  t.equal(sources.get('server.port'), 'defaults');
  t.notOk(sources.has('server'), 'sources lists leaves only');
  t.ok(compileSchema(SvcConfig).check(configDefaults()), 'defaults satisfy the schema');
  t.ok(Object.isFrozen(config.server), 'config is frozen');
});

for (const [dotPath, c] of Object.entries(FIELDS)) {
  const envName = CONFIG_ENV_BY_PATH.get(dotPath)!;
  t.test(`field ${dotPath}`, async (t) => {
    const defaults = await loadConfig({ env: {} });
    t.same(getPath(defaults.config, dotPath), getPath(configDefaults(), dotPath), 'default');

    const file = await writeYaml(nest(dotPath, c.file));
    if (c.refused !== undefined) {
      await checkRefused(t, dotPath, envName, file, c);
      return;
    }
    const fromFile = await loadConfig({ env: { SVC_CONFIG_FILE: file } });
    t.same(getPath(fromFile.config, dotPath), c.file, 'file beats default');
    const fileLayer = dotPath === 'plugins.config' ? `${dotPath}.provider:github` : dotPath === 'relay.sso.providers' ? `${dotPath}.corp` : dotPath;
    t.equal(fromFile.sources.get(fileLayer), `file ${file}`, 'source is the file');

    const fromEnv = await loadConfig({ env: { SVC_CONFIG_FILE: file, [envName]: c.env } });
    t.same(getPath(fromEnv.config, dotPath), c.envValue, 'env beats file');
    t.equal(fromEnv.sources.get(fileLayer), `env ${envName}`, 'source is the env var');

    const badFile = await writeYaml(nest(dotPath, c.badFile));
    const fileError = await loadConfig({ env: { SVC_CONFIG_FILE: badFile } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(fileError instanceof InputError, 'bad file value refused');
    const fe = fileError as InputError;
    t.equal(fe.code, 'SVC_ERR_CONFIG_INVALID');
    t.match(fe.message, `config ${dotPath}`, 'names the path');
    t.match(fe.message, `(from file ${badFile})`, 'names the file');

    if (c.badEnv !== null) {
      const envError = await loadConfig({ env: { SVC_CONFIG_FILE: file, [envName]: c.badEnv } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      t.ok(envError instanceof InputError, 'bad env value refused');
      const ee = envError as InputError;
      t.equal(ee.code, 'SVC_ERR_CONFIG_INVALID');
      t.match(ee.message, `config ${dotPath}`, 'names the path');
      t.match(ee.message, `(from env ${envName})`, 'names the variable');
      t.notMatch(ee.message, `file ${file}`, 'the good file value is not blamed');
    }
  });
}

/** A refused field: its values stop the load with one line naming field, layer and what to do. */
async function checkRefused(t: Test, dotPath: string, envName: string, file: string, c: FieldCase): Promise<void> {
  const refused = c.refused!;
  for (const [env, layer] of [[{ SVC_CONFIG_FILE: file }, `file ${file}`], [{ [envName]: c.env }, `env ${envName}`]] as const) {
    const error = (await loadConfig({ env }).catch((e: unknown) => e)) as InputError;
    t.ok(error instanceof InputError, `${layer}: refused`);
    t.equal(error.code, 'SVC_ERR_CONFIG_UNSUPPORTED', `${layer}: unsupported, not invalid`);
    t.ok(error.message.startsWith(`config ${dotPath}: `), `${layer}: names the field`);
    t.match(error.message, refused.message, `${layer}: says what is not supported and what to do`);
    t.ok(error.message.endsWith(`(from ${layer})`), `${layer}: names where it was set`);
    t.notMatch(error.message, /\n/, 'one line');
  }
  if (refused.accepted !== undefined) {
    const ok = await loadConfig({ env: { [envName]: refused.accepted.env } });
    t.same(getPath(ok.config, dotPath), refused.accepted.envValue, 'the value the code implements still loads');
  }
  const bad = await writeYaml(nest(dotPath, c.badFile));
  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: bad } }), { code: 'SVC_ERR_CONFIG_INVALID', message: `config ${dotPath}` }, 'a value of the wrong shape is still invalid');
}

t.test('refused fields: the exact line', async (t) => {
  await t.rejects(loadConfig({ env: { SVC_STORAGE_TYPE: 's3' } }), {
    code: 'SVC_ERR_CONFIG_UNSUPPORTED',
    message:
      'config storage.type: s3 storage needs a bucket: set storage.bucket (SVC_STORAGE_BUCKET), and storage.endpoint (SVC_STORAGE_ENDPOINT) for a server other than AWS S3 (from env SVC_STORAGE_TYPE)',
  });
  await t.rejects(loadConfig({ env: { SVC_STORAGE_TYPE: 's3', SVC_STORAGE_BUCKET: 'b-1', SVC_STORAGE_FS_PATH: '/var/lib/svc' } }), {
    code: 'SVC_ERR_CONFIG_UNSUPPORTED',
    message:
      'config storage.fsPath: a filesystem storage setting, and storage.type is s3 (nothing reads it): remove storage.fsPath (SVC_STORAGE_FS_PATH) or set storage.type to filesystem (from env SVC_STORAGE_FS_PATH)',
  });
  await t.rejects(loadConfig({ env: { SVC_INSTANCE_MODE: 'independent', SVC_PLATFORM_URL: 'https://relay.example.test' } }), {
    code: 'SVC_ERR_CONFIG_UNSUPPORTED',
    message: /^config instance\.mode: mode independent is not supported .*, and platform\.url is set\); remove instance\.mode/,
  });
  await t.rejects(loadConfig({ env: {}, shared: { version: 6, config: { pgCustomerSecrets: false } } }), {
    code: 'SVC_ERR_CONFIG_UNSUPPORTED',
    message: /^config pgCustomerSecrets: .* \(from shared config v6\)$/,
  });
  const both = (await loadConfig({ env: { SVC_STORAGE_TYPE: 's3', SVC_PG_CUSTOMER_SECRETS: 'false' } }).catch((e: unknown) => e)) as InputError;
  t.same((both.details as { issues: { path: string }[] }).issues.map((i) => i.path), ['storage.type', 'pgCustomerSecrets'], 'every refused field named at once');
  const defaults = await loadConfig({ env: {} });
  t.equal(defaults.config.pgCustomerSecrets, true, 'the default says what the code does');
  t.equal(defaults.config.storage.forcePathStyle, false);
});

t.test('s3 storage settings: every SVC_STORAGE_* s3 setting loads with storage.type s3, from env and file', async (t) => {
  const env = {
    SVC_STORAGE_TYPE: 's3',
    SVC_STORAGE_BUCKET: 'svc-objects',
    SVC_STORAGE_ENDPOINT: 'http://minio.internal:9000',
    SVC_STORAGE_FORCE_PATH_STYLE: 'true',
    SVC_STORAGE_UPLOAD_ENDPOINT: 'https://objects.example.test',
    SVC_STORAGE_EXTERNAL_ENDPOINT: 'http://10.0.0.5:9000',
    SVC_STORAGE_REGION: 'eu-west-1',
    SVC_STORAGE_ACCESS_KEY_ID: 'AKIAEXAMPLE',
    SVC_STORAGE_SECRET_ACCESS_KEY: 'storage-secret',
  };
  const expected = {
    type: 's3',
    bucket: 'svc-objects',
    endpoint: 'http://minio.internal:9000',
    forcePathStyle: true,
    uploadEndpoint: 'https://objects.example.test',
    externalEndpoint: 'http://10.0.0.5:9000',
    region: 'eu-west-1',
    accessKeyId: 'AKIAEXAMPLE',
    secretAccessKey: 'storage-secret',
  };
  t.same((await loadConfig({ env })).config.storage, expected, 'from env');
  const file = await writeYaml({ storage: expected });
  const fromFile = await loadConfig({ env: { SVC_CONFIG_FILE: file } });
  t.same(fromFile.config.storage, expected, 'from the file');
  t.equal(fromFile.sources.get('storage.externalEndpoint'), `file ${file}`);
  const minimal = await loadConfig({ env: { SVC_STORAGE_TYPE: 's3', SVC_STORAGE_BUCKET: 'svc-objects' } });
  t.same(minimal.config.storage, { type: 's3', bucket: 'svc-objects', forcePathStyle: false }, 'AWS S3 with the default credential chain needs only the bucket');
});

t.test('refusal message format', async (t) => {
  await t.rejects(loadConfig({ env: { SVC_SERVER_PORT: '70000' } }), {
    code: 'SVC_ERR_CONFIG_INVALID',
    message: 'config server.port: must be <= 65535 (from env SVC_SERVER_PORT)',
  });
  await t.rejects(loadConfig({ env: { SVC_STORAGE_TYPE: 'gcs' } }), {
    message: 'config storage.type: must be one of filesystem, s3 (from env SVC_STORAGE_TYPE)',
  });
  const error = (await loadConfig({ env: { SVC_SERVER_PORT: 'x', SVC_RELAY_PORT: '-1' } }).catch((e: unknown) => e)) as InputError;
  t.match(error.message, 'server.port');
  t.match(error.message, 'relay.port', 'all problems reported at once');
  const issues = (error.details as { issues: { path: string; layer: string }[] }).issues;
  t.same(issues.map((i) => [i.path, i.layer]).sort(), [
    ['relay.port', 'env SVC_RELAY_PORT'],
    ['server.port', 'env SVC_SERVER_PORT'],
  ]);
});

t.test('secret values are not echoed in refusals', async (t) => {
  const error = (await loadConfig({ env: { SVC_BOOTSTRAP_ADMIN_TOKEN: 'tiny-secret', SVC_CLUSTER_JOIN_TOKEN: 'tiny-join' } }).catch((e: unknown) => e)) as InputError;
  t.match(error.message, 'secrets.bootstrapAdminToken');
  t.notMatch(error.message, 'tiny-secret');
  t.notMatch(error.message, 'tiny-join');
});

t.test('unknown SVC_ variables', async (t) => {
  await t.rejects(loadConfig({ env: { SVC_SERVR_PORT: '1' } }), {
    code: 'SVC_ERR_CONFIG_INVALID',
    message: /unknown setting SVC_SERVR_PORT \(did you mean SVC_SERVER_PORT\?\) \(from env SVC_SERVR_PORT\)/,
  });
  await t.rejects(loadConfig({ env: { SVC_COMPLETELY_DIFFERENT_THING_HERE: '1' } }), { message: /unknown setting SVC_COMPLETELY_DIFFERENT_THING_HERE \(from/ });
  const ok = await loadConfig({
    env: {
      SVC_AGENT_TOKEN: 't',
      SVC_AGENT_LABELS: 'a,b',
      SVC_AGENT_ID: 'x',
      SVC_ORCHESTRATOR_URL: 'ws://127.0.0.1:1',
      SVC_TEST_DATABASE_URL: 'postgres://x',
      SVC_MY_TOOL_FLAG: '1',
      OTHER: 'ignored',
      PATH: '/bin',
    },
    nonConfigEnv: ['SVC_MY_TOOL_FLAG'],
  });
  t.equal(ok.config.server.port, 7700, 'non-config SVC_ names and non-SVC names are ignored');
  const empty = await loadConfig({ env: { SVC_SERVER_PORT: '', SVC_CONFIG_FILE: '' } });
  t.equal(empty.config.server.port, 7700, 'an empty variable counts as unset');
});

t.test("the agent's own settings are not refused by an orchestrator sharing the environment (svc dev)", async (t) => {
  // Not config fields (the agent reads its own environment, agent/env.ts), so not in FIELDS; the
  // ones that are config too (SVC_AGENT_MAX_RECONNECT_DELAY_MS) are checked there.
  const env = Object.fromEntries(AGENT_ENV_NAMES.map((name) => [name, name === 'SVC_AGENT_MAX_RECONNECT_DELAY_MS' ? '1000' : name === 'SVC_AGENT_METRICS_PORT' ? '9464' : 'x']));
  const { config } = await loadConfig({ env });
  t.equal(config.server.port, 7700, `accepted: ${AGENT_ENV_NAMES.join(', ')}`);
  t.ok(AGENT_ENV_NAMES.includes('SVC_AGENT_METRICS_PORT') && AGENT_ENV_NAMES.includes('SVC_AGENT_METRICS_HOST'), 'the metrics settings are agent settings');
});

t.test('YAML file problems', async (t) => {
  const syntax = await writeYaml('server:\n  port: 8000\n  basePath: [unclosed\n');
  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: syntax } }), {
    code: 'SVC_ERR_CONFIG_INVALID',
    message: new RegExp(`YAML syntax error at line \\d+, column \\d+: .*\\(from file ${syntax.replace(/[.]/g, '\\.')}\\)`),
  });
  const tab = await writeYaml('server:\n  port: 8000\n bad: indentation\n');
  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: tab } }), { message: /line 3/ });

  const unknown = await writeYaml({ server: { port: 8000, prot: 1 }, storage: { nested: { deep: true } }, stray: 1 });
  const error = (await loadConfig({ env: { SVC_CONFIG_FILE: unknown } }).catch((e: unknown) => e)) as InputError;
  t.match(error.message, `config server.prot: unknown field (from file ${unknown})`);
  t.match(error.message, `config storage.nested: unknown field (from file ${unknown})`);
  t.match(error.message, `config stray: unknown field (from file ${unknown})`);

  const dup = await writeYaml('server:\n  port: 1\n  port: 2\n');
  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: dup } }), { message: /YAML syntax error at line 3/ });

  const list = await writeYaml('- a\n- b\n');
  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: list } }), { message: /must hold a mapping/ });

  const section = await writeYaml('server: 5\n');
  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: section } }), { message: `config server: must be object (from file ${section})` });

  const proto = await writeYaml('__proto__:\n  polluted: true\nserver:\n  port: 8000\n');
  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: proto } }), { message: /config __proto__: unknown field/ });
  t.equal(({} as Record<string, unknown>)['polluted'], undefined, 'no prototype pollution');

  const empty = await writeYaml('');
  t.equal((await loadConfig({ env: { SVC_CONFIG_FILE: empty } })).config.server.port, 7700, 'empty file is no settings');

  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: path.join(dir, 'missing.yaml') } }), {
    code: 'SVC_ERR_CONFIG_FILE_UNREADABLE',
    message: /missing\.yaml \(named by SVC_CONFIG_FILE\) does not exist/,
  });
  const sub = path.join(dir, 'a-directory');
  await mkdir(sub);
  await t.rejects(loadConfig({ env: { SVC_CONFIG_FILE: sub } }), { code: 'SVC_ERR_CONFIG_FILE_UNREADABLE', message: /is a directory/ });
});

t.test('relative SVC_CONFIG_FILE resolves against cwd', async (t) => {
  const file = await writeYaml({ server: { port: 8123 } });
  const loaded = await loadConfig({ env: { SVC_CONFIG_FILE: path.basename(file) }, cwd: dir });
  t.equal(loaded.config.server.port, 8123);
  t.equal(loaded.file, file);
});

t.test('merging keeps sibling values from lower layers', async (t) => {
  const file = await writeYaml({ storage: { type: 'filesystem', fsPath: '/from-file' }, plugins: { config: { 'storage:fixture': { a: 1 } } } });
  const { config, sources } = await loadConfig({
    env: { SVC_CONFIG_FILE: file, SVC_STORAGE_FS_PATH: '/from-env', SVC_PLUGINS_CONFIG: '{"provider:git":{"b":2}}' },
  });
  t.equal(config.storage.type, 'filesystem');
  t.equal(config.storage.fsPath, '/from-env');
  t.equal(config.storage.forcePathStyle, false);
  t.same(config.plugins.config, { 'storage:fixture': { a: 1 }, 'provider:git': { b: 2 } });
  t.equal(sources.get('storage.type'), `file ${file}`);
  t.equal(sources.get('storage.forcePathStyle'), 'defaults');
});

t.test('shared config layer sits between defaults and the file', async (t) => {
  const file = await writeYaml({ queue: { maxDepth: 50 } });
  const { config, sources } = await loadConfig({
    env: { SVC_CONFIG_FILE: file, SVC_QUEUE_TIMEOUT_MS: '77' },
    shared: { version: 3, config: { queue: { maxDepth: 40, timeoutMs: 30 }, lockfileCache: { max: 9 } } },
  });
  t.equal(config.queue.maxDepth, 50);
  t.equal(config.queue.timeoutMs, 77);
  t.equal(config.lockfileCache.max, 9);
  t.equal(sources.get('lockfileCache.max'), 'shared config v3');
  await t.rejects(loadConfig({ env: {}, shared: { version: 4, config: { queue: { maxDepth: -1 } } } }), {
    message: 'config queue.maxDepth: must be >= 1 (from shared config v4)',
  });
  await t.rejects(loadConfig({ env: {}, shared: { version: 5, config: [] } }), { message: /from shared config v5/ });
});

t.test('overlay schema: everything optional, still strict', async (t) => {
  const overlay = compileSchema(SvcConfigOverlay);
  t.ok(overlay.check({}));
  t.ok(overlay.check({ server: { port: 1 } }));
  t.ok(overlay.check({ plugins: { config: { 'provider:github': { x: 1 } } } }));
  t.notOk(overlay.check({ server: { port: -1 } }));
  t.notOk(overlay.check({ server: { other: 1 } }));
  t.notOk(overlay.check({ plugins: { config: { nokind: {} } } }));
});
