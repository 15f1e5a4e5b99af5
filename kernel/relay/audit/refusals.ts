// A change the relay refused because the caller lacks the role (SVC_ERR_RELAY_ROLE_REQUIRED) is
// recorded in the audit trail as `refused`, under the action the caller tried, with the sentence
// that names the role it needs: the audit page then shows who tried what they may not do.
import type { FastifyRequest } from 'fastify';
import type { DatabasePool } from '../../services/db/index.ts';
import { messageOf } from '../../../core/errors.ts';
import { actorOf, type AuditCaller } from './caller.ts';
import { recordRelayAudit } from './record.ts';

/** The audit action of a refused route: `run.approve`, `run.reject`, `run.rerun`, … */
function actionOf(access: string, request: FastifyRequest): string {
  const url = request.routeOptions.url ?? '';
  const last = url.split('/').pop() ?? '';
  switch (access) {
    case 'runs.approve':
      return last === 'reject' ? 'run.reject' : 'run.approve';
    case 'runs.rerun':
      return 'run.rerun';
    case 'runs.cancel':
      return 'run.cancel';
    case 'runs.remote':
      return 'run.remote';
    case 'org.secrets':
      return 'secret.set';
    case 'org.roles':
      return request.method === 'DELETE' ? 'role.revoke' : 'role.grant';
    default:
      return `${access.replace(/[^a-z0-9_.-]/g, '_')}.denied`.replace(/^([^.]*)$/, 'access.$1');
  }
}

export async function auditRoleRefusal(db: DatabasePool, caller: AuditCaller, access: string, request: FastifyRequest, error: unknown): Promise<void> {
  const params = request.params as Record<string, string | undefined>;
  const target = params['runId'] !== undefined ? `run:${params['runId']}` : params['personId'] !== undefined ? `person:${params['personId']}` : '';
  await recordRelayAudit(db, { orgId: caller.orgId, actor: actorOf(caller), action: actionOf(access, request), target, outcome: 'refused', detail: messageOf(error) });
}
