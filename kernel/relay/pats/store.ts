// Personal access tokens: org-scoped bearer tokens for the developer CLI. A token is shown once,
// when it is minted; the relay keeps its SHA-256 only. Revoked tokens stop working at once.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { checkOrgId } from '../orgs.ts';

/** PATs start with this so they are easy to spot (and never mistaken for a platform token). */
export const PAT_PREFIX = 'svcpat_';
const USER_PATTERN = /^[\x21-\x7e](?:[\x20-\x7e]{0,98}[\x21-\x7e])?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** `last_used_at` is written at most this often per token. */
const LAST_USED_RESOLUTION_SECONDS = 60;

export interface CreatedPat {
  id: string;
  orgId: string;
  user: string;
  name: string;
  /** Shown once; only its SHA-256 is stored. */
  token: string;
  createdAt: string;
  expiresAt: string | null;
}

export interface PatSummary {
  id: string;
  orgId: string;
  user: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  expiresAt: string | null;
}

export interface PatIdentity {
  id: string;
  orgId: string;
  user: string;
  /** The person the token belongs to (signed in through a provider); absent for operator-minted tokens. */
  person?: PersonOfToken;
  /** Role names the token is narrowed to; absent: unrestricted. */
  scopes?: string[];
}

export interface PersonOfToken {
  id: string;
  login: string;
  displayName: string;
  provider: string;
}

export function hashPat(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

function checkUser(user: string): string {
  if (typeof user !== 'string' || !USER_PATTERN.test(user)) {
    throw new InputError('SVC_ERR_RELAY_PAT_USER_INVALID', 'the user name must be 1-100 printable ASCII characters, not starting or ending with a space');
  }
  return user;
}

function checkPatId(id: string): string {
  if (typeof id !== 'string' || !UUID.test(id)) throw new InputError('SVC_ERR_RELAY_PAT_ID_INVALID', `"${String(id).slice(0, 80)}" is not a token id (a UUID, as "relay pat list" prints it)`);
  return id.toLowerCase();
}

/** Token scopes are role names (docs/roles.md). */
export const SCOPE_NAMES = ['viewer', 'developer', 'approver', 'admin'] as const;

export function checkScopes(scopes: readonly string[]): string[] {
  for (const scope of scopes) {
    if (!(SCOPE_NAMES as readonly string[]).includes(scope)) throw new InputError('SVC_ERR_RELAY_SCOPE_INVALID', `"${String(scope).slice(0, 60)}" is not a token scope; scopes are role names: ${SCOPE_NAMES.join(', ')}`);
  }
  if (scopes.length === 0) throw new InputError('SVC_ERR_RELAY_SCOPE_INVALID', `name at least one scope (${SCOPE_NAMES.join(', ')}), or none at all for an unrestricted token`);
  return [...new Set(scopes)];
}

const IdRow = Type.Object({ created_at: Type.Number(), expires_at: Type.Union([Type.Number(), Type.Null()]) });

/** A self-minted token lives at most this many days (`svc pat create --expires-in`). */
export const MAX_PAT_EXPIRY_DAYS = 366;

export function checkExpiryDays(days: number | undefined): number | undefined {
  if (days === undefined) return undefined;
  if (!Number.isInteger(days) || days < 1 || days > MAX_PAT_EXPIRY_DAYS) {
    throw new InputError('SVC_ERR_RELAY_PAT_EXPIRY_INVALID', `the expiry must be a whole number of days from 1 to ${MAX_PAT_EXPIRY_DAYS}; got ${String(days).slice(0, 40)}`);
  }
  return days;
}

/**
 * `personId`: the token belongs to that person (it acts with their roles); `scopes`: role names
 * the token is narrowed to (docs/roles.md).
 */
export async function createPat(
  pool: DatabasePool,
  orgId: string,
  user: string,
  name = '',
  options: { expiresInDays?: number; personId?: string; scopes?: readonly string[] } = {},
): Promise<CreatedPat> {
  checkOrgId(orgId);
  checkUser(user);
  if (typeof name !== 'string' || name.length > 200 || /[\x00-\x1f\x7f]/.test(name)) throw new InputError('SVC_ERR_RELAY_PAT_NAME_INVALID', 'the token name must be at most 200 characters without control characters');
  const days = checkExpiryDays(options.expiresInDays);
  const id = randomUUID();
  const token = PAT_PREFIX + randomBytes(32).toString('base64url');
  const expires = days === undefined ? sql.fragment`null` : sql.fragment`now() + make_interval(days => ${days})`;
  const scopes = options.scopes === undefined ? null : sql.array(checkScopes(options.scopes), 'text');
  const row = await pool.maybeOne(sqlTyped(IdRow)`
    insert into relay_pats (id, org_id, user_name, name, token_sha256, expires_at, person_id, scopes)
    select ${id}, org_id, ${user}, ${name}, ${sql.binary(hashPat(token))}, ${expires}, ${options.personId ?? null}, ${scopes} from relay_orgs where org_id = ${orgId}
    returning created_at, expires_at`);
  if (row === null) throw new NotFoundError('SVC_ERR_RELAY_ORG_NOT_FOUND', `org "${orgId}" does not exist; create it with "relay org create ${orgId}"`);
  return { id, orgId, user, name, token, createdAt: new Date(row.created_at).toISOString(), expiresAt: iso(row.expires_at) };
}

const SummaryRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  user_name: Type.String(),
  name: Type.String(),
  created_at: Type.Number(),
  last_used_at: Type.Union([Type.Number(), Type.Null()]),
  revoked_at: Type.Union([Type.Number(), Type.Null()]),
  expires_at: Type.Union([Type.Number(), Type.Null()]),
});

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** Every token (of one org, or of one user of one org). */
export async function listPats(pool: DatabasePool, orgId?: string, user?: string): Promise<PatSummary[]> {
  if (orgId !== undefined) checkOrgId(orgId);
  const where =
    orgId === undefined ? sql.fragment`` : user === undefined ? sql.fragment`where org_id = ${orgId}` : sql.fragment`where org_id = ${orgId} and user_name = ${user}`;
  const rows = await pool.any(sqlTyped(SummaryRow)`
    select id::text as id, org_id, user_name, name, created_at, last_used_at, revoked_at, expires_at from relay_pats
    ${where}
    order by org_id, created_at, id`);
  return rows.map((r) => ({
    id: r.id,
    orgId: r.org_id,
    user: r.user_name,
    name: r.name,
    createdAt: iso(r.created_at)!,
    lastUsedAt: iso(r.last_used_at),
    revokedAt: iso(r.revoked_at),
    expiresAt: iso(r.expires_at),
  }));
}

/**
 * Revokes a token; revoking a revoked token changes nothing and says so. With `owner`, only a
 * token of that org and user: another's is "not found" (its id is not confirmed to exist).
 */
export async function revokePat(pool: DatabasePool, id: string, owner?: { orgId: string; user: string }): Promise<{ id: string; alreadyRevoked: boolean }> {
  const patId = checkPatId(id);
  const mine = owner === undefined ? sql.fragment`` : sql.fragment`and org_id = ${owner.orgId} and user_name = ${owner.user}`;
  const updated = await pool.query(sql.unsafe`update relay_pats set revoked_at = now() where id = ${patId} and revoked_at is null ${mine}`);
  if (updated.rowCount > 0) return { id: patId, alreadyRevoked: false };
  const exists = await pool.maybeOne(sql.unsafe`select 1 as one from relay_pats where id = ${patId} ${mine}`);
  if (exists === null) {
    throw new NotFoundError('SVC_ERR_RELAY_PAT_NOT_FOUND', owner === undefined ? `no token ${patId}; list them with "relay pat list"` : `no token ${patId} of yours; list them with "svc pat list"`);
  }
  return { id: patId, alreadyRevoked: true };
}

const IdentityRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  user_name: Type.String(),
  stale: Type.Boolean(),
  scopes: Type.Union([Type.Array(Type.String()), Type.Null()]),
  person_id: Type.Union([Type.String(), Type.Null()]),
  login: Type.Union([Type.String(), Type.Null()]),
  display_name: Type.Union([Type.String(), Type.Null()]),
  provider: Type.Union([Type.String(), Type.Null()]),
});

/** What a live token row says about its holder (shared with sessions/store.ts). */
export const PAT_HOLDER_COLUMNS = sql.fragment`p.scopes, p.person_id::text as person_id, pp.login, pp.display_name, pp.provider`;

export function holderOf(row: { scopes: string[] | null; person_id: string | null; login: string | null; display_name: string | null; provider: string | null }): Pick<PatIdentity, 'person' | 'scopes'> {
  return {
    ...(row.person_id !== null ? { person: { id: row.person_id, login: row.login ?? '', displayName: row.display_name ?? '', provider: row.provider ?? '' } } : {}),
    ...(row.scopes !== null ? { scopes: row.scopes } : {}),
  };
}

/** The live (not revoked) token's identity, or undefined. Marks it used. */
export async function patForToken(pool: DatabasePool, token: string): Promise<PatIdentity | undefined> {
  if (typeof token !== 'string' || !token.startsWith(PAT_PREFIX) || token.length > 512) return undefined;
  // A disabled person's tokens stop at once, like revoked ones.
  const row = await pool.maybeOne(sqlTyped(IdentityRow)`
    select p.id::text as id, p.org_id, p.user_name, ${PAT_HOLDER_COLUMNS},
      (p.last_used_at is null or p.last_used_at < now() - make_interval(secs => ${LAST_USED_RESOLUTION_SECONDS})) as stale
    from relay_pats p left join relay_people pp on pp.id = p.person_id
    where p.token_sha256 = ${sql.binary(hashPat(token))} and p.revoked_at is null and (p.expires_at is null or p.expires_at > now())
      and pp.disabled_at is null`);
  if (row === null) return undefined;
  if (row.stale) await pool.query(sql.unsafe`update relay_pats set last_used_at = now() where id = ${row.id}`);
  return { id: row.id, orgId: row.org_id, user: row.user_name, ...holderOf(row) };
}
