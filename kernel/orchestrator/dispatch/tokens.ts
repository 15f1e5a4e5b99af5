// Agent tokens (`agent_tokens`): minted by `svc-admin agent-token create`, shown once, stored as
// SHA-256 hashes. An agent presents one as `Authorization: Bearer <token>` when `agentAuth` is
// `token`.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { InputError, NotFoundError } from '../../../core/errors.ts';

/** Prefix that makes a leaked agent token easy to recognise (secret scanners, logs). */
export const AGENT_TOKEN_PREFIX = 'svcat_';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function hashAgentToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const TokenRow = Type.Object({
  id: Type.String(),
  description: Type.String(),
  created_at: Type.Number(),
  expires_at: Type.Union([Type.Number(), Type.Null()]),
  revoked_at: Type.Union([Type.Number(), Type.Null()]),
});
type TokenRow = Static<typeof TokenRow>;

export interface AgentTokenSummary {
  id: string;
  description: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  /** `active`, `expired` or `revoked`. */
  state: 'active' | 'expired' | 'revoked';
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function summary(row: TokenRow, now = Date.now()): AgentTokenSummary {
  const state = row.revoked_at !== null ? 'revoked' : row.expires_at !== null && row.expires_at <= now ? 'expired' : 'active';
  return { id: row.id, description: row.description, createdAt: iso(row.created_at) as string, expiresAt: iso(row.expires_at), revokedAt: iso(row.revoked_at), state };
}

export interface CreatedAgentToken extends AgentTokenSummary {
  /** The token itself: shown once, never stored. */
  token: string;
}

export async function createAgentToken(pool: DatabasePool, options: { description?: string; ttlMs?: number } = {}): Promise<CreatedAgentToken> {
  const description = options.description ?? '';
  if (description.length > 500) throw new InputError('SVC_ERR_AGENT_TOKEN_DESCRIPTION', 'a description is at most 500 characters');
  if (options.ttlMs !== undefined && (!Number.isSafeInteger(options.ttlMs) || options.ttlMs <= 0)) {
    throw new InputError('SVC_ERR_AGENT_TOKEN_TTL', 'a token lifetime must be a positive whole number of milliseconds');
  }
  const token = `${AGENT_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const id = randomUUID();
  const expires = options.ttlMs === undefined ? null : sql.timestamp(new Date(Date.now() + options.ttlMs));
  const row = await pool.one(sqlTyped(TokenRow)`
    INSERT INTO agent_tokens (id, token_hash, description, expires_at)
    VALUES (${id}, ${hashAgentToken(token)}, ${description}, ${expires})
    RETURNING id::text, description, created_at, expires_at, revoked_at`);
  return { ...summary(row), token };
}

export async function listAgentTokens(pool: DatabasePool): Promise<AgentTokenSummary[]> {
  const rows = await pool.any(sqlTyped(TokenRow)`
    SELECT id::text, description, created_at, expires_at, revoked_at FROM agent_tokens ORDER BY created_at, id`);
  const now = Date.now();
  return rows.map((row) => summary(row, now));
}

/** Revokes a token; agents using it are refused from their next connection on. Idempotent. */
export async function revokeAgentToken(pool: DatabasePool, id: string): Promise<AgentTokenSummary> {
  if (!UUID.test(id)) throw new InputError('SVC_ERR_AGENT_TOKEN_ID', `"${id.slice(0, 80)}" is not an agent token id (a UUID from "agent-token list")`);
  const row = await pool.maybeOne(sqlTyped(TokenRow)`
    UPDATE agent_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id}
    RETURNING id::text, description, created_at, expires_at, revoked_at`);
  if (row === null) throw new NotFoundError('SVC_ERR_AGENT_TOKEN_NOT_FOUND', `no agent token has id ${id}`);
  return summary(row);
}

export type TokenCheck = { ok: true; tokenHash: string; tokenId: string } | { ok: false; reason: string };

/** Whether `token` is a known, unrevoked, unexpired agent token. */
export async function checkAgentToken(pool: DatabasePool, token: string): Promise<TokenCheck> {
  const tokenHash = hashAgentToken(token);
  const row = await pool.maybeOne(sqlTyped(TokenRow)`
    SELECT id::text, description, created_at, expires_at, revoked_at FROM agent_tokens WHERE token_hash = ${tokenHash}`);
  if (row === null) return { ok: false, reason: 'unknown agent token' };
  if (row.revoked_at !== null) return { ok: false, reason: 'agent token revoked' };
  if (row.expires_at !== null && row.expires_at <= Date.now()) return { ok: false, reason: 'agent token expired' };
  return { ok: true, tokenHash, tokenId: row.id };
}
