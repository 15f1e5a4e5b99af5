// The audit side of the relay link (docs/audit.md):
// - every change the relay asks for (re-run, cancel, approve/reject, remote run, secret set) is
//   recorded once here, after it was answered, with the relay's `by` (person or token) as actor;
// - the relay's own records (sign-in, sign-out, tokens, roles) arrive in batches from its outbox
//   (`audit.record.request`), stored by their relay-chosen ids so a batch sent twice is stored once;
// - the dashboard's audit page reads the org's records (`audit.list.request`);
// - the relay's people directory arrives as `people.sync.request` (run-control/people.ts).
import type { Logger } from 'pino';
import type { DashboardError, OrchestratorToRelay, RelayActor, RelayToOrchestrator } from '../../../schemas/wire/relay.ts';
import type { AuditActor, AuditOutcome } from '../../../schemas/http/audit.ts';
import { isSvcError } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { STATUS_BY_KIND } from '../../services/http/index.ts';
import { syncPeople } from '../run-control/people.ts';
import { listAudit, recordAudit } from './store.ts';

type Changing = Extract<RelayToOrchestrator, { type: 'run.rerun.request' | 'run.cancel.request' | 'run.approve.request' | 'remote.run.request' | 'org.secret.set.request' }>;
type PeopleRequest = Extract<RelayToOrchestrator, { type: 'audit.record.request' | 'audit.list.request' | 'people.sync.request' }>;
type PeopleResponse = Extract<OrchestratorToRelay, { type: 'audit.record.response' | 'audit.list.response' | 'people.sync.response' }>;

const CHANGING = new Set(['run.rerun.request', 'run.cancel.request', 'run.approve.request', 'remote.run.request', 'org.secret.set.request']);
const PEOPLE_RESPONSE = {
  'audit.record.request': 'audit.record.response',
  'audit.list.request': 'audit.list.response',
  'people.sync.request': 'people.sync.response',
} as const;

export function isChangingRequest(message: RelayToOrchestrator): message is Changing {
  return CHANGING.has(message.type);
}

export function isPeopleRequest(message: RelayToOrchestrator): message is PeopleRequest {
  return message.type in PEOPLE_RESPONSE;
}

/** The relay's `by`; an older relay sends only a name, which was always a token's user. */
function actorOf(by: RelayActor | undefined, name: string): AuditActor {
  if (by !== undefined) return by;
  return { kind: 'token', id: '', name: name.trim() === '' ? 'unknown' : name };
}

/** A refusal (not allowed, not found, conflict, too soon) or a failure, from the relayed error. */
function outcomeOfError(error: DashboardError): AuditOutcome {
  return error.status === 403 || error.status === 409 || error.status === 429 || error.status === 400 || error.status === 404 ? 'refused' : 'failed';
}

interface Described {
  actorName: string;
  action: string;
  target: string;
  detail: string;
}

function describe(request: Changing, response: OrchestratorToRelay): Described {
  const r = response as { error?: DashboardError; newRunId?: string; cancelledJobs?: number; result?: unknown };
  switch (request.type) {
    case 'run.rerun.request':
      return { actorName: request.triggeredBy, action: 'run.rerun', target: `run:${request.runId}`, detail: r.newRunId === undefined ? '' : `new run ${r.newRunId}` };
    case 'run.cancel.request':
      return { actorName: request.cancelledBy, action: 'run.cancel', target: `run:${request.runId}`, detail: r.cancelledJobs === undefined ? '' : `${r.cancelledJobs} job(s) cancelled` };
    case 'run.approve.request': {
      const result = r.result as { message?: string } | undefined;
      const job = request.job === undefined ? '' : ` (job ${request.job})`;
      return { actorName: request.actor, action: `run.${request.decision}`, target: `run:${request.runId}`, detail: `${result?.message ?? ''}${job}`.trim() };
    }
    case 'remote.run.request': {
      const result = r.result as { runs?: Array<{ runId?: string }> } | undefined;
      const ids = (result?.runs ?? []).map((x) => x.runId).filter((x): x is string => typeof x === 'string');
      return { actorName: request.actor, action: 'run.remote', target: `repository:${request.body.repository ?? ''}`, detail: ids.length === 0 ? '' : `runs ${ids.join(', ')}` };
    }
    case 'org.secret.set.request':
      return { actorName: request.actor, action: 'secret.set', target: `secret:${request.context}/${request.key}`, detail: '' };
  }
}

/**
 * Records one relayed change after it was answered. An approval none of whose holds counted it is
 * a refusal of note (the reason says which team or role it needed).
 */
export async function auditRelayedChange(pool: DatabasePool, request: Changing, response: OrchestratorToRelay): Promise<void> {
  const d = describe(request, response);
  const error = (response as { error?: DashboardError }).error;
  let outcome: AuditOutcome = error === undefined ? 'ok' : outcomeOfError(error);
  let detail = error === undefined ? d.detail : `${error.code}: ${error.message}`;
  if (error === undefined && request.type === 'run.approve.request') {
    const decisions = ((response as { result?: { decisions?: Array<{ counted: boolean; ignoredReason?: string }> } }).result?.decisions ?? []);
    if (decisions.length > 0 && decisions.every((x) => !x.counted)) {
      outcome = 'refused';
      detail = decisions[0]?.ignoredReason ?? detail;
    }
  }
  const via = request.type === 'run.approve.request' ? request.via : 'relay';
  await recordAudit(pool, { orgId: request.orgId ?? '', actor: actorOf(request.by, d.actorName), action: d.action, target: d.target, outcome, detail, via });
}

function errorOf(error: unknown, logger: Logger, request: PeopleRequest): DashboardError {
  if (isSvcError(error) && error.kind !== 'internal') return { code: error.code, message: error.message.slice(0, 2000), status: STATUS_BY_KIND[error.kind] };
  logger.error({ err: error, type: request.type }, 'relay people request failed');
  return { code: 'SVC_ERR_INTERNAL', message: `the orchestrator could not answer ${request.type} (request ${request.requestId}); see its log`, status: 500 };
}

/** Answers one audit or directory request; never rejects. */
export async function answerPeopleRequest(deps: { pool: DatabasePool; logger: Logger }, request: PeopleRequest): Promise<PeopleResponse> {
  const base = { requestId: request.requestId };
  try {
    switch (request.type) {
      case 'audit.record.request': {
        const { orgId } = request;
        await deps.pool.transaction(async (tx) => {
          for (const rec of request.records) {
            await recordAudit(tx, { id: rec.id, at: rec.at, orgId, actor: rec.actor, action: rec.action, target: rec.target, outcome: rec.outcome, detail: rec.detail, via: 'relay' });
          }
        });
        return { type: 'audit.record.response', ...base, stored: request.records.length };
      }
      case 'audit.list.request': {
        const { orgId, actor, action, outcome, limit } = request;
        const events = await listAudit(deps.pool, { org: orgId, limit, ...(actor === undefined ? {} : { actor }), ...(action === undefined ? {} : { action }), ...(outcome === undefined ? {} : { outcome }) });
        return { type: 'audit.list.response', ...base, events };
      }
      case 'people.sync.request':
        return { type: 'people.sync.response', ...base, stored: await deps.pool.transaction((tx) => syncPeople(tx, request.orgId, request.people)) };
    }
  } catch (error) {
    return { type: PEOPLE_RESPONSE[request.type], ...base, error: errorOf(error, deps.logger, request) } as PeopleResponse;
  }
}
