import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import t from 'tap';
import { fileURLToPath } from 'node:url';
import {
  listSigningKeys,
  publicKeySet,
  registerExternalKey,
  retireSigningKey,
  revokeSigningKey,
} from '../../../../kernel/orchestrator/identity/key-store.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { seal } from '../../../../kernel/services/crypto/sealing.ts';
import type { MasterKeys } from '../../../../kernel/services/crypto/master-keys.ts';
import { sweepSealedStores, type SweepMode } from '../../../../kernel/services/crypto/sealed-stores.ts';
import { signingKeysSealedStore } from '../../../../kernel/orchestrator/identity/sealed-store.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { boundDbCustody, masterKeys, migrateOrchestrator } from './fixtures.ts';

/** The signing-key store alone through the registry's sweep (boot heal / rotate-key). */
async function resealSigningKeys(pool: Parameters<typeof sweepSealedStores>[0], keys: MasterKeys, mode: SweepMode) {
  const [store] = await sweepSealedStores(pool, keys, [signingKeysSealedStore], mode);
  return { total: store!.total, resealed: store!.resealed };
}

const CHILD = fileURLToPath(new URL('./generate-child.ts', import.meta.url));

await eachDatabase(t, async (t, db) => {
  await migrateOrchestrator(db.pool);
  const keys = masterKeys();

  await t.test('state machine: generate, rotate, retire, revoke, JWKS membership', async (t) => {
    const custody = boundDbCustody(db.pool, keys);
    await t.rejects(custody.keyId(), { code: 'SVC_ERR_CUSTODY_NO_ACTIVE_KEY' });
    const first = await custody.generate();
    t.equal(first.created, true);
    t.match(first.kid, /^[A-Za-z0-9_-]{43}$/, 'kid is an RFC 7638 SHA-256 thumbprint');
    const again = await custody.generate();
    t.same({ kid: again.kid, created: again.created }, { kid: first.kid, created: false }, 'generate is a no-op when a key is active');

    await t.rejects(retireSigningKey(db.pool, first.kid), { code: 'SVC_ERR_IDENTITY_KEY_STATE' }, 'an active key cannot be retired');
    const second = await custody.rotate();
    t.not(second.kid, first.kid);
    let list = await listSigningKeys(db.pool);
    t.same(list.map((k) => [k.kid, k.status, k.custody]), [[first.kid, 'retiring', 'db'], [second.kid, 'active', 'db']]);
    t.equal(await custody.keyId(), second.kid);

    const retired = await retireSigningKey(db.pool, first.kid);
    t.equal(retired.status, 'retired');
    t.ok(retired.retiredAt);
    await t.rejects(retireSigningKey(db.pool, first.kid), { code: 'SVC_ERR_IDENTITY_KEY_STATE' }, 'retired twice is refused');
    await t.rejects(retireSigningKey(db.pool, 'nope'), { code: 'SVC_ERR_IDENTITY_KEY_NOT_FOUND' });
    await t.rejects(retireSigningKey(db.pool, 'bad kid!'), { code: 'SVC_ERR_IDENTITY_KID_INVALID' });

    let jwks = await publicKeySet(db.pool);
    t.same(jwks.keys.map((k) => k.kid).sort(), [first.kid, second.kid].sort(), 'active and retired keys are served');
    for (const key of jwks.keys) {
      t.same(Object.keys(key).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y'], 'public halves only');
    }

    await t.rejects(revokeSigningKey(db.pool, first.kid, '   '), { code: 'SVC_ERR_IDENTITY_REVOKE_REASON' }, 'a reason is required');
    const revoked = await revokeSigningKey(db.pool, first.kid, 'laptop stolen');
    t.equal(revoked.status, 'revoked');
    t.equal(revoked.revokeReason, 'laptop stolen');
    await t.rejects(revokeSigningKey(db.pool, first.kid, 'again'), { code: 'SVC_ERR_IDENTITY_KEY_STATE' });
    jwks = await publicKeySet(db.pool);
    t.same(jwks.keys.map((k) => k.kid), [second.kid], 'revoked keys leave the JWKS');

    // Revoking the active key leaves no key: mint will defer until a new one is generated.
    await revokeSigningKey(db.pool, second.kid, 'compromised');
    await t.rejects(custody.keyId(), { code: 'SVC_ERR_CUSTODY_NO_ACTIVE_KEY' });
    const third = await custody.generate();
    t.equal(third.created, true);
    list = await listSigningKeys(db.pool);
    t.same(list.map((k) => k.status), ['revoked', 'revoked', 'active']);
    const raw = await db.pool.any(sql.unsafe`SELECT private_key_sealed FROM signing_keys`);
    for (const row of raw as Array<Record<string, unknown>>) t.notMatch(String(row['private_key_sealed']), /PRIVATE KEY/, 'private keys are sealed at rest');
  });

  await t.test('master key: heal re-seals old-key rows, rotate-key re-seals all, a stranger key names the store', async (t) => {
    const oldKey = keys.current as Buffer;
    const newKey = randomBytes(32);
    const rotated = masterKeys(newKey, oldKey);
    const heal = await resealSigningKeys(db.pool, rotated, 'heal');
    t.same(heal, { total: 3, resealed: 3 }, 'every row was under the old key');
    const healAgain = await resealSigningKeys(db.pool, masterKeys(newKey), 'heal');
    t.same(healAgain, { total: 3, resealed: 0 }, 'the new key alone opens every row now');
    const all = await resealSigningKeys(db.pool, masterKeys(newKey), 'all');
    t.same(all, { total: 3, resealed: 3 }, 'rotate-key rewrites every row, not only the active one');
    // The healed key still signs.
    const custody = boundDbCustody(db.pool, masterKeys(newKey));
    t.equal((await custody.sign(Buffer.from('x'))).length, 64);

    const before = await db.pool.any(sql.unsafe`SELECT kid, private_key_sealed FROM signing_keys ORDER BY kid`);
    await t.rejects(resealSigningKeys(db.pool, masterKeys(randomBytes(32)), 'heal'), {
      code: 'SVC_ERR_MASTER_KEY_MISMATCH',
      message: /^store signing_keys: signing key \S+ opens with none of the configured master keys \(unopenable: .*SVC_SECRET_KEY_OLD.*svc-admin rotate-key/,
    });
    const after = await db.pool.any(sql.unsafe`SELECT kid, private_key_sealed FROM signing_keys ORDER BY kid`);
    t.same(after, before, 'nothing was written');

    // A key that cannot be unsealed fails at sign time with a custody code (mint defers at once).
    const kid = await custody.keyId();
    await db.pool.query(sql.unsafe`UPDATE signing_keys SET private_key_sealed = ${seal(randomBytes(32), 'junk', `signing-key:${kid}`)} WHERE kid = ${kid}`);
    const fresh = boundDbCustody(db.pool, masterKeys(newKey));
    await t.rejects(fresh.sign(Buffer.from('x')), { code: 'SVC_ERR_CUSTODY_KEY_UNLOADABLE' });
  });

  await t.test('external keys: registered, rotated over, revoked stays revoked', async (t) => {
    await db.pool.query(sql.unsafe`DELETE FROM signing_keys`);
    const jwk = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' };
    t.equal(await registerExternalKey(db.pool, 'aws-kms', 'kms-1', jwk), 'active');
    t.equal(await registerExternalKey(db.pool, 'aws-kms', 'kms-1', jwk), 'active', 'idempotent');
    t.equal(await registerExternalKey(db.pool, 'command', 'cmd-1', jwk), 'active');
    t.same((await listSigningKeys(db.pool)).map((k) => [k.kid, k.status]), [['kms-1', 'retiring'], ['cmd-1', 'active']]);
    await revokeSigningKey(db.pool, 'cmd-1', 'leaked');
    t.equal(await registerExternalKey(db.pool, 'command', 'cmd-1', jwk), 'revoked');
    await t.rejects(registerExternalKey(db.pool, 'command', 'cmd-2', { kty: 'RSA', n: 'x', e: 'AQAB' }), { code: 'SVC_ERR_IDENTITY_JWK_INVALID' });
  });

  await t.test('two nodes generating at once converge on one active key', async (t) => {
    await db.pool.query(sql.unsafe`DELETE FROM signing_keys`);
    const keyHex = (keys.current as Buffer).toString('hex');
    const startAt = String(Date.now() + 1500);
    const runs = await Promise.all(
      [0, 1, 2].map(() => execa(process.execPath, [CHILD, db.url, keyHex, startAt], { timeout: 30_000 })),
    );
    const results = runs.map((r) => JSON.parse(r.stdout) as { kid: string; created: boolean });
    t.equal(new Set(results.map((r) => r.kid)).size, 1, 'every node reports the same kid');
    t.equal(results.filter((r) => r.created).length, 1, 'exactly one created it');
    const list = await listSigningKeys(db.pool);
    t.equal(list.length, 1);
    t.equal(list[0]?.status, 'active');
  });
});
