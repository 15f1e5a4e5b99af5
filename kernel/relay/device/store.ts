// RFC 8628 device authorization, durable in the relay's database (relay_device_codes). The CLI
// gets a device code (32 random bytes, stored as SHA-256) and a user code (8 letters of an
// alphabet without vowels or look-alikes, shown as BCDF-GHJK, single use); a signed-in person
// approves or denies the user code; the CLI's next poll then gets a new personal access token of
// the approver's org and user, minted at that moment (no token rests in the table).
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { Type } from 'typebox';
import { RateLimitedError, NotFoundError } from '../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { createPat, type CreatedPat } from '../pats/index.ts';
import { mintPersonToken } from '../people/store.ts';
import type { RelayActor } from '../../../schemas/wire/relay-people.ts';

/** How long a code pair lives (RFC 8628 `expires_in`). */
export const DEVICE_CODE_TTL_SECONDS = 600;
/** The least time between two polls of one device code (RFC 8628 `interval`). */
export const DEVICE_POLL_INTERVAL_SECONDS = 5;
/** RFC 8628 3.5: each `slow_down` adds 5 seconds to the interval. */
export const SLOW_DOWN_STEP_SECONDS = 5;
/** Live (pending, unexpired) code pairs at most; past it, new ones wait. */
export const MAX_PENDING_DEVICE_CODES = 10_000;
/** Consonants without look-alikes (RFC 8628 6.1): 20^8 codes. */
export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;
const DEVICE_CODE = /^[A-Za-z0-9_-]{43}$/;

/** The name a device-flow token gets in `svc pat list`. */
export const DEVICE_PAT_NAME = 'svc login';

export interface DeviceCodePair {
  deviceCode: string;
  userCode: string;
  expiresIn: number;
  interval: number;
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** A typed user code in its stored form (case, spaces and dashes do not matter), or undefined. */
export function normalizeUserCode(input: unknown): string | undefined {
  if (typeof input !== 'string' || input.length > 40) return undefined;
  const letters = input.toUpperCase().replace(/[\s-]/g, '');
  if (letters.length !== USER_CODE_LENGTH || [...letters].some((c) => !USER_CODE_ALPHABET.includes(c))) return undefined;
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}

export async function createDeviceCode(pool: DatabasePool, options: { ttlSeconds?: number; intervalSeconds?: number } = {}): Promise<DeviceCodePair> {
  const ttl = options.ttlSeconds ?? DEVICE_CODE_TTL_SECONDS;
  const interval = options.intervalSeconds ?? DEVICE_POLL_INTERVAL_SECONDS;
  // Expired pairs go here; an hour's grace lets a late poll still hear `expired_token`.
  await pool.query(sql.unsafe`delete from relay_device_codes where expires_at < now() - interval '1 hour'`);
  const live = await pool.one(sqlTyped(Type.Object({ n: Type.Number() }))`
    select count(*)::int as n from relay_device_codes where status = 'pending' and expires_at > now()`);
  if (live.n >= MAX_PENDING_DEVICE_CODES) {
    throw new RateLimitedError('SVC_ERR_RELAY_DEVICE_CODES_FULL', `${MAX_PENDING_DEVICE_CODES} device logins are already waiting for approval; retry in a minute`, 60);
  }
  const deviceCode = randomBytes(32).toString('base64url');
  // A clash of user codes among live ones is rare (20^8); try a few before giving up.
  for (let attempt = 0; ; attempt++) {
    const userCode = newUserCode();
    const inserted = await pool.query(sql.unsafe`
      insert into relay_device_codes (device_sha256, user_code, interval_seconds, expires_at)
      values (${sql.binary(sha256(deviceCode))}, ${userCode}, ${interval}, now() + make_interval(secs => ${ttl}))
      on conflict (user_code) do nothing`);
    if (inserted.rowCount > 0) return { deviceCode, userCode, expiresIn: ttl, interval };
    if (attempt >= 5) throw new RateLimitedError('SVC_ERR_RELAY_DEVICE_CODES_FULL', 'no free user code was found; retry in a minute', 60);
  }
}

/** Approves or denies a pending, unexpired user code as the session's token; else not found. */
export async function decideUserCode(pool: DatabasePool, userCode: string, decision: 'approve' | 'deny', patId: string): Promise<void> {
  const code = normalizeUserCode(userCode);
  const updated =
    code === undefined
      ? { rowCount: 0 }
      : await pool.query(sql.unsafe`
          update relay_device_codes set status = ${decision === 'approve' ? 'approved' : 'denied'}, approved_by_pat = ${patId}, decided_at = now()
          where user_code = ${code} and status = 'pending' and expires_at > now()`);
  if (updated.rowCount === 0) {
    throw new NotFoundError(
      'SVC_ERR_RELAY_DEVICE_USER_CODE_INVALID',
      'that code is not waiting for approval: it is mistyped, already used, or expired (codes live 10 minutes); run "svc login" again for a new one',
    );
  }
}

/** What a poll of the token endpoint comes to (RFC 8628 3.5). */
export type PollOutcome =
  | { kind: 'token'; pat: CreatedPat; refreshToken?: string; approvedBy: RelayActor }
  | { kind: 'authorization_pending' | 'access_denied' | 'expired_token' | 'invalid_grant' }
  | { kind: 'slow_down'; interval: number };

const PollRow = Type.Object({ status: Type.String(), live: Type.Boolean(), too_fast: Type.Boolean(), interval_seconds: Type.Number() });
const ApproverRow = Type.Object({
  org_id: Type.String(),
  user_name: Type.String(),
  live: Type.Boolean(),
  person_id: Type.Union([Type.String(), Type.Null()]),
  grant_id: Type.Union([Type.String(), Type.Null()]),
  pat_id: Type.String(),
});

/**
 * `personTokenTtlSeconds`: an approver signed in through a provider gets a token of that person
 * living this long, with a refresh token (the relay checks the person at the provider on refresh).
 */
export async function pollDeviceCode(pool: DatabasePool, deviceCode: string, personTokenTtlSeconds?: number): Promise<PollOutcome> {
  if (!DEVICE_CODE.test(deviceCode)) return { kind: 'invalid_grant' };
  const key = sql.binary(sha256(deviceCode));
  const row = await pool.maybeOne(sqlTyped(PollRow)`
    select status, expires_at > now() as live, interval_seconds,
      (last_polled_at is not null and last_polled_at > now() - make_interval(secs => interval_seconds)) as too_fast
    from relay_device_codes where device_sha256 = ${key}`);
  if (row === null || row.status === 'consumed') return { kind: 'invalid_grant' };
  if (!row.live) return { kind: 'expired_token' };
  if (row.too_fast) {
    const slowed = await pool.one(sqlTyped(Type.Object({ interval_seconds: Type.Number() }))`
      update relay_device_codes set interval_seconds = interval_seconds + ${SLOW_DOWN_STEP_SECONDS}, last_polled_at = now()
      where device_sha256 = ${key} returning interval_seconds`);
    return { kind: 'slow_down', interval: slowed.interval_seconds };
  }
  await pool.query(sql.unsafe`update relay_device_codes set last_polled_at = now() where device_sha256 = ${key}`);
  if (row.status === 'pending') return { kind: 'authorization_pending' };
  if (row.status === 'denied') return { kind: 'access_denied' };
  // Approved: one poll wins the token; the pair is used up whatever happens next.
  const approver = await pool.maybeOne(sqlTyped(ApproverRow)`
    with used as (
      update relay_device_codes set status = 'consumed' where device_sha256 = ${key} and status = 'approved' returning approved_by_pat
    )
    select p.org_id, p.user_name, p.person_id::text as person_id, p.grant_id::text as grant_id, p.id::text as pat_id,
      (p.revoked_at is null and (p.expires_at is null or p.expires_at > now()) and pp.disabled_at is null) as live
    from used join relay_pats p on p.id = used.approved_by_pat left join relay_people pp on pp.id = p.person_id`);
  if (approver === null) return { kind: 'invalid_grant' };
  // The approver's token was revoked since: the approval goes with it.
  if (!approver.live) return { kind: 'access_denied' };
  // For the audit record of the new token: who approved the pair in the browser.
  const approvedBy: RelayActor =
    approver.person_id !== null ? { kind: 'person', id: approver.person_id, name: approver.user_name } : { kind: 'token', id: approver.pat_id, name: approver.user_name };
  if (approver.person_id !== null && personTokenTtlSeconds !== undefined) {
    const minted = await mintPersonToken(pool, {
      orgId: approver.org_id,
      person: { id: approver.person_id, login: approver.user_name },
      name: DEVICE_PAT_NAME,
      ttlSeconds: personTokenTtlSeconds,
      grantId: approver.grant_id,
      refresh: true,
    });
    const pat: CreatedPat = { id: minted.id, orgId: minted.orgId, user: minted.user, name: DEVICE_PAT_NAME, token: minted.token, createdAt: new Date().toISOString(), expiresAt: minted.expiresAt };
    return { kind: 'token', pat, approvedBy, ...(minted.refreshToken !== undefined ? { refreshToken: minted.refreshToken } : {}) };
  }
  return { kind: 'token', pat: await createPat(pool, approver.org_id, approver.user_name, DEVICE_PAT_NAME), approvedBy };
}
