// Shared config versions in real PostgreSQL: rows are immutable (the database refuses UPDATE,
// DELETE and TRUNCATE), the secret paths (the spec's four and the S3 secret access key: every
// field the config schema marks secret) are sealed exactly as the spec lays out (checked by
// opening them here with node:crypto alone), no table of the database holds a sensitive value in
// plain text, a redacted export shows ***REDACTED*** at every secret path, a rollback is a new
// version copying the old content, a bad document writes nothing, and a version stored before
// the S3 secret was sealed is read as before and sealed by the next write.
import { createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { sharedFieldsOf } from '../../../../kernel/orchestrator/config/fields.ts';
import { planReload } from '../../../../kernel/orchestrator/config/reload.ts';
import {
  latestConfigVersion,
  listConfigVersions,
  readConfigVersion,
  rollbackConfigVersion,
  writeConfigVersion,
} from '../../../../kernel/orchestrator/config/versions.ts';
import { configDefaults, redactConfig, REDACTED } from '../../../../kernel/services/config/index.ts';
import { configFieldsSealedStore } from '../../../../kernel/orchestrator/config/sealed-store.ts';
import { encryptConfigFields } from '../../../../kernel/services/crypto/config-fields.ts';
import { sweepSealedStores } from '../../../../kernel/services/crypto/sealed-stores.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';


const KEY = randomBytes(32);
const KEYS = [{ name: 'current', key: KEY }];

// Canaries: distinctive values to look for in the database afterwards.
const CANARY = {
  'platform.token': 'canary-platform-token-7Qx2Lm9Vb4',
  'secrets.key': 'canary-master-key-Zt8Pw3Rk6Hd1',
  'secrets.bootstrapAdminToken': 'canary-admin-token-Yc5Nf0Gs2Ja7',
  'cluster.joinToken': 'canary-join-token-Ub4Ke9Wq1Xo3',
  'storage.secretAccessKey': 'canary-s3-secret-Hq7Vd2Lx8Pm5',
} as const;

const DOCUMENT = {
  platform: { url: 'https://platform.example.test', token: CANARY['platform.token'] },
  secrets: { key: CANARY['secrets.key'], bootstrapAdminToken: CANARY['secrets.bootstrapAdminToken'] },
  cluster: { joinToken: CANARY['cluster.joinToken'], heartbeatMs: 5000 },
  storage: { type: 's3', bucket: 'ci-cache', endpoint: 'https://s3.example.test', forcePathStyle: true, accessKeyId: 'AKIAEXAMPLEPUBLIC', secretAccessKey: CANARY['storage.secretAccessKey'] },
  queue: { maxDepth: 250 },
  agentAuth: 'token',
};

/** Open a sealed value with node:crypto alone, per the spec: base64(IV 12 ‖ tag 16 ‖ ciphertext), AD config-field:<path>. */
function openIndependently(sealed: string, path: string): string {
  const raw = Buffer.from(sealed, 'base64');
  const iv = raw.subarray(0, 12);
  const tag = raw.subarray(12, 28);
  const ciphertext = raw.subarray(28);
  const decipher = createDecipheriv('aes-256-gcm', KEY, iv);
  decipher.setAAD(Buffer.from(`config-field:${path}`, 'utf8'));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
}

/** Every row of every table in the database, as text. */
async function everyRowAsText(pool: DatabasePool): Promise<string> {
  const tables = await pool.anyFirst(sql.unsafe`SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`);
  let text = '';
  for (const table of tables as string[]) {
    const rows = await pool.anyFirst(sql.unsafe`SELECT t::text FROM ${sql.identifier(table.split('.').map((p) => p.replace(/^"|"$/g, '')))} t`);
    text += (rows as string[]).join('\n');
  }
  return text;
}

async function count(pool: DatabasePool): Promise<number> {
  return Number(await pool.oneFirst(sql.unsafe`SELECT count(*) FROM config_versions`));
}

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });

  const first = await writeConfigVersion(db.pool, KEY, { config: DOCUMENT, createdBy: 'api:set', description: 'first' });

  await t.test('a version is sealed at exactly the secret paths, in the spec\'s layout', async (t) => {
    t.same([...first.encryptedPaths].sort(), Object.keys(CANARY).sort());
    const stored = await db.pool.oneFirst(sql.unsafe`SELECT config FROM config_versions WHERE version = ${first.version}`);
    for (const [path, canary] of Object.entries(CANARY)) {
      const [section, leaf] = path.split('.') as [string, string];
      const sealed = (stored as Record<string, Record<string, string>>)[section]![leaf]!;
      t.notOk(sealed.includes(canary), `${path} is not stored in plain text`);
      t.ok(/^[A-Za-z0-9+/]+=*$/.test(sealed), `${path} is base64`);
      t.ok(Buffer.from(sealed, 'base64').length >= 12 + 16 + canary.length, `${path} holds IV, tag and ciphertext`);
      t.equal(openIndependently(sealed, path), canary, `${path} opens with node:crypto and AD config-field:${path}`);
      t.throws(() => openIndependently(sealed, 'platform.url'), `${path} does not open with another path's additional data`);
    }
    t.equal((stored as { queue: { maxDepth: number } }).queue.maxDepth, 250, 'other values are stored as they are');
    const read = await readConfigVersion(db.pool, KEYS, first.version);
    t.same(read?.config, DOCUMENT, 'reading opens the sealed values again');
  });

  await t.test('no table of the database holds a sensitive value in plain text', async (t) => {
    const everything = await everyRowAsText(db.pool);
    t.ok(everything.includes('platform.example.test'), 'the dump does include the version (control)');
    for (const [path, canary] of Object.entries(CANARY)) t.notOk(everything.includes(canary), `${path} canary absent`);
  });

  await t.test('a redacted export shows ***REDACTED*** at every secret path', async (t) => {
    const latest = await latestConfigVersion(db.pool, KEYS);
    const redacted = redactConfig(latest!.config) as typeof DOCUMENT;
    t.equal(redacted.platform.token, REDACTED);
    t.equal(redacted.secrets.key, REDACTED);
    t.equal(redacted.secrets.bootstrapAdminToken, REDACTED);
    t.equal(redacted.cluster.joinToken, REDACTED);
    t.equal(redacted.storage.secretAccessKey, REDACTED);
    t.equal(redacted.storage.accessKeyId, 'AKIAEXAMPLEPUBLIC', 'an access key id is not a secret');
    t.equal(redacted.platform.url, 'https://platform.example.test', 'plain fields stay');
    t.notOk(JSON.stringify(redacted).includes('canary-'), 'no canary left anywhere');
  });

  await t.test('rows are immutable: the database refuses UPDATE, DELETE and TRUNCATE', async (t) => {
    await t.rejects(db.pool.query(sql.unsafe`UPDATE config_versions SET description = 'changed' WHERE version = ${first.version}`), /immutable/);
    await t.rejects(db.pool.query(sql.unsafe`UPDATE config_versions SET config = '{}'::jsonb`), /immutable/);
    await t.rejects(db.pool.query(sql.unsafe`DELETE FROM config_versions`), /immutable/);
    await t.rejects(db.pool.query(sql.unsafe`TRUNCATE config_versions`), /immutable/);
    const row = await readConfigVersion(db.pool, KEYS, first.version);
    t.equal(row?.summary.description, 'first', 'the row is unchanged');
    t.equal(await count(db.pool), 1);
  });

  await t.test('a rollback is a new version copying the target content', async (t) => {
    const second = await writeConfigVersion(db.pool, KEY, { config: { queue: { maxDepth: 999 } }, createdBy: 'cli:set' });
    t.equal(second.version, first.version + 1, 'versions count up');
    const third = await rollbackConfigVersion(db.pool, KEYS, first.version, 'api:rollback');
    t.equal(third.version, second.version + 1, 'the rollback is a new version');
    t.equal(third.createdBy, 'api:rollback');
    t.equal(third.description, `rollback to version ${first.version}`);
    const copy = await readConfigVersion(db.pool, KEYS, third.version);
    t.same(copy?.config, DOCUMENT, 'same content as the target');
    t.same([...third.encryptedPaths].sort(), Object.keys(CANARY).sort(), 'sealed again');
    const original = await db.pool.oneFirst(sql.unsafe`SELECT config->'platform'->>'token' FROM config_versions WHERE version = ${first.version}`);
    const copied = await db.pool.oneFirst(sql.unsafe`SELECT config->'platform'->>'token' FROM config_versions WHERE version = ${third.version}`);
    t.not(copied, original, 'sealed with a fresh IV, not copied bytes');
    t.same((await listConfigVersions(db.pool)).map((v) => v.version), [third.version, second.version, first.version], 'history newest first, older rows kept');
    await t.rejects(rollbackConfigVersion(db.pool, KEYS, 9999, 'api:rollback'), { code: 'SVC_ERR_CONFIG_VERSION_NOT_FOUND' });
  });

  await t.test('a bad document is refused and nothing is written', async (t) => {
    const before = await count(db.pool);
    await t.rejects(writeConfigVersion(db.pool, KEY, { config: { database: { url: 'postgres://x/y' } }, createdBy: 'api:set' }), {
      code: 'SVC_ERR_CONFIG_LOCAL_FIELD',
      message: /database\.url is a local field/,
    });
    await t.rejects(writeConfigVersion(db.pool, KEY, { config: { server: { port: 9000 }, instance: { id: 'n1' } }, createdBy: 'api:set' }), {
      code: 'SVC_ERR_CONFIG_LOCAL_FIELD',
      message: /server\.port, instance\.id are local fields/,
    });
    await t.rejects(writeConfigVersion(db.pool, KEY, { config: { queue: { maxDepth: -3 } }, createdBy: 'api:set' }), { code: 'SVC_ERR_CONFIG_VERSION_INVALID', message: /queue\.maxDepth/ });
    await t.rejects(writeConfigVersion(db.pool, KEY, { config: { agentAuth: 'maybe' }, createdBy: 'api:set' }), { code: 'SVC_ERR_CONFIG_VERSION_INVALID', message: /agentAuth/ });
    await t.rejects(writeConfigVersion(db.pool, KEY, { config: { queue: { maxDepht: 3 } }, createdBy: 'api:set' }), { code: 'SVC_ERR_CONFIG_VERSION_INVALID', message: /maxDepht/ });
    await t.rejects(writeConfigVersion(db.pool, KEY, { config: { platform: { token: REDACTED } }, createdBy: 'api:set' }), { code: 'SVC_ERR_CONFIG_REDACTED_VALUE' });
    t.equal(await count(db.pool), before, 'no version was written');
  });

  await t.test('a field this version does not honour is refused in a version too; nothing is written', async (t) => {
    const before = await count(db.pool);
    const refused: Array<[object, RegExp]> = [
      [{ storage: { type: 's3' } }, /^the shared config sets what this version does not support: config storage\.type: s3 storage needs a bucket: set storage\.bucket \(SVC_STORAGE_BUCKET\)/],
      [{ storage: { type: 'filesystem', bucket: 'ci-cache' } }, /config storage\.bucket: an s3 storage setting, .*remove storage\.bucket \(SVC_STORAGE_BUCKET\)/],
      [{ storage: { forcePathStyle: true } }, /config storage\.forcePathStyle: an s3 storage setting/],
      [{ storage: { endpoint: 'https://s3.example.test', uploadEndpoint: 'https://up.example.test', externalEndpoint: 'https://ext.example.test' } }, /storage\.endpoint: .*storage\.uploadEndpoint: .*storage\.externalEndpoint: /],
      [{ pgCustomerSecrets: false }, /config pgCustomerSecrets: another customer secret store is not supported in this version/],
    ];
    for (const [config, message] of refused) {
      const error = await writeConfigVersion(db.pool, KEY, { config: config as Record<string, unknown>, createdBy: 'api:set' }).catch((e: unknown) => e);
      t.match(error, { code: 'SVC_ERR_CONFIG_UNSUPPORTED', message }, JSON.stringify(config));
      t.notMatch((error as Error).message, /shared config v0/, 'no made-up version number in the message');
    }
    // Local fields that are also refused: the local-field refusal names them first.
    await t.rejects(writeConfigVersion(db.pool, KEY, { config: { scaler: { configPath: '/etc/scaler.yaml' }, instance: { mode: 'platform' } }, createdBy: 'api:set' }), {
      code: 'SVC_ERR_CONFIG_LOCAL_FIELD',
      message: /scaler\.configPath, instance\.mode are local fields/,
    });
    t.equal(await count(db.pool), before, 'no version was written');
    // The values the code implements are fine, and a seed of the running shared fields stays writable.
    const ok = await writeConfigVersion(db.pool, KEY, { config: { storage: { type: 'filesystem', forcePathStyle: false }, pgCustomerSecrets: true }, createdBy: 'api:set' });
    t.ok(ok.version > 0);
    const s3 = await writeConfigVersion(db.pool, KEY, { config: { storage: { type: 's3', bucket: 'ci-cache', endpoint: 'https://s3.example.test', forcePathStyle: true } }, createdBy: 'api:set' });
    t.ok(s3.version > ok.version, 's3 storage with its settings is a valid version');
    const seed = await writeConfigVersion(db.pool, KEY, { config: sharedFieldsOf(configDefaults()), createdBy: 'cli:seed' });
    t.ok(seed.version > s3.version, 'the defaults as a document are accepted');
  });

  await t.test('a version stored before storage.secretAccessKey was sealed: read as before, redacted, sealed by the next write', async (t) => {
    // What writeConfigVersion stored when only the spec's four paths were sealed.
    const legacySecret = 'legacy-plain-s3-secret-Rw3Jc8Tn';
    const document = { ...DOCUMENT, storage: { ...DOCUMENT.storage, secretAccessKey: legacySecret } };
    const sealed = encryptConfigFields(KEY, document, ['platform.token', 'secrets.key', 'secrets.bootstrapAdminToken', 'cluster.joinToken']);
    const version = Number(
      await db.pool.oneFirst(sql.unsafe`
        INSERT INTO config_versions (id, config, created_by, description, encrypted_paths)
        VALUES (${randomUUID()}, ${sql.jsonb(sealed.config as never)}, 'cli:set', 'before issue 38', ${sql.array(sealed.encryptedPaths, 'text')}) RETURNING version`),
    );
    const read = await readConfigVersion(db.pool, KEYS, version);
    t.same(read?.config, document, 'the old version reads as it always did (the plain value is used)');
    t.equal((redactConfig(read!.config) as typeof DOCUMENT).storage.secretAccessKey, REDACTED, 'and is redacted in every read and export');
    const resealed = await rollbackConfigVersion(db.pool, KEYS, version, 'api:rollback');
    t.ok(resealed.encryptedPaths.includes('storage.secretAccessKey'), 'the next version seals it');
    const stored = (await db.pool.oneFirst(sql.unsafe`SELECT config->'storage'->>'secretAccessKey' FROM config_versions WHERE version = ${resealed.version}`)) as string;
    t.not(stored, legacySecret, 'not in plain text in the new version');
    t.equal(openIndependently(stored, 'storage.secretAccessKey'), legacySecret);
    t.same((await readConfigVersion(db.pool, KEYS, resealed.version))?.config, document, 'same content');

    // rotate-key's sweep re-seals it with the rest (config versions record it in encrypted_paths now).
    const next = randomBytes(32);
    await sweepSealedStores(db.pool, { current: next, old: KEY, all: [{ name: 'current', key: next }, { name: 'old', key: KEY }] }, [configFieldsSealedStore], 'all');
    const rotated = (await db.pool.oneFirst(sql.unsafe`SELECT config->'storage'->>'secretAccessKey' FROM config_versions WHERE version = ${resealed.version}`)) as string;
    const opened = (await readConfigVersion(db.pool, [{ name: 'current', key: next }], resealed.version))?.config as { storage?: { secretAccessKey?: string } } | undefined;
    t.equal(opened?.storage?.secretAccessKey, legacySecret, 'opens with the new key alone after rotate-key');
    t.not(rotated, stored, 're-sealed');
  });
});

t.test('a reload plan holds the spec\'s start-only fields and fields read at start, and applies the rest', async (t) => {
  const start = configDefaults();
  start.instance = { id: 'node-a' };
  const loaded = structuredClone(start);
  loaded.database.url = 'postgres://db/two';
  loaded.server.port = 9999;
  loaded.instance.id = 'node-b';
  loaded.storage.bucket = 'other-bucket';
  loaded.events.maxChainDepth = 3;
  loaded.queue.maxDepth = 42;
  loaded.agentAuth = 'none';
  loaded.sealedSecretsRetryBackoffMs = 5;
  const plan = planReload(start, start, loaded);
  t.same(plan.changed.sort(), ['agentAuth', 'queue.maxDepth']);
  t.equal(plan.config.database.url, undefined, 'a database url that appears is held out');
  t.equal(plan.config.server.port, start.server.port);
  t.equal(plan.config.instance.id, 'node-a');
  t.equal(plan.config.storage.bucket, undefined, 'a storage field added later is held out');
  t.equal(plan.config.events.maxChainDepth, start.events.maxChainDepth, 'a field read at start keeps its running value');
  t.equal(plan.config.queue.maxDepth, 42);
  for (const path of ['database.url', 'server.port', 'instance.id', 'storage.bucket']) {
    t.ok(plan.warnings.some((w) => w.startsWith(`${path} changed but is held at its startup value`)), `${path} held with a warning`);
  }
  t.ok(plan.warnings.some((w) => w.startsWith('events.maxChainDepth changed but needs a restart')), 'restart field warned');
  t.equal(plan.config.sealedSecretsRetryBackoffMs, start.sealedSecretsRetryBackoffMs, 'a cluster setting keeps its running value');
  t.ok(plan.warnings.some((w) => w.startsWith('sealedSecretsRetryBackoffMs changed but is a cluster setting')), 'and says where to change it');
  t.same(sharedFieldsOf(plan.config).database, undefined, 'local fields are not shared fields');
});
