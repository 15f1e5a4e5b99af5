// The registry of sealed stores (kernel/orchestrator/sealed-stores.ts, docs/master-key.md) on real
// PostgreSQL. Coverage: every column of the migrated schema named `<what>_sealed` is declared by a
// registered store, no column is named like a sealed value without following that convention, and
// every file that seals a value is one whose store is registered — so a sealed store missing from
// the registry fails here. Behaviour: every store seeded through its own code, one `all` sweep
// re-seals every sealed value in the database (found through information_schema, not through the
// registry); the consumers then open them with the new key alone; the boot heals values under
// SVC_SECRET_KEY_OLD and refuses to start naming store and row when no key opens one; a refused
// sweep changes nothing in any store; a config version accepts a re-seal and nothing else.
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE, startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { RESEAL_SETTING } from '../../../../kernel/orchestrator/config/sealed-store.ts';
import { latestConfigVersion, readConfigVersion, writeConfigVersion } from '../../../../kernel/orchestrator/config/versions.ts';
import { setStatusWebhook } from '../../../../kernel/orchestrator/forge-status/index.ts';
import { openStatusWebhook } from '../../../../kernel/orchestrator/forge-status/webhook-config.ts';
import { createKeyVault } from '../../../../kernel/orchestrator/identity/key-store.ts';
import { SEALED_STORES } from '../../../../kernel/orchestrator/sealed-stores.ts';
import { createContext, openContextSecrets, setSecret } from '../../../../kernel/orchestrator/secrets/index.ts';
import { createSource, getSourceRow, openSource, rotateSourceSecret } from '../../../../kernel/orchestrator/sources/store.ts';
import type { MasterKeys } from '../../../../kernel/services/crypto/master-keys.ts';
import { countLine, sweepSealedStores } from '../../../../kernel/services/crypto/sealed-stores.ts';
import { seal } from '../../../../kernel/services/crypto/sealing.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { DbCustody } from '../../../../plugins/custody/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';


const ROOT = resolve(import.meta.dirname, '../../../..');
const silent = pino({ level: 'silent' });

/**
 * Columns that hold sealed values but are not `<what>_sealed`: config_versions.config keeps its
 * sealed values as JSON leaves at `encrypted_paths` (applied migration 0700; never renamed).
 */
const SEALED_ELSEWHERE = new Set(['config_versions.config']);
/** Columns whose names look sealed but hold no sealed value. */
const NOT_SEALED = new Set(['config_versions.encrypted_paths', 'cluster_settings.sealed_secrets_retry_backoff_ms']);
const LOOKS_SEALED = /sealed|encrypt|cipher|wrapped/;

/**
 * Every file that seals a value under the master key, and the registered stores its values go
 * to. A new call site fails the test until its store is registered and listed here.
 */
const SEAL_CALL_SITES: Record<string, readonly string[]> = {
  'kernel/orchestrator/identity/key-store.ts': ['signing_keys'],
  'kernel/orchestrator/secrets/store.ts': ['secrets'],
  'kernel/orchestrator/sources/store.ts': ['source_webhook_secrets', 'source_provider_credentials'],
  'kernel/orchestrator/forge-status/webhook-config.ts': ['run_status_webhook_secrets'],
  'kernel/orchestrator/config/versions.ts': ['config_fields'],
  'kernel/services/crypto/config-fields.ts': ['config_fields'],
  // The developer stack (`svc dev`) resets its sources' webhook secrets.
  'cli/dev/stack.ts': ['source_webhook_secrets'],
  // The db custody plugin seals its key through the vault key-store.ts binds it to.
  'plugins/custody/db/index.ts': ['signing_keys'],
  'core/extension-points/custody.ts': ['signing_keys'],
  // The sweep itself, and the helpers.
  'kernel/services/crypto/sealed-stores.ts': SEALED_STORES.map((s) => s.name),
  'kernel/services/crypto/sealing.ts': [],
};
const SOURCE_DIRS = ['core', 'workflow', 'sdk', 'kernel', 'plugins', 'agent', 'cli', 'admin-cli', 'bin'];
const SEALS = /\b(?:seal|encryptConfigFields?)\s*\(|\.seal\s*\(/;

function tsFiles(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(join(ROOT, dir), { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    if (e.name === 'node_modules' || e.name === 'dist' || e.name.startsWith('.')) return [];
    const path = `${dir}/${e.name}`;
    return e.isDirectory() ? tsFiles(path) : e.name.endsWith('.ts') ? [path] : [];
  });
}

/** Code lines only: comments mention seal() without calling it. */
function code(text: string): string {
  return text
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line))
    .join('\n');
}

function keysOf(current: Buffer, old?: Buffer): MasterKeys {
  const all = [{ name: 'current', key: current }];
  if (old) all.push({ name: 'old', key: old });
  return old ? { current, old, all } : { current, all };
}

async function sealedColumns(pool: DatabasePool): Promise<Array<{ table: string; column: string }>> {
  const rows = (await pool.any(sql.unsafe`
    SELECT table_name AS "table", column_name AS "column" FROM information_schema.columns
    WHERE table_schema = current_schema() AND column_name LIKE '%\\_sealed' ORDER BY 1, 2`)) as Array<{ table: string; column: string }>;
  return [...rows];
}

/** Every sealed value in the database, found through the schema (not the registry): `table.column#primary key` → value. */
async function everySealedValue(pool: DatabasePool): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const { table, column } of await sealedColumns(pool)) {
    const keyColumns = (await pool.anyFirst(sql.unsafe`
      SELECT k.column_name FROM information_schema.table_constraints c
      JOIN information_schema.key_column_usage k ON k.constraint_name = c.constraint_name AND k.table_schema = c.table_schema
      WHERE c.table_schema = current_schema() AND c.table_name = ${table} AND c.constraint_type = 'PRIMARY KEY' ORDER BY k.ordinal_position`)) as string[];
    const key = sql.join(keyColumns.map((c) => sql.fragment`${sql.identifier([c])}::text`), sql.fragment` || ':' || `);
    const rows = (await pool.any(sql.unsafe`
      SELECT ${key} AS id, ${sql.identifier([column])} AS v FROM ${sql.identifier([table])} WHERE ${sql.identifier([column])} IS NOT NULL`)) as Array<{ id: string; v: string }>;
    for (const row of rows) out.set(`${table}.${column}#${row.id}`, row.v);
  }
  const versions = (await pool.any(sql.unsafe`SELECT version, config, encrypted_paths FROM config_versions`)) as Array<{ version: number; config: Record<string, unknown>; encrypted_paths: string[] }>;
  for (const v of versions) {
    for (const path of v.encrypted_paths) {
      const leaf = path.split('.').reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], v.config);
      out.set(`config_versions.config#${v.version}:${path}`, String(leaf));
    }
  }
  return out;
}

t.test('coverage: every sealed column and every sealing call site belongs to a registered store', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const declared = new Set(SEALED_STORES.flatMap((s) => s.columns.map((c) => `${c.table}.${c.column}`)));
    const inSchema = new Set((await sealedColumns(db.pool)).map((c) => `${c.table}.${c.column}`));
    t.ok(inSchema.size >= 5, `the schema has sealed columns (${[...inSchema].join(', ')})`);
    for (const column of inSchema) t.ok(declared.has(column), `${column} holds sealed values: a store in kernel/orchestrator/sealed-stores.ts must declare it`);
    for (const column of declared) {
      t.ok(inSchema.has(column) || SEALED_ELSEWHERE.has(column), `${column}, declared by a store, is a sealed column of the migrated schema`);
    }
    for (const column of SEALED_ELSEWHERE) t.ok(declared.has(column), `${column} (sealed JSON leaves) is declared by a store`);

    const all = (await db.pool.any(sql.unsafe`
      SELECT table_name || '.' || column_name AS name FROM information_schema.columns WHERE table_schema = current_schema()`)) as Array<{ name: string }>;
    const misnamed = all.map((r) => r.name).filter((n) => LOOKS_SEALED.test(n.split('.')[1]!) && !n.endsWith('_sealed') && !NOT_SEALED.has(n) && !SEALED_ELSEWHERE.has(n));
    t.same(misnamed, [], 'a column holding a sealed value is named <what>_sealed (docs/master-key.md)');

    const names = new Set(SEALED_STORES.map((s) => s.name));
    t.equal(names.size, SEALED_STORES.length, 'store names are unique');
    t.equal(new Set(SEALED_STORES.map((s) => s.jsonKey)).size, SEALED_STORES.length, 'JSON keys are unique');
    const sites = SOURCE_DIRS.flatMap(tsFiles).filter((file) => SEALS.test(code(readFileSync(join(ROOT, file), 'utf8'))));
    t.ok(sites.length >= 8, `sealing call sites found (${sites.join(', ')})`);
    for (const file of sites) {
      const stores = SEAL_CALL_SITES[file];
      t.ok(stores !== undefined, `${file} seals a value: register its store in kernel/orchestrator/sealed-stores.ts and list the file here`);
      for (const store of stores ?? []) t.ok(names.has(store), `${file}: store ${store} is registered`);
    }
    for (const file of Object.keys(SEAL_CALL_SITES)) t.ok(sites.includes(file), `${file} still seals (else drop it from the list)`);
  });
});

t.test('every store: rotate, open with the new key alone, heal at boot, refuse a key no one holds', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    const k3 = randomBytes(32);

    // Seed every store through its own code, under k1.
    const custody = new DbCustody({ activeCacheMs: 0 });
    custody.bind(createKeyVault(db.pool, keysOf(k1), 'db'));
    await custody.generate();
    await createContext(db.pool, { name: 'deploy', branches: ['main'], repositories: ['acme/*'] });
    await setSecret(db.pool, k1, 'deploy', 'TOKEN', 'deploy-token-value');
    await setSecret(db.pool, k1, 'deploy', 'OTHER', 'other-value');
    const github = await createSource(db.pool, k1, { orgId: 'acme', providerKind: 'github', targetId: '42', credentials: { privateKey: 'pem-text' }, secret: 'github-secret-0123456789' });
    const generic = await createSource(db.pool, k1, { orgId: 'acme', providerKind: 'generic', sourceId: 'deploys', secret: 'generic-secret-0123456789' });
    const rotated = await rotateSourceSecret(db.pool, k1, generic.source.id, { secret: 'generic-secret-next-0123456789' });
    await setStatusWebhook(db.pool, k1, github.source.id, { url: 'https://hooks.example.com/s', secret: 'status-secret-0123456789' });
    const joinToken = 'join-token-0123456789-abcdef';
    const v1 = await writeConfigVersion(db.pool, k1, { config: { cluster: { joinToken }, platform: { url: 'https://p.example.test', token: 'platform-token-0123' } }, createdBy: 'cli:set' });
    const v2 = await writeConfigVersion(db.pool, k1, { config: { cluster: { joinToken } }, createdBy: 'cli:set' });
    t.equal(rotated.secret, 'generic-secret-next-0123456789');

    const before = await everySealedValue(db.pool);
    // 1 signing key, 2 secrets, 3 source secrets (one previous), 1 credentials, 1 status webhook, 3 config fields.
    t.equal(before.size, 11, [...before.keys()].join('\n'));

    await t.test('rotate-key: one sweep re-seals every sealed value in the database', async (t) => {
      const swept = await sweepSealedStores(db.pool, keysOf(k2, k1), SEALED_STORES, 'all');
      t.same(swept.map(countLine), [
        'Re-encrypted 1 provenance signing keys.',
        'Re-encrypted 2 secrets.',
        'Re-encrypted 3 source webhook secrets.',
        'Re-encrypted 1 source provider credentials.',
        'Re-encrypted 1 run-status webhook secrets.',
        'Re-encrypted 3 sealed config fields.',
      ]);
      const after = await everySealedValue(db.pool);
      t.same([...after.keys()].sort(), [...before.keys()].sort());
      const unchanged = [...after].filter(([where, value]) => before.get(where) === value).map(([where]) => where);
      t.same(unchanged, [], 'no sealed value was left as it was (a store missing from the registry leaves its values)');

      const onlyNew = [{ name: 'current', key: k2 }];
      t.same(await openContextSecrets(db.pool, onlyNew, ['deploy']), { deploy: { OTHER: 'other-value', TOKEN: 'deploy-token-value' } });
      const gh = openSource((await getSourceRow(db.pool, github.source.id))!, onlyNew);
      t.same({ secrets: gh.secrets, credentials: gh.credentials }, { secrets: ['github-secret-0123456789'], credentials: { privateKey: 'pem-text' } });
      t.same(openSource((await getSourceRow(db.pool, generic.source.id))!, onlyNew).secrets, ['generic-secret-next-0123456789', 'generic-secret-0123456789'], 'both secrets of a source rotating its secret');
      t.match(await openStatusWebhook(db.pool, onlyNew, github.source.id), { secret: 'status-secret-0123456789' });
      t.match((await readConfigVersion(db.pool, onlyNew, v1.version))?.config, { cluster: { joinToken }, platform: { token: 'platform-token-0123' } }, 'an older version (a rollback target) opens too');
      t.match((await latestConfigVersion(db.pool, onlyNew))?.summary, { version: v2.version });
      const signer = new DbCustody({ activeCacheMs: 0 });
      signer.bind(createKeyVault(db.pool, keysOf(k2), 'db'));
      t.equal((await signer.sign(Buffer.from('x'))).length, 64, 'the signing key opens and signs');

      const again = await sweepSealedStores(db.pool, keysOf(k2), SEALED_STORES, 'heal');
      t.same(again.map((s) => [s.store, s.total, s.resealed]), SEALED_STORES.map((s, i) => [s.name, swept[i]!.total, 0]), 'heal with the new key alone: nothing left to heal');
    });

    const dataDir = await mkdtemp(join(tmpdir(), 'svc-sealed-stores-'));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const start = (env: Record<string, string>) =>
      startOrchestrator({
        env: { SVC_DATABASE_URL: db.url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_AGENT_AUTH: 'none', SVC_DATA_DIR: dataDir, ...env },
        cwd: dataDir,
        logger: silent,
        plugins: () => ({ builtIns: [], config: {}, selection: {} }),
        subsystems: [],
      });

    await t.test('boot: a key neither master key opens stops the start naming store and row; _OLD heals every store', async (t) => {
      const snapshot = await everySealedValue(db.pool);
      await t.rejects(start({ SVC_SECRET_KEY: k1.toString('base64') }), {
        code: 'SVC_ERR_MASTER_KEY_MISMATCH',
        message: /^store signing_keys: signing key \S+ opens with none of the configured master keys \(unopenable: signing_keys: signing key \S+; secrets: secret deploy:OTHER; secrets: secret deploy:TOKEN; source_webhook_secrets: source \S+ webhook secret; source_webhook_secrets: source \S+ (?:previous )?webhook secret and 6 more\)\. Restore the previous master key as SVC_SECRET_KEY_OLD \(or SVC_SECRET_KEY_FILE_OLD\), restart, then run `svc-admin rotate-key`$/,
      });
      t.same(await everySealedValue(db.pool), snapshot, 'a refused boot wrote nothing');

      const healing = await start({ SVC_SECRET_KEY: k3.toString('base64'), SVC_SECRET_KEY_OLD: k2.toString('base64') });
      await healing.stop();
      const healed = await everySealedValue(db.pool);
      t.same([...healed].filter(([where, value]) => snapshot.get(where) === value).map(([where]) => where), [], 'every value of every store re-sealed at boot');
      const plain = await start({ SVC_SECRET_KEY: k3.toString('base64') });
      await plain.stop();
      t.pass('boots with the new key alone after the heal');
    });

    await t.test('a value no key opens in one store: the sweep names it and no store changes', async (t) => {
      // One config field sealed under a key nobody holds (written as a re-seal would write it).
      await db.pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`SELECT set_config(${RESEAL_SETTING}, 'on', true)`);
        await tx.query(sql.unsafe`UPDATE config_versions SET config = jsonb_set(config, '{cluster,joinToken}', to_jsonb(${seal(randomBytes(32), joinToken, 'config-field:cluster.joinToken')}::text)) WHERE version = ${v2.version}`);
      });
      const snapshot = await everySealedValue(db.pool);
      await t.rejects(sweepSealedStores(db.pool, keysOf(k1, k3), SEALED_STORES, 'all'), {
        code: 'SVC_ERR_MASTER_KEY_MISMATCH',
        message: new RegExp(`^store config_fields: config version ${v2.version} field cluster\\.joinToken opens with none of the configured master keys\\. Restore`),
      });
      t.same(await everySealedValue(db.pool), snapshot, 'the stores swept before it were rolled back too');
      await t.rejects(sweepSealedStores(db.pool, { all: [] }, SEALED_STORES, 'all'), { code: 'SVC_ERR_SECRETS_NO_MASTER_KEY' });
    });

    await t.test('config versions: a re-seal may change only the sealed values', async (t) => {
      const attempt = (change: ReturnType<typeof sql.fragment>) =>
        db.pool.transaction(async (tx) => {
          await tx.query(sql.unsafe`SELECT set_config(${RESEAL_SETTING}, 'on', true)`);
          await tx.query(sql.unsafe`UPDATE config_versions SET ${change} WHERE version = ${v1.version}`);
        });
      const before = await db.pool.one(sql.unsafe`SELECT config, description FROM config_versions WHERE version = ${v1.version}`);
      await t.rejects(attempt(sql.fragment`description = 'changed'`), /a re-seal may change only the sealed values/);
      await t.rejects(attempt(sql.fragment`config = jsonb_set(config, '{platform,url}', '"https://evil.example.test"')`), /a re-seal may change only the sealed values/);
      await t.rejects(attempt(sql.fragment`config = config #- '{cluster,joinToken}'`), /must leave a sealed string at cluster\.joinToken/);
      await t.rejects(attempt(sql.fragment`encrypted_paths = '{}'`), /a re-seal may change only the sealed values/);
      await t.rejects(db.pool.query(sql.unsafe`UPDATE config_versions SET config = jsonb_set(config, '{cluster,joinToken}', '"x"') WHERE version = ${v1.version}`), /UPDATE on config_versions is refused/, 'without the re-seal setting nothing changes');
      await t.rejects(db.pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`SELECT set_config(${RESEAL_SETTING}, 'on', true)`);
        await tx.query(sql.unsafe`DELETE FROM config_versions WHERE version = ${v1.version}`);
      }), /DELETE on config_versions is refused/);
      t.same(await db.pool.one(sql.unsafe`SELECT config, description FROM config_versions WHERE version = ${v1.version}`), before);
    });
  });
});
