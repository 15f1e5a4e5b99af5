// Token refresh (docs/login.md, "Lifetime and refresh"):
//   POST /v1/token/refresh { refresh_token }  → 200 { access_token, refresh_token, expires_at, … }
// A token `svc login` got through a provider lives `tokenTtlSeconds`; the CLI trades its refresh
// token for a new pair. Before that, the relay asks the provider about the person again
// (refresh token grant and userinfo; GitHub: its API): a person removed or disabled there, or an
// authorization revoked, fails the refresh, and the person is marked disabled here, which ends
// every token and session of theirs at once. Both values are replaced (the old pair stops), so a
// stolen refresh token works once at most. A provider that does not answer leaves the pair as
// it was (503): the CLI can retry.
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Type } from 'typebox';
import { AuthenticationError, InputError } from '../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { PAT_PREFIX, hashPat } from '../pats/store.ts';
import { REFRESH_PREFIX, disablePerson, openTokens, sealTokens, upsertPerson } from '../people/store.ts';
import type { Sso } from './index.ts';
import { recordRelayAudit } from '../audit/record.ts';

const RefreshRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  person_id: Type.String(),
  grant_id: Type.Union([Type.String(), Type.Null()]),
  provider: Type.String(),
  subject: Type.String(),
  login: Type.String(),
  sealed: Type.Union([Type.Any(), Type.Null()]),
});

export interface RefreshedToken {
  id: string;
  orgId: string;
  user: string;
  token: string;
  refreshToken: string;
  expiresAt: string;
}

function refreshTokenOf(request: FastifyRequest): string {
  const body = request.body as Record<string, unknown> | undefined;
  const value = typeof body === 'object' && body !== null ? body['refresh_token'] : undefined;
  const extra = typeof body === 'object' && body !== null ? Object.keys(body).filter((k) => k !== 'refresh_token' && k !== 'grant_type') : [];
  if (extra.length > 0) throw new InputError('SVC_ERR_HTTP_INVALID_BODY', `unknown field(s): ${extra.slice(0, 5).join(', ')}; send { "refresh_token": "svcrt_…" }`);
  if (typeof value !== 'string' || !value.startsWith(REFRESH_PREFIX) || value.length > 200) {
    throw new InputError('SVC_ERR_HTTP_INVALID_BODY', 'send { "refresh_token": "svcrt_…" } (the refresh token "svc login" stored)');
  }
  return value;
}

/** Checks the person at the provider and replaces the token pair; see the header. */
export async function refreshPersonToken(db: DatabasePool, sso: Sso, logger: Logger, refreshToken: string): Promise<RefreshedToken> {
  // A refusal is returned, not thrown, so the disabling commits with the transaction.
  const outcome = await db.transaction(async (tx): Promise<RefreshedToken | RefreshRefused> => {
    // The row lock makes two refreshes of one pair take turns: the second finds the pair replaced.
    const row = await tx.maybeOne(sqlTyped(RefreshRow)`
      select p.id::text as id, p.org_id, p.person_id::text as person_id, p.grant_id::text as grant_id, pp.provider, pp.subject, pp.login, null as sealed
      from relay_pats p join relay_people pp on pp.id = p.person_id
      where p.refresh_sha256 = ${sql.binary(hashPat(refreshToken))} and p.revoked_at is null and pp.disabled_at is null
      for update of p`);
    if (row === null) throw new AuthenticationError('SVC_ERR_RELAY_REFRESH_INVALID', 'the refresh token is not valid (used, revoked or mistyped); sign in again with "svc login"');
    // Tokens minted from one sign-in share its provider grant: their refreshes take turns on it, so
    // a provider that rotates refresh tokens never sees one used twice (it would revoke the grant).
    if (row.grant_id !== null) {
      const grant = await tx.maybeOne(sqlTyped(Type.Object({ sealed: Type.Any() }))`
        select sealed from relay_provider_grants where id = ${row.grant_id} and revoked_at is null for update`);
      row.sealed = grant === null ? null : grant.sealed;
    }
    const provider = sso.providers.get(row.provider);
    const refused = async (reason: string): Promise<RefreshRefused> => {
      await disablePerson(tx, row.person_id);
      await tx.query(sql.unsafe`update relay_pats set revoked_at = now() where id = ${row.id}`);
      // The audit trail, in this transaction; the person's directory entry goes out disabled.
      await recordRelayAudit(tx, { orgId: row.org_id, actor: { kind: 'system', id: '', name: 'relay' }, action: 'person.disable', target: `person:${row.person_id}`, outcome: 'ok', detail: `${row.login}: ${reason}`, person: row.person_id });
      if (row.grant_id !== null) await tx.query(sql.unsafe`update relay_provider_grants set revoked_at = now() where id = ${row.grant_id}`);
      logger.warn({ personId: row.person_id, login: row.login, provider: row.provider, reason }, 'refresh refused by the identity provider; person disabled');
      return new RefreshRefused(row.provider, row.login, reason);
    };
    if (provider === undefined) return refused(`the provider "${row.provider}" is no longer configured at this relay`);
    const held = row.sealed === null ? undefined : openTokens(sso.secretOf(row.provider), row.provider, Buffer.from(row.sealed as Uint8Array));
    if (held === undefined) return refused('the relay holds no usable grant of the provider for this token (its client secret changed, or the grant was revoked)');
    const answer = await provider.recheck(held, row.subject);
    if (!answer.ok) return refused(answer.reason);
    await upsertPerson(tx, row.provider, answer.person);
    if (row.grant_id !== null) {
      await tx.query(sql.unsafe`update relay_provider_grants set sealed = ${sql.binary(sealTokens(sso.secretOf(row.provider), row.provider, answer.tokens))}, checked_at = now() where id = ${row.grant_id}`);
    }
    const token = PAT_PREFIX + randomBytes(32).toString('base64url');
    const refresh = REFRESH_PREFIX + randomBytes(32).toString('base64url');
    const updated = await tx.one(sqlTyped(Type.Object({ expires_at: Type.Number(), user_name: Type.String() }))`
      update relay_pats set token_sha256 = ${sql.binary(hashPat(token))}, refresh_sha256 = ${sql.binary(hashPat(refresh))},
        expires_at = now() + make_interval(secs => ${sso.tokenTtlSeconds})
      where id = ${row.id} returning expires_at, user_name`);
    logger.info({ personId: row.person_id, patId: row.id, provider: row.provider }, 'person token refreshed');
    return { id: row.id, orgId: row.org_id, user: updated.user_name, token, refreshToken: refresh, expiresAt: new Date(updated.expires_at).toISOString() };
  });
  if (outcome instanceof RefreshRefused) throw outcome;
  return outcome;
}

/** The provider refused: the transaction still commits the disabling, so it is thrown after. */
class RefreshRefused extends Error {
  readonly provider: string;
  readonly person: string;
  readonly reason: string;
  constructor(provider: string, person: string, reason: string) {
    super(reason);
    this.provider = provider;
    this.person = person;
    this.reason = reason;
  }
}

export function registerRefreshRoute(scope: SvcHttpServer, options: { db: DatabasePool; logger: Logger; sso: Sso | undefined }): void {
  const { db, logger, sso } = options;
  scope.post('/v1/token/refresh', async (request, reply) => {
    const refreshToken = refreshTokenOf(request);
    if (sso === undefined) throw new AuthenticationError('SVC_ERR_RELAY_REFRESH_INVALID', 'this relay has no sign-in provider, so no token can be refreshed; sign in again with "svc login"');
    let result: RefreshedToken;
    try {
      result = await refreshPersonToken(db, sso, logger, refreshToken);
    } catch (error) {
      if (!(error instanceof RefreshRefused)) throw error;
      throw new AuthenticationError(
        'SVC_ERR_RELAY_REFRESH_REFUSED',
        `the identity provider ${error.provider} no longer accepts ${error.person}: ${error.reason}; the token is revoked; sign in again with "svc login" once your account is active`,
      );
    }
    return reply
      .header('cache-control', 'no-store')
      .type('application/json; charset=utf-8')
      .send({ access_token: result.token, refresh_token: result.refreshToken, token_type: 'bearer', org: result.orgId, user: result.user, token_id: result.id, expires_at: result.expiresAt });
  });
}
