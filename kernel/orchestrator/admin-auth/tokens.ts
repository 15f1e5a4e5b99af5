// Minted operator admin tokens (`admin_tokens`): created by `svc-admin admin-token create`, shown
// once, stored as SHA-256 hashes. A caller presents one as `Authorization: Bearer <token>`;
// require-scope.ts checks it against the route's scope.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import { ADMIN_SCOPES, type AdminScope, type AdminTokenSummary, type CreatedAdminToken } from '../../../schemas/admin-tokens.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { ConflictError, InputError, NotFoundError } from '../../../core/errors.ts';

/** Prefix that makes a leaked admin token easy to recognise (secret scanners, logs). */
export const ADMIN_TOKEN_PREFIX = 'svcadm_';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function hashAdminToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const TokenRow = Type.Object({
  id: Type.String(),
  name: Type.String(),
  unrestricted: Type.Boolean(),
  scopes: Type.Array(Type.String()),
  created_at: Type.Number(),
  created_by: Type.String(),
  expires_at: Type.Union([Type.Number(), Type.Null()]),
  revoked_at: Type.Union([Type.Number(), Type.Null()]),
  last_used_at: Type.Union([Type.Number(), Type.Null()]),
});
type TokenRow = Static<typeof TokenRow>;
const COLUMNS = sql.fragment`id::text, name, unrestricted, scopes, created_at, created_by, expires_at, revoked_at, last_used_at`;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const isScope = (s: string): s is AdminScope => (ADMIN_SCOPES as readonly string[]).includes(s);

function summary(row: TokenRow, now = Date.now()): AdminTokenSummary {
  const state = row.revoked_at !== null ? 'revoked' : row.expires_at !== null && row.expires_at <= now ? 'expired' : 'active';
  return {
    id: row.id,
    name: row.name,
    unrestricted: row.unrestricted,
    // A scope a later version dropped is no longer granted; it is not shown either.
    scopes: row.scopes.filter(isScope),
    createdAt: iso(row.created_at) as string,
    createdBy: row.created_by,
    expiresAt: iso(row.expires_at),
    revokedAt: iso(row.revoked_at),
    lastUsedAt: iso(row.last_used_at),
    state,
  };
}

export interface CreateAdminTokenOptions {
  name: string;
  /** Scopes of a restricted token; empty when `unrestricted`. */
  scopes: readonly string[];
  unrestricted: boolean;
  createdBy: string;
  ttlMs?: number;
}

function checkCreate(options: CreateAdminTokenOptions): AdminScope[] {
  const name = options.name;
  if (name.length < 1 || name.length > 200 || name.trim() !== name) {
    throw new InputError('SVC_ERR_ADMIN_TOKEN_NAME_INVALID', `admin token name "${name.slice(0, 80)}" must be 1-200 characters without leading or trailing spaces`);
  }
  if (options.unrestricted && options.scopes.length > 0) {
    throw new InputError('SVC_ERR_ADMIN_TOKEN_SCOPES_INVALID', 'an unrestricted token holds every scope: pass either --unrestricted or --scope, not both');
  }
  if (!options.unrestricted && options.scopes.length === 0) {
    throw new InputError('SVC_ERR_ADMIN_TOKEN_SCOPES_INVALID', `name at least one --scope (${ADMIN_SCOPES.join(', ')}) or pass --unrestricted`);
  }
  const unknown = options.scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) {
    throw new InputError('SVC_ERR_ADMIN_TOKEN_SCOPES_INVALID', `unknown scope ${unknown.map((s) => `"${s.slice(0, 80)}"`).join(', ')}: use one of ${ADMIN_SCOPES.join(', ')}`);
  }
  if (options.ttlMs !== undefined && (!Number.isSafeInteger(options.ttlMs) || options.ttlMs <= 0)) {
    throw new InputError('SVC_ERR_ADMIN_TOKEN_TTL_INVALID', 'a token lifetime must be a positive whole number of milliseconds');
  }
  return [...new Set(options.scopes as AdminScope[])].sort((a, b) => ADMIN_SCOPES.indexOf(a) - ADMIN_SCOPES.indexOf(b));
}

export async function createAdminToken(pool: DatabasePool, options: CreateAdminTokenOptions): Promise<CreatedAdminToken> {
  const scopes = checkCreate(options);
  const token = `${ADMIN_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const expires = options.ttlMs === undefined ? null : sql.timestamp(new Date(Date.now() + options.ttlMs));
  const row = await pool.maybeOne(sqlTyped(TokenRow)`
    INSERT INTO admin_tokens (id, name, token_hash, unrestricted, scopes, created_by, expires_at)
    VALUES (${randomUUID()}, ${options.name}, ${hashAdminToken(token)}, ${options.unrestricted}, ${sql.array(scopes, 'text')}, ${options.createdBy}, ${expires})
    ON CONFLICT (name) WHERE revoked_at IS NULL DO NOTHING
    RETURNING ${COLUMNS}`);
  if (row === null) throw new ConflictError('SVC_ERR_ADMIN_TOKEN_NAME_TAKEN', `an admin token named "${options.name}" exists; revoke it first or pick another name`);
  return { ...summary(row), token };
}

export async function listAdminTokens(pool: DatabasePool): Promise<AdminTokenSummary[]> {
  const rows = await pool.any(sqlTyped(TokenRow)`SELECT ${COLUMNS} FROM admin_tokens ORDER BY created_at, id`);
  const now = Date.now();
  return rows.map((row) => summary(row, now));
}

/** Revokes a token by id or by the name of its live token; refused from the next request on. Idempotent by id. */
export async function revokeAdminToken(pool: DatabasePool, idOrName: string): Promise<AdminTokenSummary> {
  const where = UUID.test(idOrName) ? sql.fragment`id = ${idOrName}` : sql.fragment`name = ${idOrName} AND revoked_at IS NULL`;
  const row = await pool.maybeOne(sqlTyped(TokenRow)`
    UPDATE admin_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE ${where} RETURNING ${COLUMNS}`);
  if (row === null) throw new NotFoundError('SVC_ERR_ADMIN_TOKEN_NOT_FOUND', `no admin token has id or live name "${idOrName.slice(0, 200)}" (see "svc-admin admin-token list")`);
  return summary(row);
}

/** The stored token whose hash this is, or null. */
export async function findAdminToken(pool: DatabasePool, token: string): Promise<AdminTokenSummary | null> {
  const row = await pool.maybeOne(sqlTyped(TokenRow)`SELECT ${COLUMNS} FROM admin_tokens WHERE token_hash = ${hashAdminToken(token)}`);
  return row === null ? null : summary(row);
}

/** Records a use; at most one write a minute per token, so busy scripts do not write on every call. */
export async function touchAdminToken(pool: DatabasePool, id: string): Promise<void> {
  await pool.query(sql.unsafe`
    UPDATE admin_tokens SET last_used_at = now()
    WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`);
}
