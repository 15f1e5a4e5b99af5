// Dashboard and CLI requests the relay forwards to this orchestrator (`run.rerun.request`,
// `run.cancel.request`, `run.approve.request`, `dashboard.payload`, `run.show.request`,
// `run.logs.request`, `run.artifacts.request`, `run.artifact.chunk.request`, and the dashboard's
// event log: `deliveries.list.request`, `delivery.payload.request`, its agents page: `fleet.request`,
// its run page: `run.detail.request`, `run.attestation.request`, `run.timeline.request`), each
// answered with exactly one response carrying the same `requestId`. Errors travel as
// `{ code, message, status }` (status = the HTTP status the relay answers with); internal errors
// are logged here and answered without their details.
import type { CommonQueryMethods } from 'slonik';
import type { Logger } from 'pino';
import type { OrchestratorToRelay, RelayToOrchestrator, DashboardError } from '../../../../schemas/wire/relay.ts';
import type { StorageExtensionPoint } from '../../../../core/extension-points/storage.ts';
import type { SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';
import type { DatabasePool } from '../../../services/db/index.ts';
import { InputError, RateLimitedError, UnavailableError, isSvcError } from '../../../../core/errors.ts';
import { STATUS_BY_KIND } from '../../../services/http/index.ts';
import type { OrchestratorContext } from '../../context.ts';
import type { IdentityService } from '../../identity/service.ts';
import { cancelRun } from '../../dispatch/cancel.ts';
import { decideRun } from '../../run-control/approvals.ts';
import { relayedPrincipals } from '../../run-control/people.ts';
import { answerPeopleRequest, auditRelayedChange, isChangingRequest, isPeopleRequest } from '../../audit/relayed.ts';
import { notifyJobsQueued } from '../../dispatch/notify.ts';
import type { CacheCheck } from '../../ingest/steps/caches.ts';
import type { OpenedSource } from '../../sources/store.ts';
import { listRunArtifacts, readArtifactChunk } from '../../artifacts/api.ts';
import { readFleet } from './fleet.ts';
import { readRunAttestationBundle, type AttestationTrust } from './attestations.ts';
import { loadRunDetail } from './detail.ts';
import { loadRunTimeline } from './timeline.ts';
import { readLogPage } from './logs.ts';
import { readDeliveryPayload, readRunPayload } from './payload.ts';
import { listDeliveryRecords } from '../../ingest/record/queries.ts';
import { rerunRun, type RerunDeps } from './rerun.ts';
import { findRun, loadRunView } from './show.ts';
import { answerOrgRequest, isOrgRequest } from './org-requests.ts';
import { answerTestsRequest } from '../../test-results/relayed.ts';
import { answerLogSearchRequest } from '../../log-search/relayed.ts';
import { createRemoteRuns, createUpload, type RemoteRunDeps } from './remote.ts';

/** A response must fit the relay's 4 MiB frame limit with room to spare. */
export const MAX_RESPONSE_BYTES = 3.5 * 1024 * 1024;

type DashboardRequest = Extract<
  RelayToOrchestrator,
  {
    type:
      | 'run.rerun.request'
      | 'run.cancel.request'
      | 'run.approve.request'
      | 'dashboard.payload'
      | 'run.show.request'
      | 'run.logs.request'
      | 'run.artifacts.request'
      | 'run.artifact.chunk.request'
      | 'remote.upload.request'
      | 'remote.run.request'
      | 'deliveries.list.request'
      | 'delivery.payload.request'
      | 'fleet.request'
      | 'run.detail.request'
      | 'run.attestation.request'
      | 'run.timeline.request';
  }
>;
type DashboardResponse = Extract<
  OrchestratorToRelay,
  {
    type:
      | 'run.rerun.response'
      | 'run.cancel.response'
      | 'run.approve.response'
      | 'dashboard.payload.response'
      | 'run.show.response'
      | 'run.logs.response'
      | 'run.artifacts.response'
      | 'run.artifact.chunk.response'
      | 'remote.upload.response'
      | 'remote.run.response'
      | 'deliveries.list.response'
      | 'delivery.payload.response'
      | 'fleet.response'
      | 'run.detail.response'
      | 'run.attestation.response'
      | 'run.timeline.response';
  }
>;

/** What re-run needs from the ingest pipeline (an IngestPipeline fits). */
export interface IngestParts {
  sources: { getById(id: string): Promise<OpenedSource | null> };
  providers: { resolve(routingKey: string): SourceProviderExtensionPoint | undefined };
  caches: { check(orgId: string, contentHash: string, lockfileHash: string | null): Promise<CacheCheck> };
}

export interface RunsApiDeps {
  pool: DatabasePool;
  logger: Logger;
  storage(): StorageExtensionPoint | undefined;
  rerun: Omit<RerunDeps, 'pool'>;
  cancel(runId: string, cancelledBy: string): Promise<{ cancelledJobs: number }>;
  /** `svc run remote`; absent: the requests are answered unavailable. */
  remote?: RemoteRunDeps;
  /** The keys attestations are verified against (the identity service's); absent: provenance signing is off. */
  attestationTrust?: AttestationTrust;
}

const NO_TRUST: AttestationTrust = async () => undefined;

const RESPONSE_TYPE = {
  'run.rerun.request': 'run.rerun.response',
  'run.cancel.request': 'run.cancel.response',
  'run.approve.request': 'run.approve.response',
  'dashboard.payload': 'dashboard.payload.response',
  'run.show.request': 'run.show.response',
  'run.logs.request': 'run.logs.response',
  'run.artifacts.request': 'run.artifacts.response',
  'run.artifact.chunk.request': 'run.artifact.chunk.response',
  'remote.upload.request': 'remote.upload.response',
  'remote.run.request': 'remote.run.response',
  'deliveries.list.request': 'deliveries.list.response',
  'delivery.payload.request': 'delivery.payload.response',
  'fleet.request': 'fleet.response',
  'run.detail.request': 'run.detail.response',
  'run.attestation.request': 'run.attestation.response',
  'run.timeline.request': 'run.timeline.response',
} as const;

export function isDashboardRequest(message: RelayToOrchestrator): message is DashboardRequest {
  return message.type in RESPONSE_TYPE;
}

export function errorFor(error: unknown, logger: Logger, request: DashboardRequest): DashboardError {
  if (isSvcError(error) && error.kind !== 'internal') {
    const retry = error instanceof RateLimitedError ? { retryAfterSeconds: Math.min(3600, Math.ceil(error.retryAfterSeconds)) } : {};
    return { code: error.code, message: error.message.slice(0, 2000), status: STATUS_BY_KIND[error.kind], ...retry };
  }
  logger.error({ err: error, type: request.type, ...('runId' in request ? { runId: request.runId } : {}) }, 'dashboard request failed');
  return { code: 'SVC_ERR_INTERNAL', message: `the orchestrator could not answer ${request.type} (request ${request.requestId}); see its log`, status: 500 };
}

function orgOf(request: DashboardRequest): string {
  if (request.orgId === undefined) throw new InputError('SVC_ERR_RUNS_ORG_MISSING', `${request.type} must name the org (orgId); upgrade the relay`);
  return request.orgId;
}

function remoteDeps(deps: RunsApiDeps): RemoteRunDeps {
  if (deps.remote === undefined) throw new UnavailableError('SVC_ERR_REMOTE_RUN_UNAVAILABLE', 'this orchestrator does not serve remote runs');
  return deps.remote;
}

/** Answers one request; never rejects. */
export async function answerDashboardRequest(deps: RunsApiDeps, request: DashboardRequest): Promise<DashboardResponse> {
  const base = { requestId: request.requestId };
  try {
    const orgId = orgOf(request);
    switch (request.type) {
      case 'remote.upload.request':
        return { type: 'remote.upload.response', ...base, upload: await createUpload(remoteDeps(deps), orgId) };
      case 'remote.run.request':
        return { type: 'remote.run.response', ...base, result: await createRemoteRuns(remoteDeps(deps), orgId, request.actor, request.body) };
      case 'run.show.request':
        return { type: 'run.show.response', ...base, run: await loadRunView(deps.pool, orgId, request.runId) };
      case 'run.logs.request':
        return { type: 'run.logs.response', ...base, page: await readLogPage(deps.pool, orgId, request.runId, request.after) };
      case 'run.artifacts.request':
        return { type: 'run.artifacts.response', ...base, artifacts: await listRunArtifacts(deps.pool, orgId, request.runId) };
      case 'run.artifact.chunk.request':
        return { type: 'run.artifact.chunk.response', ...base, chunk: await readArtifactChunk(deps.pool, deps.storage(), orgId, request.runId, request.name, request.offset) };
      case 'deliveries.list.request':
        return {
          type: 'deliveries.list.response',
          ...base,
          deliveries: await listDeliveryRecords(deps.pool, { orgId, ...(request.status !== undefined ? { status: request.status } : {}), limit: request.limit ?? 50 }),
        };
      case 'delivery.payload.request':
        return { type: 'delivery.payload.response', ...base, payload: (await readDeliveryPayload(deps.pool, deps.storage(), orgId, request.deliveryId)).payload };
      case 'fleet.request':
        return { type: 'fleet.response', ...base, ...(await readFleet(deps.pool, orgId)) };
      case 'run.detail.request':
        return { type: 'run.detail.response', ...base, detail: await loadRunDetail(deps.pool, deps.attestationTrust ?? NO_TRUST, orgId, request.runId) };
      case 'run.attestation.request':
        return { type: 'run.attestation.response', ...base, attestation: await readRunAttestationBundle(deps.pool, orgId, request.runId, request.attestationId) };
      case 'run.timeline.request':
        return { type: 'run.timeline.response', ...base, timeline: await loadRunTimeline(deps.pool, orgId, request.runId) };
      case 'dashboard.payload':
        return { type: 'dashboard.payload.response', ...base, payload: (await readRunPayload(deps.pool, deps.storage(), orgId, request.runId)).payload };
      case 'run.rerun.request':
        return { type: 'run.rerun.response', ...base, ...(await rerunRun({ ...deps.rerun, pool: deps.pool }, { orgId, runId: request.runId, triggeredBy: request.triggeredBy, ...(request.mode === 'failed' ? { mode: 'failed' as const } : {}) })) };
      case 'run.cancel.request': {
        // The org check first: cancelRun itself knows no orgs.
        const run = await findRun(deps.pool, orgId, request.runId);
        return { type: 'run.cancel.response', ...base, ...(await deps.cancel(run.id, request.cancelledBy)) };
      }
      case 'run.approve.request': {
        // decideRun checks the org itself (a run of another org is SVC_ERR_RUNS_NOT_FOUND). A
        // decision the hold's clauses do not allow is a result with `counted: false`, not an error.
        // Team and role clauses are decided on the person the relay names (its people store).
        const { runId, actor, decision, via, comment, job, principals } = request;
        const result = await decideRun(
          deps.pool,
          { orgId, runId, actor, decision, via, ...(comment !== undefined ? { comment } : {}), ...(job !== undefined ? { job } : {}) },
          relayedPrincipals(principals),
        );
        return { type: 'run.approve.response', ...base, result };
      }
    }
  } catch (error) {
    return { type: RESPONSE_TYPE[request.type], ...base, error: errorFor(error, deps.logger, request) } as DashboardResponse;
  }
}

/** The response as sent: one too large for a relay frame becomes a 413 error. */
export function encodeResponse(response: DashboardResponse): DashboardResponse {
  if (Buffer.byteLength(JSON.stringify(response)) <= MAX_RESPONSE_BYTES) return response;
  return {
    type: response.type,
    requestId: response.requestId,
    error: { code: 'SVC_ERR_RUNS_RESPONSE_TOO_LARGE', message: `the answer is larger than ${MAX_RESPONSE_BYTES} bytes and cannot be relayed; read it on the orchestrator`, status: 413 },
  } as DashboardResponse;
}

function storageOf(ctx: OrchestratorContext): StorageExtensionPoint | undefined {
  try {
    return ctx.host.select('storage');
  } catch {
    return undefined;
  }
}

export function runsApiDeps(ctx: OrchestratorContext, ingest: IngestParts, identity?: IdentityService): RunsApiDeps {
  return {
    ...(identity === undefined ? {} : { attestationTrust: () => identity.trust() }),
    pool: ctx.db,
    logger: ctx.logger.child({ subsystem: 'runs/api' }),
    storage: () => storageOf(ctx),
    rerun: {
      sourceById: (id) => ingest.sources.getById(id),
      providerFor: (routingKey) => ingest.providers.resolve(routingKey),
      checkCaches: (orgId, contentHash, lockfileHash) => ingest.caches.check(orgId, contentHash, lockfileHash),
      notifyJobsQueued: (tx: CommonQueryMethods) => notifyJobsQueued(tx),
    },
    cancel: (runId, cancelledBy) => cancelRun(ctx, runId, cancelledBy),
    remote: {
      pool: ctx.db,
      storage: () => storageOf(ctx),
      masterKeys: () => ctx.masterKeys,
      checkCaches: (orgId, contentHash, lockfileHash) => ingest.caches.check(orgId, contentHash, lockfileHash),
      notifyJobsQueued: (tx: CommonQueryMethods) => notifyJobsQueued(tx),
    },
  };
}

/** Answers one relayed message through `send` (the link's send); false when it is not a dashboard request. */
export type RelayRequestHandler = (message: RelayToOrchestrator, send: (message: OrchestratorToRelay) => boolean) => boolean;

/** What the relay link calls for each message; the runs subsystem provides it. */
export function relayRequestHandler(ctx: OrchestratorContext, ingest: IngestParts, identity?: IdentityService): RelayRequestHandler {
  const deps = runsApiDeps(ctx, ingest, identity);
  const orgDeps = { pool: ctx.db, logger: deps.logger, masterKeys: ctx.masterKeys };
  // A relayed change is recorded in the audit trail once, after it was answered (audit/relayed.ts).
  const audited = <R extends OrchestratorToRelay>(message: RelayToOrchestrator, response: R): Promise<R> =>
    !isChangingRequest(message)
      ? Promise.resolve(response)
      : auditRelayedChange(ctx.db, message, response).then(
          () => response,
          (error: unknown) => {
            deps.logger.error({ err: error, type: message.type }, 'the audit record of a relayed change could not be written');
            return response;
          },
        );
  return (message, send) => {
    if (isPeopleRequest(message)) {
      void answerPeopleRequest({ pool: ctx.db, logger: deps.logger }, message).then((response) => {
        if (!send(response)) deps.logger.info({ type: response.type, requestId: response.requestId }, 'relay link down before the answer could be sent; the relay has timed the request out');
      });
      return true;
    }
    if (isOrgRequest(message)) {
      void answerOrgRequest(orgDeps, message).then((response) => audited(message, response)).then((response) => {
        if (!send(response)) deps.logger.info({ type: response.type, requestId: response.requestId }, 'relay link down before the answer could be sent; the relay has timed the request out');
      });
      return true;
    }
    if (message.type === 'tests.request') {
      void answerTestsRequest(orgDeps, message).then((response) => {
        if (!send(response)) deps.logger.info({ type: response.type, requestId: response.requestId }, 'relay link down before the answer could be sent; the relay has timed the request out');
      });
      return true;
    }
    if (message.type === 'logs.search.request') {
      void answerLogSearchRequest(orgDeps, message).then((response) => {
        if (!send(response)) deps.logger.info({ type: response.type, requestId: response.requestId }, 'relay link down before the answer could be sent; the relay has timed the request out');
      });
      return true;
    }
    if (!isDashboardRequest(message)) return false;
    void answerDashboardRequest(deps, message).then((response) => audited(message, response)).then((response) => {
      if (!send(encodeResponse(response))) deps.logger.info({ type: response.type, requestId: response.requestId }, 'relay link down before the answer could be sent; the relay has timed the request out');
    });
    return true;
  };
}
