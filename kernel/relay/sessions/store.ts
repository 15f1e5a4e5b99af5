// Browser sessions of the relay's pages: opened by signing in with a personal access token, they
// act as that token's user and org. The cookie carries 32 random bytes; the relay keeps their
// SHA-256 only. A session ends at sign-out, at its expiry, or when its token is revoked or expires
// (the lookup joins the token), so revoking a leaked token also ends the browsers it signed in.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Type } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { PAT_HOLDER_COLUMNS, holderOf, type PatIdentity } from '../pats/store.ts';

/** How long a browser stays signed in (spec names none; a working day and then some). */
export const SESSION_TTL_SECONDS = 12 * 60 * 60;
const SESSION_VALUE = /^[A-Za-z0-9_-]{43}$/;

export interface Session {
  orgId: string;
  user: string;
  patId: string;
  expiresAt: string;
  person?: PatIdentity['person'];
  scopes?: string[];
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * The session's CSRF token: derived one-way from the cookie value, so a page can carry it (and a
 * leaked page reveals nothing that signs in) while the relay stores nothing more.
 */
export function csrfTokenFor(sessionValue: string): string {
  return createHash('sha256').update('svc-relay-csrf\0', 'utf8').update(sessionValue, 'utf8').digest('base64url');
}

/** Constant-time comparison of a submitted CSRF token with the session's. */
export function csrfMatches(sessionValue: string, submitted: unknown): boolean {
  if (typeof submitted !== 'string' || submitted.length > 100) return false;
  const expected = Buffer.from(csrfTokenFor(sessionValue), 'utf8');
  const given = Buffer.from(submitted, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Opens a session for a live token; returns the cookie value (shown to the browser only). */
export async function openSession(pool: DatabasePool, patId: string, ttlSeconds = SESSION_TTL_SECONDS): Promise<{ value: string; expiresAt: string }> {
  // Sign-in is when stale sessions go: the table stays as small as the live ones.
  await pool.query(sql.unsafe`delete from relay_sessions where expires_at < now()`);
  const value = randomBytes(32).toString('base64url');
  const row = await pool.one(sqlTyped(Type.Object({ expires_at: Type.Number() }))`
    insert into relay_sessions (session_sha256, pat_id, expires_at)
    values (${sql.binary(sha256(value))}, ${patId}, now() + make_interval(secs => ${ttlSeconds}))
    returning expires_at`);
  return { value, expiresAt: new Date(row.expires_at).toISOString() };
}

const SessionRow = Type.Object({
  org_id: Type.String(),
  user_name: Type.String(),
  pat_id: Type.String(),
  expires_at: Type.Number(),
  scopes: Type.Union([Type.Array(Type.String()), Type.Null()]),
  person_id: Type.Union([Type.String(), Type.Null()]),
  login: Type.Union([Type.String(), Type.Null()]),
  display_name: Type.Union([Type.String(), Type.Null()]),
  provider: Type.Union([Type.String(), Type.Null()]),
});

/** The live session of a cookie value, or undefined (unknown, expired, signed out, token gone, person disabled). */
export async function sessionFor(pool: DatabasePool, value: string | undefined): Promise<Session | undefined> {
  if (value === undefined || !SESSION_VALUE.test(value)) return undefined;
  const row = await pool.maybeOne(sqlTyped(SessionRow)`
    select p.org_id, p.user_name, p.id::text as pat_id, s.expires_at, ${PAT_HOLDER_COLUMNS}
    from relay_sessions s join relay_pats p on p.id = s.pat_id left join relay_people pp on pp.id = p.person_id
    where s.session_sha256 = ${sql.binary(sha256(value))} and s.expires_at > now()
      and p.revoked_at is null and (p.expires_at is null or p.expires_at > now()) and pp.disabled_at is null`);
  if (row === null) return undefined;
  return { orgId: row.org_id, user: row.user_name, patId: row.pat_id, expiresAt: new Date(row.expires_at).toISOString(), ...holderOf(row) };
}

/** Ends a session (sign-out); an unknown value changes nothing. */
export async function closeSession(pool: DatabasePool, value: string | undefined): Promise<void> {
  if (value === undefined || !SESSION_VALUE.test(value)) return;
  await pool.query(sql.unsafe`delete from relay_sessions where session_sha256 = ${sql.binary(sha256(value))}`);
}
