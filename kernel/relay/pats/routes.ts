// A user's own personal access tokens (`svc pat create|list|revoke`), authorised by the caller's
// token (or browser session, CSRF-checked for changes):
//   GET    /v1/pats        → 200 { tokens: PatView[] }   the caller's tokens (org and user), no values
//   POST   /v1/pats        → 201 PatCreated               { name?, expiresInDays? }; value shown once
//   DELETE /v1/pats/:id    → 200 { id, alreadyRevoked }   only the caller's own; another's is 404
// The org's platform token has no user and owns no tokens: 403. Another user's token id answers
// 404 exactly like an unknown id, so ids of others are not confirmed.
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { PatCreateBody, type PatCreated, type PatList, type PatRevoked } from '../../../schemas/http/pats.ts';
import { NotAllowedError } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { identify, type Caller } from '../dashboard/auth.ts';
import { createPat, listPats, revokePat } from './store.ts';
import { recordRelayAudit } from '../audit/record.ts';
import { actorOf } from '../audit/caller.ts';
import { expandRoles } from '../people/access.ts';
import { isRole, type Role } from '../people/roles.ts';

const callers = new WeakMap<FastifyRequest, Caller & { kind: 'pat' }>();

function callerOf(request: FastifyRequest): Caller & { kind: 'pat' } {
  const caller = callers.get(request);
  if (caller === undefined) throw new Error('the caller was not identified before the handler');
  return caller;
}

/** A token never mints a wider one: a scoped caller's new token stays within its scopes. */
function scopesForNewToken(caller: Caller, wanted: readonly string[] | undefined): readonly string[] | undefined {
  if (caller.scopes === undefined) return wanted;
  if (wanted === undefined) return caller.scopes;
  const allowed = new Set(expandRoles(caller.scopes.filter(isRole)));
  const wider = wanted.filter((s) => !allowed.has(s as Role));
  if (wider.length > 0) throw new NotAllowedError('SVC_ERR_RELAY_ROLE_REQUIRED', `this token is narrowed to ${caller.scopes.join(', ')}; it cannot mint a token with ${wider.join(', ')}`);
  return wanted;
}

export function registerPatRoutes(scope: SvcHttpServer, options: { db: DatabasePool; logger: Logger }): void {
  const { db, logger } = options;
  // Runs once the body is parsed (a form's CSRF field is there) and before it is validated: a
  // caller without a token hears 401 whatever it sent.
  const preValidation = async (request: FastifyRequest): Promise<void> => {
    const caller = await identify(db, request);
    if (caller.kind !== 'pat') {
      throw new NotAllowedError('SVC_ERR_RELAY_PATS_NEED_USER', 'personal access tokens belong to a person: call with your own personal access token, not the org platform token');
    }
    callers.set(request, caller as Caller & { kind: 'pat' });
  };

  scope.get('/v1/pats', { preValidation }, async (request, reply): Promise<PatList> => {
    const caller = callerOf(request);
    const tokens = await listPats(db, caller.orgId, caller.actor);
    void reply.header('cache-control', 'no-store');
    return { tokens: tokens.map(({ id, name, createdAt, lastUsedAt, expiresAt, revokedAt }) => ({ id, name, createdAt, lastUsedAt, expiresAt, revokedAt })) };
  });

  scope.post('/v1/pats', { preValidation, schema: { body: PatCreateBody } }, async (request, reply): Promise<PatCreated> => {
    const caller = callerOf(request);
    const body = (request.body ?? {}) as PatCreateBody;
    const scopes = scopesForNewToken(caller, body.scopes);
    // A person's new token is the person's (their roles, not an operator token's), narrowed like the caller's.
    const pat = await createPat(db, caller.orgId, caller.actor, body.name ?? '', {
      ...(body.expiresInDays === undefined ? {} : { expiresInDays: body.expiresInDays }),
      ...(caller.person !== undefined ? { personId: caller.person.id } : {}),
      ...(scopes !== undefined ? { scopes } : {}),
    });
    logger.info({ orgId: pat.orgId, user: pat.user, patId: pat.id, expiresAt: pat.expiresAt, by: caller.patId }, 'personal access token created by its user');
    await recordRelayAudit(db, { orgId: pat.orgId, actor: actorOf(caller), action: 'token.create', target: `token:${pat.id}`, outcome: 'ok', detail: `${pat.name === '' ? 'a token' : pat.name}${pat.expiresAt === null ? '' : `, expires ${pat.expiresAt}`}` });
    void reply.code(201).header('cache-control', 'no-store');
    return { id: pat.id, name: pat.name, orgId: pat.orgId, user: pat.user, token: pat.token, createdAt: pat.createdAt, expiresAt: pat.expiresAt };
  });

  scope.delete('/v1/pats/:id', { preValidation }, async (request): Promise<PatRevoked> => {
    const caller = callerOf(request);
    const { id } = request.params as { id: string };
    const result = await revokePat(db, id, { orgId: caller.orgId, user: caller.actor });
    logger.info({ orgId: caller.orgId, user: caller.actor, patId: result.id, alreadyRevoked: result.alreadyRevoked }, 'personal access token revoked by its user');
    if (!result.alreadyRevoked) await recordRelayAudit(db, { orgId: caller.orgId, actor: actorOf(caller), action: 'token.revoke', target: `token:${result.id}`, outcome: 'ok' });
    return result;
  });
}
