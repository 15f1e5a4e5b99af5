// The `signing_keys` table (spec "Signing key", "States and transitions / Signing key"). Every
// statement about key state lives here: convergence on one active key, rotate, retire, revoke,
// JWKS membership. Private material stays sealed; the master-key sweeps over it are the sealed
// store in sealed-store.ts (kernel/orchestrator/sealed-stores.ts).
import type { JWK } from 'jose';
import { Type, type Static } from 'typebox';
import type { CustodyKeyVault, NewSigningKey, StoredSigningKey } from '../../../core/extension-points/custody.ts';
import { EcPublicJwk, type CustodyKind, type Jwks, type RevokedKey, type SigningKeyStatus, type SigningKeySummary } from '../../../schemas/identity.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import type { MasterKeys } from '../../services/crypto/master-keys.ts';
import { openWithAny, seal } from '../../services/crypto/sealing.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { ConflictError, InputError, NotFoundError, SvcError } from '../../../core/errors.ts';

const KeyRow = Type.Object({
  kid: Type.String(),
  status: Type.Enum(['active', 'retiring', 'retired', 'revoked']),
  custody: Type.Enum(['db', 'aws-kms', 'command']),
  public_jwk: Type.Record(Type.String(), Type.Unknown()),
  private_key_sealed: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.Number(),
  retiring_at: Type.Union([Type.Number(), Type.Null()]),
  retired_at: Type.Union([Type.Number(), Type.Null()]),
  revoked_at: Type.Union([Type.Number(), Type.Null()]),
  revoke_reason: Type.Union([Type.String(), Type.Null()]),
  compromised_at: Type.Union([Type.Number(), Type.Null()]),
});
type KeyRow = Static<typeof KeyRow>;

const COLUMNS = sql.fragment`kid, status, custody, public_jwk, private_key_sealed, created_at, retiring_at, retired_at, revoked_at, revoke_reason, compromised_at`;
/** Serializes key creation across every node on the database. */
const KEY_LOCK = sql.fragment`pg_advisory_xact_lock(hashtext('svc:signing_keys'))`;
const KID = /^[A-Za-z0-9_-]{1,200}$/;
const checkJwk = compileSchema(EcPublicJwk);

export const SIGNING_KEYS_STORE = 'signing_keys';

export function sealingAd(kid: string): string {
  return `signing-key:${kid}`;
}

/** The public JWK as served: only kty/crv/x/y plus kid, alg, use. */
export function servedJwk(kid: string, jwk: JWK): Static<typeof EcPublicJwk> {
  const served = { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, kid, alg: 'ES256', use: 'sig' };
  const result = checkJwk.validate(served);
  if (!result.ok) throw new SvcError('SVC_ERR_IDENTITY_JWK_INVALID', `public key ${kid} is not an EC P-256 JWK: ${formatIssues(result.issues)}`);
  return result.value;
}

function stored(row: KeyRow): StoredSigningKey {
  return {
    kid: row.kid,
    status: row.status as SigningKeyStatus,
    publicJwk: row.public_jwk as JWK,
    sealedPrivateKey: row.private_key_sealed,
    createdAt: new Date(row.created_at),
  };
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function summary(row: KeyRow): SigningKeySummary {
  return {
    kid: row.kid,
    status: row.status as SigningKeyStatus,
    custody: row.custody as CustodyKind,
    createdAt: new Date(row.created_at).toISOString(),
    retiringAt: iso(row.retiring_at),
    retiredAt: iso(row.retired_at),
    revokedAt: iso(row.revoked_at),
    revokeReason: row.revoke_reason,
    ...(row.compromised_at === null ? {} : { compromisedAt: iso(row.compromised_at) }),
  };
}

export function checkKid(kid: string): void {
  if (!KID.test(kid)) throw new InputError('SVC_ERR_IDENTITY_KID_INVALID', `"${kid.slice(0, 80)}" is not a key id (letters, digits, - and _ only)`);
}

async function byKid(pool: DatabasePool, kid: string): Promise<KeyRow | undefined> {
  const row = await pool.maybeOne(sqlTyped(KeyRow)`SELECT ${COLUMNS} FROM signing_keys WHERE kid = ${kid}`);
  return row ?? undefined;
}

export async function activeKey(pool: DatabasePool): Promise<StoredSigningKey | undefined> {
  const row = await pool.maybeOne(sqlTyped(KeyRow)`SELECT ${COLUMNS} FROM signing_keys WHERE status = 'active'`);
  return row ? stored(row) : undefined;
}

export async function listSigningKeys(pool: DatabasePool): Promise<SigningKeySummary[]> {
  const rows = await pool.any(sqlTyped(KeyRow)`SELECT ${COLUMNS} FROM signing_keys ORDER BY created_at, kid`);
  return rows.map(summary);
}

export async function signingKeyStatus(pool: DatabasePool, kid: string): Promise<SigningKeyStatus | undefined> {
  return (await byKid(pool, kid))?.status as SigningKeyStatus | undefined;
}

/** JWKS membership: active, retiring and retired are served; revoked never. */
export async function publicKeySet(pool: DatabasePool): Promise<Jwks> {
  const rows = await pool.any(
    sqlTyped(KeyRow)`SELECT ${COLUMNS} FROM signing_keys WHERE status IN ('active', 'retiring', 'retired') ORDER BY created_at DESC, kid`,
  );
  return { keys: rows.map((row) => servedJwk(row.kid, row.public_jwk as JWK)) };
}

/**
 * Revoked keys as trust material publishes them (never in the JWKS): with `compromisedAt` a
 * verifier still accepts signatures a trusted TSA dated before it; null means none.
 */
export async function revokedKeyMaterial(pool: DatabasePool): Promise<RevokedKey[]> {
  const rows = await pool.any(sqlTyped(KeyRow)`SELECT ${COLUMNS} FROM signing_keys WHERE status = 'revoked' ORDER BY revoked_at, kid`);
  return rows.map((row) => ({
    kid: row.kid,
    jwk: servedJwk(row.kid, row.public_jwk as JWK),
    revokedAt: iso(row.revoked_at) ?? new Date(row.created_at).toISOString(),
    compromisedAt: iso(row.compromised_at),
  }));
}

/** Revoked kids (so an online verifier can say "revoked" rather than "unknown"). */
export async function revokedKids(pool: DatabasePool): Promise<Set<string>> {
  const rows = await pool.any(sqlTyped(Type.Object({ kid: Type.String() }))`SELECT kid FROM signing_keys WHERE status = 'revoked'`);
  return new Set(rows.map((r) => r.kid));
}

async function insertActiveRow(pool: DatabasePool, custody: CustodyKind, key: { kid: string; publicJwk: JWK; sealedPrivateKey: string | null }, rotate: boolean) {
  checkKid(key.kid);
  servedJwk(key.kid, key.publicJwk);
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT ${KEY_LOCK}`);
    const current = await tx.maybeOne(sqlTyped(KeyRow)`SELECT ${COLUMNS} FROM signing_keys WHERE status = 'active' FOR UPDATE`);
    if (current && !rotate) return { key: stored(current), created: false, previousKid: null as string | null };
    if (current) {
      await tx.query(sql.unsafe`UPDATE signing_keys SET status = 'retiring', retiring_at = now() WHERE kid = ${current.kid}`);
    }
    const jwk = JSON.stringify(key.publicJwk);
    const row = await tx.one(sqlTyped(KeyRow)`
      INSERT INTO signing_keys (kid, status, custody, public_jwk, private_key_sealed)
      VALUES (${key.kid}, 'active', ${custody}, ${jwk}::jsonb, ${key.sealedPrivateKey})
      RETURNING ${COLUMNS}`);
    return { key: stored(row), created: true, previousKid: current?.kid ?? null };
  });
}

/** The vault a db-custody plugin is bound to. */
export function createKeyVault(pool: DatabasePool, masterKeys: MasterKeys, custody: CustodyKind = 'db'): CustodyKeyVault {
  return {
    seal(plaintext, ad) {
      if (!masterKeys.current) throw new SvcError('SVC_ERR_IDENTITY_NO_MASTER_KEY', 'no master key (SVC_SECRET_KEY) is configured to seal signing keys');
      return seal(masterKeys.current, Buffer.from(plaintext), ad);
    },
    open: (sealed, ad) => openWithAny(masterKeys.all, sealed, ad).plaintext,
    active: () => activeKey(pool),
    async byKid(kid) {
      const row = await byKid(pool, kid);
      return row ? stored(row) : undefined;
    },
    insertActive: async (key: NewSigningKey) => {
      const result = await insertActiveRow(pool, custody, key, false);
      return { key: result.key, created: result.created };
    },
    rotateTo: async (key: NewSigningKey) => {
      const result = await insertActiveRow(pool, custody, key, true);
      return { key: result.key, previousKid: result.previousKid };
    },
  };
}

/**
 * An aws-kms or command key: recorded (public half only) so it appears in the JWKS and can be
 * retired or revoked. A new kid becomes active and the previous active key starts retiring.
 */
export async function registerExternalKey(pool: DatabasePool, custody: CustodyKind, kid: string, jwk: JWK): Promise<SigningKeyStatus> {
  const existing = await byKid(pool, kid);
  if (existing?.status === 'revoked') return 'revoked';
  if (existing?.status === 'active') return 'active';
  if (existing) {
    await pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SELECT ${KEY_LOCK}`);
      await tx.query(sql.unsafe`UPDATE signing_keys SET status = 'retiring', retiring_at = now() WHERE status = 'active'`);
      await tx.query(sql.unsafe`UPDATE signing_keys SET status = 'active', retiring_at = NULL, retired_at = NULL WHERE kid = ${kid}`);
    });
    return 'active';
  }
  await insertActiveRow(pool, custody, { kid, publicJwk: jwk, sealedPrivateKey: null }, true);
  return 'active';
}

export async function retireSigningKey(pool: DatabasePool, kid: string): Promise<SigningKeySummary> {
  checkKid(kid);
  const row = await pool.maybeOne(
    sqlTyped(KeyRow)`UPDATE signing_keys SET status = 'retired', retired_at = now() WHERE kid = ${kid} AND status = 'retiring' RETURNING ${COLUMNS}`,
  );
  if (row) return summary(row);
  const existing = await byKid(pool, kid);
  if (!existing) throw new NotFoundError('SVC_ERR_IDENTITY_KEY_NOT_FOUND', `no signing key has kid ${kid}`);
  throw new ConflictError(
    'SVC_ERR_IDENTITY_KEY_STATE',
    `signing key ${kid} is ${existing.status}; only a retiring key can be retired (rotate first: svc-admin signing-key rotate)`,
  );
}

/**
 * Revoke a key. Without `compromisedAt` nothing it signed verifies any more; with it, signatures
 * a trusted TSA dated strictly before that time stay verifiable (never a time in the future, nor
 * before the key existed).
 */
export async function revokeSigningKey(pool: DatabasePool, kid: string, reason: string, options: { compromisedAt?: Date } = {}): Promise<SigningKeySummary> {
  checkKid(kid);
  const why = reason.trim();
  if (why === '') throw new InputError('SVC_ERR_IDENTITY_REVOKE_REASON', 'revoking a key needs a reason (--reason <text>)');
  if (why.length > 2000) throw new InputError('SVC_ERR_IDENTITY_REVOKE_REASON', 'the revoke reason is longer than 2000 characters');
  const compromisedAt = options.compromisedAt;
  if (compromisedAt !== undefined && Number.isNaN(compromisedAt.getTime())) {
    throw new InputError('SVC_ERR_IDENTITY_COMPROMISED_AT', 'the compromise time is not a date (an ISO 8601 time such as 2026-05-01T12:00:00Z)');
  }
  const at = compromisedAt === undefined ? null : compromisedAt.toISOString();
  const row = await pool.maybeOne(sqlTyped(KeyRow)`
    UPDATE signing_keys SET status = 'revoked', revoked_at = now(), revoke_reason = ${why}, compromised_at = ${at}::timestamptz
    WHERE kid = ${kid} AND status <> 'revoked' AND (${at}::timestamptz IS NULL OR (${at}::timestamptz <= now() AND ${at}::timestamptz >= created_at))
    RETURNING ${COLUMNS}`);
  if (row) return summary(row);
  const existing = await byKid(pool, kid);
  if (!existing) throw new NotFoundError('SVC_ERR_IDENTITY_KEY_NOT_FOUND', `no signing key has kid ${kid}`);
  if (existing.status !== 'revoked' && at !== null) {
    throw new InputError(
      'SVC_ERR_IDENTITY_COMPROMISED_AT',
      `the compromise time ${at} must lie between the key's creation (${new Date(existing.created_at).toISOString()}) and now`,
    );
  }
  throw new ConflictError('SVC_ERR_IDENTITY_KEY_STATE', `signing key ${kid} is already revoked`);
}
