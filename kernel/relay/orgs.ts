// Orgs and their platform tokens. A token is shown once, when it is minted; the relay keeps only
// its SHA-256, so a copy of the database cannot be replayed against the relay.
import { createHash, randomBytes } from 'node:crypto';
import { Type } from 'typebox';
import { ConflictError, InputError, NotFoundError } from '../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../services/db/index.ts';

/** Org ids travel in webhook URLs: one plain path segment. */
export const ORG_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** Platform tokens start with this so they are easy to spot in a leaked file or a log. */
export const PLATFORM_TOKEN_PREFIX = 'svcp_';

export interface ProvisionedOrg {
  orgId: string;
  /** Shown once; only its SHA-256 is stored. */
  token: string;
}

export interface OrgSummary {
  orgId: string;
  createdAt: string;
  tokenRotatedAt: string | null;
  sources: number;
  buffered: number;
}

export function checkOrgId(orgId: string): string {
  if (typeof orgId !== 'string' || !ORG_ID_PATTERN.test(orgId)) {
    throw new InputError(
      'SVC_ERR_RELAY_ORG_ID_INVALID',
      `org id "${String(orgId)}" is not valid: use 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit`,
    );
  }
  return orgId;
}

export function hashPlatformToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

function mintToken(): string {
  return PLATFORM_TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/** Creates an org and returns its platform token (the only time it is readable). */
export async function provisionOrg(pool: DatabasePool, orgId: string): Promise<ProvisionedOrg> {
  checkOrgId(orgId);
  const token = mintToken();
  const inserted = await pool.query(sql.unsafe`
    insert into relay_orgs (org_id, token_sha256) values (${orgId}, ${sql.binary(hashPlatformToken(token))})
    on conflict (org_id) do nothing`);
  if (inserted.rowCount === 0) {
    throw new ConflictError('SVC_ERR_RELAY_ORG_EXISTS', `org "${orgId}" already exists; use "relay org token rotate ${orgId}" for a new token`);
  }
  return { orgId, token };
}

/** Replaces an org's token; the old one stops working at once (connected sockets stay until they drop). */
export async function rotateOrgToken(pool: DatabasePool, orgId: string): Promise<ProvisionedOrg> {
  checkOrgId(orgId);
  const token = mintToken();
  const updated = await pool.query(sql.unsafe`
    update relay_orgs set token_sha256 = ${sql.binary(hashPlatformToken(token))}, token_rotated_at = now()
    where org_id = ${orgId}`);
  if (updated.rowCount === 0) throw new NotFoundError('SVC_ERR_RELAY_ORG_NOT_FOUND', `org "${orgId}" does not exist; create it with "relay org create ${orgId}"`);
  return { orgId, token };
}

const OrgIdRow = Type.Object({ org_id: Type.String() });

/** The org a platform token belongs to, or undefined. */
export async function orgForToken(pool: DatabasePool, token: string): Promise<string | undefined> {
  if (typeof token !== 'string' || token.length === 0 || token.length > 512) return undefined;
  const row = await pool.maybeOne(sqlTyped(OrgIdRow)`select org_id from relay_orgs where token_sha256 = ${sql.binary(hashPlatformToken(token))}`);
  return row?.org_id;
}

const OrgSummaryRow = Type.Object({
  org_id: Type.String(),
  created_at: Type.Number(),
  token_rotated_at: Type.Union([Type.Number(), Type.Null()]),
  sources: Type.Number(),
  buffered: Type.Number(),
});

export async function listOrgs(pool: DatabasePool): Promise<OrgSummary[]> {
  const rows = await pool.any(sqlTyped(OrgSummaryRow)`
    select o.org_id, o.created_at, o.token_rotated_at,
      (select count(*)::int from relay_sources s where s.org_id = o.org_id) as sources,
      (select count(*)::int from relay_buffer b where b.org_id = o.org_id) as buffered
    from relay_orgs o order by o.org_id`);
  return rows.map((r) => ({
    orgId: r.org_id,
    createdAt: new Date(r.created_at).toISOString(),
    tokenRotatedAt: r.token_rotated_at === null ? null : new Date(r.token_rotated_at).toISOString(),
    sources: r.sources,
    buffered: r.buffered,
  }));
}
