// Org-level developer-CLI requests the relay forwards to this orchestrator (no run id):
//   org.secrets.list.request  → the secret contexts the org may use, with key names (never values)
//   org.secret.set.request    → one secret of a TEST context (allowLocalExecution: true, spec
//                               "Authentication" 7), sealed with the master key like `svc-admin secret set`
//   org.notifications.request → recent run-status deliveries of the org and its pending approvals
// Errors travel as `{ code, message, status }` like the run requests (relay-handlers.ts). The
// secret value is never logged: only the context, key and actor are.
import { Type } from 'typebox';
import type { Logger } from 'pino';
import type { OrchestratorToRelay, RelayToOrchestrator, DashboardError, OrgSecretContext, OrgNotifications } from '../../../../schemas/wire/relay.ts';
import { NotAllowedError, SvcError, isSvcError } from '../../../../core/errors.ts';
import type { MasterKeys } from '../../../services/crypto/master-keys.ts';
import { sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { STATUS_BY_KIND } from '../../../services/http/index.ts';
import { getContext, listContexts, listSecretKeys, setSecret, checkContextName, checkSecretKey, type SecretContext } from '../../secrets/index.ts';
// store.ts, not the subsystem index: that one reaches back here through service-refs.
import { listForgeStatus } from '../../forge-status/store.ts';

type OrgRequest = Extract<RelayToOrchestrator, { type: 'org.secrets.list.request' | 'org.secret.set.request' | 'org.notifications.request' }>;
type OrgResponse = Extract<OrchestratorToRelay, { type: 'org.secrets.list.response' | 'org.secret.set.response' | 'org.notifications.response' }>;

const RESPONSE_TYPE = {
  'org.secrets.list.request': 'org.secrets.list.response',
  'org.secret.set.request': 'org.secret.set.response',
  'org.notifications.request': 'org.notifications.response',
} as const;

export interface OrgRequestDeps {
  pool: DatabasePool;
  logger: Logger;
  masterKeys: MasterKeys;
}

export function isOrgRequest(message: RelayToOrchestrator): message is OrgRequest {
  return message.type in RESPONSE_TYPE;
}

/**
 * Contexts an org may see: the ones bound to it by org, and the ones not bound to any org (bound
 * by repository pattern, or not bound yet). A context bound only to other orgs is theirs.
 */
export function contextVisibleTo(context: Pick<SecretContext, 'orgs'>, orgId: string): boolean {
  return context.orgs.length === 0 || context.orgs.includes(orgId);
}

async function listOrgSecrets(pool: DatabasePool, orgId: string): Promise<OrgSecretContext[]> {
  const out: OrgSecretContext[] = [];
  for (const c of await listContexts(pool)) {
    if (!contextVisibleTo(c, orgId)) continue;
    const keys = await listSecretKeys(pool, c.name);
    out.push({ name: c.name, allowLocalExecution: c.allowLocalExecution, repositories: c.repositories, orgs: c.orgs, bound: c.bound, keys });
  }
  return out;
}

async function setTestSecret(deps: OrgRequestDeps, request: Extract<OrgRequest, { type: 'org.secret.set.request' }>): Promise<{ context: string; key: string; replaced: boolean }> {
  const { orgId, context: name, key, value, actor } = request;
  checkContextName(name);
  checkSecretKey(key);
  const context = await getContext(deps.pool, name);
  if (!contextVisibleTo(context, orgId)) throw new NotAllowedError('SVC_ERR_SECRETS_CONTEXT_NOT_TEST', `context "${name}" is not a context of org ${orgId}`);
  if (!context.allowLocalExecution) {
    throw new NotAllowedError(
      'SVC_ERR_SECRETS_CONTEXT_NOT_TEST',
      `context "${name}" is not a test context (allowLocalExecution is false): "svc secrets set" writes only test contexts; ask an operator ("svc-admin secret set ${name} ${key}")`,
    );
  }
  const current = deps.masterKeys.current;
  if (current === undefined) throw new SvcError('SVC_ERR_SECRETS_NO_MASTER_KEY', 'no master key (SVC_SECRET_KEY) is configured');
  const { replaced } = await setSecret(deps.pool, current, name, key, value);
  deps.logger.info({ orgId, context: name, key, actor, replaced }, 'test-context secret set through the Platform');
  return { context: name, key, replaced };
}

const HoldRow = Type.Object({
  id: Type.String(),
  run_id: Type.String(),
  workflow: Type.String(),
  repository: Type.String(),
  level: Type.String(),
  job: Type.Union([Type.String(), Type.Null()]),
  step_name: Type.Union([Type.String(), Type.Null()]),
  context: Type.Union([Type.String(), Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()]),
  expires_at: Type.Union([Type.Number(), Type.Null()]),
  created_at: Type.Number(),
});

async function orgNotifications(pool: DatabasePool, orgId: string, limit: number): Promise<OrgNotifications> {
  const deliveries = (await listForgeStatus(pool, { orgId, limit })).map((d) => ({
    id: d.id,
    runId: d.runId,
    target: d.target,
    providerKind: d.providerKind,
    runStatus: d.runStatus,
    state: d.state,
    conclusion: d.conclusion,
    status: d.status,
    attempts: d.attempts,
    lastError: d.lastError,
    lastStatusCode: d.lastStatusCode,
    deliveredAt: d.deliveredAt,
    createdAt: d.createdAt,
  }));
  const holds = await pool.any(sqlTyped(HoldRow)`
    SELECT h.id::text AS id, h.run_id::text AS run_id, r.workflow AS workflow, r.repository, h.level, j.name AS job, h.step_name, h.context, h.reason,
      h.expires_at, h.created_at
    FROM approval_holds h JOIN runs r ON r.id = h.run_id LEFT JOIN jobs j ON j.id = h.job_id
    WHERE h.org_id = ${orgId} AND h.status = 'pending'
    ORDER BY h.created_at DESC LIMIT ${limit}`);
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  const approvals = holds.map((h) => ({
    holdId: h.id,
    runId: h.run_id,
    workflow: h.workflow,
    repository: h.repository,
    level: h.level,
    job: h.job,
    step: h.step_name,
    context: h.context,
    reason: h.reason,
    expiresAt: iso(h.expires_at),
    createdAt: iso(h.created_at)!,
  }));
  return { deliveries, approvals };
}

function errorOf(error: unknown, logger: Logger, request: OrgRequest): DashboardError {
  if (isSvcError(error) && error.kind !== 'internal') return { code: error.code, message: error.message.slice(0, 2000), status: STATUS_BY_KIND[error.kind] };
  logger.error({ err: error, type: request.type, orgId: request.orgId }, 'org request failed');
  return { code: 'SVC_ERR_INTERNAL', message: `the orchestrator could not answer ${request.type} (request ${request.requestId}); see its log`, status: 500 };
}

/** Answers one org request; never rejects. */
export async function answerOrgRequest(deps: OrgRequestDeps, request: OrgRequest): Promise<OrgResponse> {
  const base = { requestId: request.requestId };
  try {
    switch (request.type) {
      case 'org.secrets.list.request':
        return { type: 'org.secrets.list.response', ...base, contexts: await listOrgSecrets(deps.pool, request.orgId) };
      case 'org.secret.set.request':
        return { type: 'org.secret.set.response', ...base, result: await setTestSecret(deps, request) };
      case 'org.notifications.request':
        return { type: 'org.notifications.response', ...base, notifications: await orgNotifications(deps.pool, request.orgId, request.limit) };
    }
  } catch (error) {
    return { type: RESPONSE_TYPE[request.type], ...base, error: errorOf(error, deps.logger, request) } as OrgResponse;
  }
}
