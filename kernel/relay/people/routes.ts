// The admin API of roles (docs/roles.md), each authorised by authorize() as action `org.roles`
// (the admin role of the org):
//   GET    /v1/orgs/:orgId/people                       → 200 { people: OrgMember[] }  who holds what, and why
//   PUT    /v1/orgs/:orgId/people/:person/roles/:role   → 200 { personId, role, changed }  grant
//   DELETE /v1/orgs/:orgId/people/:person/roles/:role   → 200 { personId, role, changed }  take back a grant
// `:person` is a person id or `<provider>:<login>`. A role that comes from a group is changed at
// the provider (or in the group mapping), not here.
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { authorize } from '../dashboard/auth.ts';
import { ORG_ID_PATTERN } from '../orgs.ts';
import { grant, orgMembers, revoke } from './admin.ts';
import { recordRelayAudit } from '../audit/record.ts';
import { actorOf } from '../audit/caller.ts';

async function admin(db: DatabasePool, request: FastifyRequest) {
  const { orgId } = request.params as { orgId: string };
  const caller = await authorize(db, request, ORG_ID_PATTERN.test(orgId) ? orgId : `\u0000${orgId}`);
  return { caller, orgId };
}

export function registerPeopleRoutes(app: SvcHttpServer, options: { db: DatabasePool; logger: Logger }): void {
  const { db, logger } = options;

  app.get('/v1/orgs/:orgId/people', async (request, reply) => {
    const { orgId } = await admin(db, request);
    return reply.header('cache-control', 'no-store').send({ people: await orgMembers(db, orgId) });
  });

  app.put('/v1/orgs/:orgId/people/:person/roles/:role', async (request) => {
    const { caller, orgId } = await admin(db, request);
    const { person, role } = request.params as { person: string; role: string };
    const result = await grant(db, orgId, person, role, caller.actor);
    if (result.changed) await recordRelayAudit(db, { orgId, actor: actorOf(caller), action: 'role.grant', target: `person:${result.personId}`, outcome: 'ok', detail: `role ${result.role}`, person: result.personId });
    logger.info({ orgId, personId: result.personId, role: result.role, changed: result.changed, by: caller.actor }, 'role granted');
    return result;
  });

  app.delete('/v1/orgs/:orgId/people/:person/roles/:role', async (request) => {
    const { caller, orgId } = await admin(db, request);
    const { person, role } = request.params as { person: string; role: string };
    const result = await revoke(db, orgId, person, role);
    if (result.changed) await recordRelayAudit(db, { orgId, actor: actorOf(caller), action: 'role.revoke', target: `person:${result.personId}`, outcome: 'ok', detail: `role ${result.role}`, person: result.personId });
    logger.info({ orgId, personId: result.personId, role: result.role, changed: result.changed, by: caller.actor }, 'role grant taken back');
    return result;
  });
}
