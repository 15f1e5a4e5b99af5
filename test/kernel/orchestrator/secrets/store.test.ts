// Secret contexts at rest: create/bind/set/list against real PostgreSQL, sealed values bound to
// their context and key, rotate-key's re-seal, and every kind of bad input refused unchanged.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import {
  bindContext,
  createContext,
  getContext,
  listContexts,
  listSecretKeys,
  openContextSecrets,
  setSecret,
  MAX_SECRET_BYTES,
} from '../../../../kernel/orchestrator/secrets/index.ts';
import { migrate, sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { sweepSealedStores, type SweepMode } from '../../../../kernel/services/crypto/sealed-stores.ts';
import type { MasterKeys } from '../../../../kernel/services/crypto/master-keys.ts';
import { secretsSealedStore } from '../../../../kernel/orchestrator/secrets/sealed-store.ts';

const VALUE = 'hunter2-super-secret-value';


/** The secrets store alone through the registry's sweep (boot heal / rotate-key). */
async function resealSecrets(pool: Parameters<typeof sweepSealedStores>[0], keys: MasterKeys, mode: SweepMode) {
  const [store] = await sweepSealedStores(pool, keys, [secretsSealedStore], mode);
  return { total: store!.total, resealed: store!.resealed };
}

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const key = randomBytes(32);
  const keys = [{ name: 'current', key }];

  await t.test('create, bind, set, list keys; values are sealed', async (t) => {
    const created = await createContext(db.pool, { name: 'deploy', branches: ['main', 'release/*'], minTrust: 'trusted' });
    t.match(created, { name: 'deploy', branches: ['main', 'release/*'], repositories: [], orgs: [], minTrust: 'trusted', allowLocalExecution: false, bound: false });
    const bound = await bindContext(db.pool, 'deploy', { repositories: ['acme/*', 'acme/*'], orgs: ['acme'] });
    t.same(bound.repositories, ['acme/*']);
    t.same(bound.orgs, ['acme']);
    t.equal(bound.bound, true);
    const again = await bindContext(db.pool, 'deploy', { repositories: ['other/app'] });
    t.same(again.repositories, ['acme/*', 'other/app'], 'bind adds, once each');

    t.same(await setSecret(db.pool, key, 'deploy', 'TOKEN', VALUE), { replaced: false });
    t.same(await setSecret(db.pool, key, 'deploy', 'TOKEN', `${VALUE}-2`), { replaced: true });
    await setSecret(db.pool, key, 'deploy', 'API_KEY', 'another-value');
    t.same((await listSecretKeys(db.pool, 'deploy')).map((k) => k.key), ['API_KEY', 'TOKEN']);
    const raw = (await db.pool.any(sql.unsafe`SELECT value_sealed FROM secret_values`)) as readonly { value_sealed: string }[];
    for (const row of raw) t.notMatch(row.value_sealed, /hunter2|another-value/, 'stored sealed');
    t.same(await openContextSecrets(db.pool, keys, ['deploy']), { deploy: { API_KEY: 'another-value', TOKEN: `${VALUE}-2` } });
    t.same((await listContexts(db.pool)).map((c) => c.name), ['deploy']);
  });

  await t.test('a sealed value is bound to its context and key', async (t) => {
    await createContext(db.pool, { name: 'other', repositories: ['acme/app'] });
    await db.pool.query(sql.unsafe`
      INSERT INTO secret_values (context, key, value_sealed) SELECT 'other', 'TOKEN', value_sealed FROM secret_values WHERE context = 'deploy' AND key = 'TOKEN'`);
    await t.rejects(openContextSecrets(db.pool, keys, ['other']), { code: 'SVC_ERR_SECRETS_OPEN', message: /other:TOKEN/ });
    await t.rejects(openContextSecrets(db.pool, [{ name: 'current', key: randomBytes(32) }], ['deploy']), { code: 'SVC_ERR_SECRETS_OPEN' });
    await db.pool.query(sql.unsafe`DELETE FROM secret_values WHERE context = 'other'`);
  });

  await t.test('bad input: clear errors, nothing changed', async (t) => {
    const before = JSON.stringify(await db.pool.any(sql.unsafe`SELECT * FROM secret_contexts ORDER BY name`));
    const beforeValues = JSON.stringify(await db.pool.any(sql.unsafe`SELECT * FROM secret_values ORDER BY context, key`));
    await t.rejects(createContext(db.pool, { name: 'deploy' }), { code: 'SVC_ERR_SECRETS_CONTEXT_EXISTS' });
    await t.rejects(createContext(db.pool, { name: 'bad name' }), { code: 'SVC_ERR_SECRETS_CONTEXT_NAME' });
    await t.rejects(createContext(db.pool, { name: 'a:b' }), { code: 'SVC_ERR_SECRETS_CONTEXT_NAME' });
    await t.rejects(createContext(db.pool, { name: '' }), { code: 'SVC_ERR_SECRETS_CONTEXT_NAME' });
    await t.rejects(createContext(db.pool, { name: 'x', branches: [''] }), { code: 'SVC_ERR_SECRETS_RULE' });
    await t.rejects(createContext(db.pool, { name: 'x', branches: ['has space'] }), { code: 'SVC_ERR_SECRETS_RULE' });
    await t.rejects(createContext(db.pool, { name: 'x', repositories: Array.from({ length: 101 }, (_, i) => `a/${i}`) }), { code: 'SVC_ERR_SECRETS_RULE' });
    await t.rejects(createContext(db.pool, { name: 'x', orgs: ['bad org'] }), { code: 'SVC_ERR_SECRETS_RULE' });
    await t.rejects(createContext(db.pool, { name: 'x', minTrust: 'some' as never }), { code: 'SVC_ERR_SECRETS_RULE', message: /trusted or any/ });
    await t.rejects(bindContext(db.pool, 'missing', { repositories: ['a/b'] }), { code: 'SVC_ERR_SECRETS_CONTEXT_NOT_FOUND' });
    await t.rejects(bindContext(db.pool, 'deploy', {}), { code: 'SVC_ERR_SECRETS_RULE', message: /at least one/ });
    await t.rejects(setSecret(db.pool, key, 'missing', 'K', 'v'), { code: 'SVC_ERR_SECRETS_CONTEXT_NOT_FOUND' });
    await t.rejects(setSecret(db.pool, key, 'deploy', '1BAD', 'v'), { code: 'SVC_ERR_SECRETS_KEY' });
    await t.rejects(setSecret(db.pool, key, 'deploy', 'A:B', 'v'), { code: 'SVC_ERR_SECRETS_KEY' });
    await t.rejects(setSecret(db.pool, key, 'deploy', 'K', ''), { code: 'SVC_ERR_SECRETS_VALUE' });
    await t.rejects(setSecret(db.pool, key, 'deploy', 'K', 'x'.repeat(MAX_SECRET_BYTES + 1)), { code: 'SVC_ERR_SECRETS_VALUE' });
    await t.rejects(getContext(db.pool, 'missing'), { code: 'SVC_ERR_SECRETS_CONTEXT_NOT_FOUND', message: /svc-admin context create missing/ });
    await t.rejects(listSecretKeys(db.pool, 'missing'), { code: 'SVC_ERR_SECRETS_CONTEXT_NOT_FOUND' });
    t.equal(JSON.stringify(await db.pool.any(sql.unsafe`SELECT * FROM secret_contexts ORDER BY name`)), before);
    t.equal(JSON.stringify(await db.pool.any(sql.unsafe`SELECT * FROM secret_values ORDER BY context, key`)), beforeValues);
  });

  await t.test('reseal: every row under the new key; a row no key opens aborts the sweep', async (t) => {
    const next = randomBytes(32);
    const rotation = { current: next, old: key, all: [{ name: 'current', key: next }, { name: 'old', key }] };
    t.same(await resealSecrets(db.pool, rotation, 'heal'), { total: 2, resealed: 2 }, 'heal: rows under the old key');
    t.same(await resealSecrets(db.pool, rotation, 'heal'), { total: 2, resealed: 0 }, 'heal again: nothing left');
    t.same(await resealSecrets(db.pool, { current: next, all: [{ name: 'current', key: next }] }, 'all'), { total: 2, resealed: 2 });
    t.same(await openContextSecrets(db.pool, [{ name: 'current', key: next }], ['deploy']), { deploy: { API_KEY: 'another-value', TOKEN: `${VALUE}-2` } });
    const before = JSON.stringify(await db.pool.any(sql.unsafe`SELECT value_sealed FROM secret_values ORDER BY key`));
    const stranger = randomBytes(32);
    await t.rejects(resealSecrets(db.pool, { current: stranger, all: [{ name: 'current', key: stranger }] }, 'all'), { code: 'SVC_ERR_MASTER_KEY_MISMATCH', message: /^store secrets: secret deploy:API_KEY opens with none of the configured master keys \(unopenable: secrets: secret deploy:API_KEY; secrets: secret deploy:TOKEN\)\. Restore the previous master key as SVC_SECRET_KEY_OLD/ });
    t.equal(JSON.stringify(await db.pool.any(sql.unsafe`SELECT value_sealed FROM secret_values ORDER BY key`)), before, 'nothing changed');
    await t.rejects(resealSecrets(db.pool, { all: [] }, 'all'), { code: 'SVC_ERR_SECRETS_NO_MASTER_KEY' });
  });
});
