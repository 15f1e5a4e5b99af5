// People and their tokens. A person is created (or updated) at each sign-in through a provider,
// keyed by (provider, subject); what the provider gave for later checks (its refresh and access
// tokens) is sealed with a key derived from that provider's client secret, so the database alone
// does not hold a usable provider credential. Tokens of a person are ordinary relay PATs with
// person_id set; a CLI token also has a refresh token (svcrt_…), kept as SHA-256 only.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { PAT_PREFIX, hashPat } from '../pats/store.ts';

export const REFRESH_PREFIX = 'svcrt_';
const ACTOR_PATTERN = /^[\x21-\x7e](?:[\x20-\x7e]{0,98}[\x21-\x7e])?$/;

/** What a provider says about a person at sign-in or refresh. */
export interface ProviderPerson {
  subject: string;
  /** Candidates for the actor name, best first (preferred_username, email, …). */
  logins: Array<string | undefined>;
  displayName?: string | undefined;
  email?: string | undefined;
  groups: string[];
}

/** What the relay keeps of a provider's tokens (sealed). */
export interface ProviderTokens {
  refreshToken?: string | undefined;
  accessToken?: string | undefined;
}

export interface Person {
  id: string;
  provider: string;
  subject: string;
  login: string;
  displayName: string;
  email: string | null;
  groups: string[];
}

/** The actor name of a person: the first candidate that is a valid user name, else `person-<id>`. */
export function actorName(candidates: Array<string | undefined>, subject: string): string {
  for (const c of candidates) if (typeof c === 'string' && ACTOR_PATTERN.test(c)) return c;
  return `person-${createHash('sha256').update(subject).digest('hex').slice(0, 12)}`;
}

function clean(value: string | undefined, max: number): string | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.replace(/[\x00-\x1f\x7f]/g, '').trim().slice(0, max);
  return text === '' ? undefined : text;
}

/** Groups as stored: strings of 1-200 characters without control characters, at most 500. */
export function cleanGroups(groups: unknown): string[] {
  if (!Array.isArray(groups)) return [];
  const out = new Set<string>();
  for (const g of groups) {
    const text = typeof g === 'string' ? clean(g, 200) : undefined;
    if (text !== undefined) out.add(text);
    if (out.size >= 500) break;
  }
  return [...out].sort();
}

const PersonRow = Type.Object({
  id: Type.String(),
  provider: Type.String(),
  subject: Type.String(),
  login: Type.String(),
  display_name: Type.String(),
  email: Type.Union([Type.String(), Type.Null()]),
  groups: Type.Array(Type.String()),
});

function personOf(row: Static<typeof PersonRow>): Person {
  return { id: row.id, provider: row.provider, subject: row.subject, login: row.login, displayName: row.display_name, email: row.email, groups: row.groups };
}

/**
 * Records a successful sign-in or refresh: the person is created or updated (name, groups) and
 * enabled again (the provider just vouched for them).
 */
export async function upsertPerson(db: CommonQueryMethods, provider: string, seen: ProviderPerson): Promise<Person> {
  const login = actorName(seen.logins, seen.subject);
  const displayName = clean(seen.displayName, 200) ?? login;
  const email = clean(seen.email, 320) ?? null;
  const groups = cleanGroups(seen.groups);
  const row = await db.one(sqlTyped(PersonRow)`
    insert into relay_people (id, provider, subject, login, display_name, email, groups)
    values (${randomUUID()}, ${provider}, ${seen.subject}, ${login}, ${displayName}, ${email}, ${sql.array(groups, 'text')})
    on conflict (provider, subject) do update set login = excluded.login, display_name = excluded.display_name, email = excluded.email,
      groups = excluded.groups, disabled_at = null, last_seen_at = now()
    returning id::text as id, provider, subject, login, display_name, email, groups`);
  return personOf(row);
}

export async function personById(db: DatabasePool, id: string): Promise<Person | undefined> {
  const row = await db.maybeOne(sqlTyped(PersonRow)`
    select id::text as id, provider, subject, login, display_name, email, groups from relay_people where id = ${id}`);
  return row === null ? undefined : personOf(row);
}

/** Marks a person disabled: every token and session of theirs stops at once. */
export async function disablePerson(db: CommonQueryMethods, id: string): Promise<void> {
  await db.query(sql.unsafe`update relay_people set disabled_at = coalesce(disabled_at, now()) where id = ${id}`);
}

export interface PeopleFilter {
  provider?: string;
}

/** Every person (svc-admin relay people list). */
export async function listPeople(db: DatabasePool): Promise<Array<Person & { disabled: boolean }>> {
  const rows = await db.any(sqlTyped(Type.Object({ ...PersonRow.properties, disabled: Type.Boolean() }))`
    select id::text as id, provider, subject, login, display_name, email, groups, disabled_at is not null as disabled from relay_people order by provider, login, id`);
  return rows.map((r) => ({ ...personOf(r), disabled: r.disabled }));
}

// ── sealed provider grants ────────────────────────────────────────────────────────────────────

function grantKey(clientSecret: string, provider: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(clientSecret, 'utf8'), Buffer.from('svc-relay-provider-grant', 'utf8'), Buffer.from(provider, 'utf8'), 32));
}

export function sealTokens(clientSecret: string, provider: string, tokens: ProviderTokens): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', grantKey(clientSecret, provider), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(tokens), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The sealed tokens, or undefined when the key no longer opens them (the client secret changed). */
export function openTokens(clientSecret: string, provider: string, sealed: Buffer): ProviderTokens | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', grantKey(clientSecret, provider), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    const text = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
    const parsed = JSON.parse(text) as ProviderTokens;
    return { refreshToken: parsed.refreshToken, accessToken: parsed.accessToken };
  } catch {
    return undefined;
  }
}

export async function createGrant(db: DatabasePool, personId: string, provider: string, sealed: Buffer): Promise<string> {
  const id = randomUUID();
  await db.query(sql.unsafe`insert into relay_provider_grants (id, person_id, provider, sealed) values (${id}, ${personId}, ${provider}, ${sql.binary(sealed)})`);
  return id;
}

// ── tokens of a person ────────────────────────────────────────────────────────────────────────

export interface PersonToken {
  id: string;
  orgId: string;
  user: string;
  token: string;
  refreshToken?: string;
  expiresAt: string;
}

/**
 * Mints a token of a person in an org, living `ttlSeconds`; with `refresh`, also a refresh token
 * (a CLI login), without (a browser session's token).
 */
export async function mintPersonToken(
  db: DatabasePool,
  options: { orgId: string; person: { id: string; login: string }; name: string; ttlSeconds: number; grantId: string | null; refresh: boolean },
): Promise<PersonToken> {
  const id = randomUUID();
  const token = PAT_PREFIX + randomBytes(32).toString('base64url');
  const refreshToken = options.refresh ? REFRESH_PREFIX + randomBytes(32).toString('base64url') : undefined;
  const row = await db.one(sqlTyped(Type.Object({ expires_at: Type.Number() }))`
    insert into relay_pats (id, org_id, user_name, name, token_sha256, expires_at, person_id, grant_id, refresh_sha256)
    values (${id}, ${options.orgId}, ${options.person.login}, ${options.name}, ${sql.binary(hashPat(token))},
      now() + make_interval(secs => ${options.ttlSeconds}), ${options.person.id}, ${options.grantId},
      ${refreshToken === undefined ? null : sql.binary(hashPat(refreshToken))})
    returning expires_at`);
  return { id, orgId: options.orgId, user: options.person.login, token, ...(refreshToken !== undefined ? { refreshToken } : {}), expiresAt: new Date(row.expires_at).toISOString() };
}
