// Dashboard actions (spec "Dashboard actions") and the developer CLI's run routes, each forwarded
// to a connected orchestrator of the org over its WebSocket:
//   POST /orgs/:orgId/runs/:runId/rerun[?mode=failed] → 200 { newRunId }; 429 inside the cooldown
//   POST /orgs/:orgId/runs/:runId/cancel         → 200 { cancelledJobs }
//   POST /orgs/:orgId/runs/:runId/approve|reject → 200 ApprovalResult      (dashboard; body { comment?, job? })
//   POST /v1/orgs/:orgId/runs/:runId/approve|reject → 200 ApprovalResult   (svc approve|reject)
//   GET  /orgs/:orgId/runs/:runId/payload        → 200 { payload }
//   GET  /v1/orgs/:orgId/runs/:runId             → 200 { run }            (svc runs show)
//   GET  /v1/orgs/:orgId/runs/:runId/logs?after= → 200 RunLogsPage        (svc runs logs)
//   GET  /v1/orgs/:orgId/runs/:runId/timeline  → 200 { timeline }       (RunTimeline: the run page's timeline)
//   GET  /v1/orgs/:orgId/runs/:runId/artifacts → 200 { artifacts }      (svc runs artifacts)
//   GET  /v1/orgs/:orgId/runs/:runId/artifacts/:name?offset= → 200 RunArtifactChunk (svc runs download;
//                                                  base64 chunks of ≤ 2 MiB, the CLI checks the digest)
//   GET  /v1/orgs/:orgId/runs?limit=&status=&…   → 200 RunList            (svc runs list; from the
//                                                  relay's run index, no orchestrator asked: run-list.ts)
//   GET  /v1/orgs/:orgId/{orchestrators,endpoints,secrets,notifications,report}, POST …/secrets/:context/:key
//                                                (svc orchestrators|endpoints|secrets|notifications|report: org-routes.ts)
//   POST /v1/orgs/:orgId/remote-runs/uploads    → 200 RemoteUpload        (svc run remote)
//   POST /v1/orgs/:orgId/remote-runs            → 200 RemoteRunResult     (svc run remote)
//   GET  /v1/whoami                              → 200 { orgId, kind, user? } (svc login)
// Order of checks: token (401), org (403), path and query (400), an orchestrator (503), its
// answer (its status; 504 when it does not answer in time).
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { MAX_LOG_CURSOR_LENGTH } from '../../../schemas/wire/relay.ts';
import { ApprovalDecisionBody } from '../../../schemas/http/approvals.ts';
import { RemoteRunBody } from '../../../schemas/http/remote-run.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { InputError } from '../../../core/errors.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { ORG_ID_PATTERN } from '../orgs.ts';
import { authorize, identify, type Caller } from './auth.ts';
import { actorOf, principalsOf } from '../audit/caller.ts';
import type { DashboardBroker } from './broker.ts';
import type { OrchestratorPool } from '../orchestrator-pool.ts';
import { registerRunListRoute } from './run-list.ts';
import { registerOrgRoutes } from './org-routes.ts';
import { registerTestRoutes } from './test-routes.ts';
import { registerLogSearchRoutes } from './log-search-routes.ts';
import { RelayedError, failed, send, unwrap } from './relayed.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface DashboardRoutesOptions {
  db: DatabasePool;
  broker: DashboardBroker;
  logger: Logger;
  /** The connected orchestrators (`svc orchestrators`). */
  pool: OrchestratorPool;
}

interface RunParams {
  orgId: string;
  runId: string;
}

async function checked(db: DatabasePool, request: FastifyRequest): Promise<{ caller: Caller; orgId: string; runId: string }> {
  const { orgId, runId } = request.params as RunParams;
  // A malformed org id cannot be the caller's org: 403 after a good token, like any other org.
  const caller = await authorize(db, request, ORG_ID_PATTERN.test(orgId) ? orgId : `\u0000${orgId}`);
  if (!UUID.test(runId)) throw new InputError('SVC_ERR_RELAY_RUN_ID_INVALID', `"${runId.slice(0, 80)}" is not a run id (a UUID)`);
  return { caller, orgId, runId: runId.toLowerCase() };
}

/** `?mode=failed`: restart from the failed jobs (docs/run-states.md); no other mode exists, and nothing else may be asked. */
function rerunMode(request: FastifyRequest): { mode?: 'failed' } {
  const query = (request.query ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(query)) {
    if (key !== 'mode') throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', `unknown query parameter ${JSON.stringify(key.slice(0, 40))} (a re-run takes only ?mode=failed)`);
  }
  const mode = query['mode'];
  if (mode === undefined) return {};
  if (mode !== 'failed') throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', `mode must be "failed" (restart from the failed jobs), got ${JSON.stringify(String(mode).slice(0, 40))}`);
  return { mode: 'failed' };
}

const checkDecisionBody = compileSchema(ApprovalDecisionBody);
const checkRemoteRunBody = compileSchema(RemoteRunBody);
/** A remote-run request must fit one relay frame (4 MiB) with its envelope. */
const REMOTE_RUN_BODY_LIMIT = 3 * 1024 * 1024;

async function checkedOrg(db: DatabasePool, request: FastifyRequest): Promise<{ caller: Caller; orgId: string }> {
  const { orgId } = request.params as { orgId: string };
  const caller = await authorize(db, request, ORG_ID_PATTERN.test(orgId) ? orgId : `\u0000${orgId}`);
  return { caller, orgId };
}

/** The body of an approve or reject, checked after the token and the path (no body: `{}`). */
function decisionBody(body: unknown): ApprovalDecisionBody {
  const result = checkDecisionBody.validate(body ?? {});
  if (!result.ok) throw new InputError('SVC_ERR_HTTP_INVALID_BODY', `invalid request body: ${formatIssues(result.issues)} (send { "comment"?: text of at most 2000 characters, "job"?: a job name })`);
  return result.value;
}

export function registerDashboardRoutes(app: SvcHttpServer, options: DashboardRoutesOptions): void {
  const { db, broker, logger } = options;

  app.post('/orgs/:orgId/runs/:runId/rerun', async (request, reply) => {
    try {
      const { caller, orgId, runId } = await checked(db, request);
      const mode = rerunMode(request);
      const response = unwrap(await broker.request(orgId, { type: 'run.rerun.request', orgId, runId, triggeredBy: caller.actor, by: actorOf(caller), ...mode }));
      if (response.newRunId === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without a run id', status: 502 });
      await db.query(sql.unsafe`update relay_runs set last_rerun_at = now() where org_id = ${orgId} and run_id = ${runId}`).catch((error: unknown) => logger.warn({ err: error }, 'last_rerun_at not recorded'));
      logger.info({ orgId, runId, newRunId: response.newRunId, by: caller.actor, failedOnly: mode.mode === 'failed' }, 'run re-run');
      return send(reply, 200, { newRunId: response.newRunId });
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.post('/orgs/:orgId/runs/:runId/cancel', async (request, reply) => {
    try {
      const { caller, orgId, runId } = await checked(db, request);
      const response = unwrap(await broker.request(orgId, { type: 'run.cancel.request', orgId, runId, cancelledBy: caller.actor, by: actorOf(caller) }));
      await db
        .query(sql.unsafe`update relay_runs set cancelled_by = coalesce(cancelled_by, ${caller.actor}) where org_id = ${orgId} and run_id = ${runId}`)
        .catch((error: unknown) => logger.warn({ err: error }, 'cancelled_by not recorded'));
      logger.info({ orgId, runId, cancelledJobs: response.cancelledJobs, by: caller.actor }, 'run cancel requested');
      return send(reply, 200, { cancelledJobs: response.cancelledJobs ?? 0 });
    } catch (error) {
      return failed(reply, error);
    }
  });

  // Approve or reject a held run (spec "Authentication" 9): the caller decides, as the dashboard's
  // user (`via: dashboard`) or through `svc approve|reject` (`/v1`, `via: cli`). A decision the
  // hold does not count (the caller is not an approver, nothing is pending) is still 200: the
  // result says why.
  for (const decision of ['approve', 'reject'] as const) {
    for (const [prefix, via] of [['', 'dashboard'], ['/v1', 'cli']] as const) {
      app.post(`${prefix}/orgs/:orgId/runs/:runId/${decision}`, async (request, reply) => {
        try {
          const { caller, orgId, runId } = await checked(db, request);
          const body = decisionBody(request.body);
          const principals = await principalsOf(db, caller);
          const response = unwrap(
            await broker.request(orgId, { type: 'run.approve.request', orgId, runId, actor: caller.actor, decision, via, ...body, by: actorOf(caller), ...(principals === undefined ? {} : { principals }) }),
          );
          if (response.result === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without a result', status: 502 });
          const counted = response.result.decisions.filter((d) => d.counted).length;
          logger.info({ orgId, runId, decision, via, by: caller.actor, counted, runStatus: response.result.runStatus }, 'run approval decision');
          return send(reply, 200, response.result);
        } catch (error) {
          return failed(reply, error);
        }
      });
    }
  }

  app.get('/orgs/:orgId/runs/:runId/payload', async (request, reply) => {
    try {
      const { orgId, runId } = await checked(db, request);
      const response = unwrap(await broker.request(orgId, { type: 'dashboard.payload', orgId, runId }));
      return send(reply, 200, { payload: response.payload ?? null });
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.get('/v1/orgs/:orgId/runs/:runId', async (request, reply) => {
    try {
      const { orgId, runId } = await checked(db, request);
      const response = unwrap(await broker.request(orgId, { type: 'run.show.request', orgId, runId }));
      if (response.run === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the run', status: 502 });
      return send(reply, 200, { run: response.run });
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.get('/v1/orgs/:orgId/runs/:runId/logs', async (request, reply) => {
    try {
      const { orgId, runId } = await checked(db, request);
      const query = request.query as Record<string, unknown>;
      const unknown = Object.keys(query).filter((k) => k !== 'after');
      if (unknown.length > 0) throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', `unknown query parameter(s): ${unknown.join(', ')}; only "after" is accepted`);
      const after = query['after'];
      if (after !== undefined && (typeof after !== 'string' || after.length > MAX_LOG_CURSOR_LENGTH)) {
        throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', `"after" must be one cursor of at most ${MAX_LOG_CURSOR_LENGTH} characters, as the previous page returned it`);
      }
      const response = unwrap(await broker.request(orgId, { type: 'run.logs.request', orgId, runId, ...(after === undefined || after === '' ? {} : { after }) }));
      if (response.page === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without a page', status: 502 });
      return send(reply, 200, response.page);
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.get('/v1/orgs/:orgId/runs/:runId/timeline', async (request, reply) => {
    try {
      const { orgId, runId } = await checked(db, request);
      const response = unwrap(await broker.request(orgId, { type: 'run.timeline.request', orgId, runId }));
      if (response.timeline === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the timeline', status: 502 });
      return send(reply, 200, { timeline: response.timeline });
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.get('/v1/orgs/:orgId/runs/:runId/artifacts', async (request, reply) => {
    try {
      const { orgId, runId } = await checked(db, request);
      const response = unwrap(await broker.request(orgId, { type: 'run.artifacts.request', orgId, runId }));
      if (response.artifacts === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the artifacts', status: 502 });
      return send(reply, 200, { artifacts: response.artifacts });
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.get('/v1/orgs/:orgId/runs/:runId/artifacts/:name', async (request, reply) => {
    try {
      const { orgId, runId } = await checked(db, request);
      const { name } = request.params as { name: string };
      const query = request.query as Record<string, unknown>;
      const unknown = Object.keys(query).filter((k) => k !== 'offset');
      if (unknown.length > 0) throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', `unknown query parameter(s): ${unknown.join(', ')}; only "offset" is accepted`);
      const raw = query['offset'] ?? '0';
      if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', '"offset" must be a byte offset (0 or more), as the previous chunk ended');
      if (name.length === 0 || name.length > 128) throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', 'an artifact name is 1 to 128 characters');
      const response = unwrap(await broker.request(orgId, { type: 'run.artifact.chunk.request', orgId, runId, name, offset: Number(raw) }));
      if (response.chunk === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the artifact bytes', status: 502 });
      return send(reply, 200, response.chunk);
    } catch (error) {
      return failed(reply, error);
    }
  });

  // `svc run remote` (docs/run-remote.md): an upload slot, then the runs of one fixture.
  app.post('/v1/orgs/:orgId/remote-runs/uploads', async (request, reply) => {
    try {
      const { caller, orgId } = await checkedOrg(db, request);
      const response = unwrap(await broker.request(orgId, { type: 'remote.upload.request', orgId, actor: caller.actor }));
      if (response.upload === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without an upload slot', status: 502 });
      return send(reply, 200, response.upload);
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.post('/v1/orgs/:orgId/remote-runs', { bodyLimit: REMOTE_RUN_BODY_LIMIT }, async (request, reply) => {
    try {
      const { caller, orgId } = await checkedOrg(db, request);
      const checkedBody = checkRemoteRunBody.validate(request.body);
      if (!checkedBody.ok) throw new InputError('SVC_ERR_HTTP_INVALID_BODY', `invalid request body: ${formatIssues(checkedBody.issues)}`);
      const response = unwrap(await broker.request(orgId, { type: 'remote.run.request', orgId, actor: caller.actor, body: checkedBody.value, by: actorOf(caller) }));
      if (response.result === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the runs', status: 502 });
      logger.info({ orgId, by: caller.actor, fixture: checkedBody.value.fixture, runs: response.result.runs.length }, 'remote runs created');
      return send(reply, 200, response.result);
    } catch (error) {
      return failed(reply, error);
    }
  });

  registerRunListRoute(app, db);
  registerOrgRoutes(app, { db, broker, logger, pool: options.pool });
  registerTestRoutes(app, { db, broker });
  registerLogSearchRoutes(app, { db, broker });

  app.get('/v1/whoami', async (request, reply) => {
    const caller = await identify(db, request);
    return send(reply, 200, { orgId: caller.orgId, kind: caller.kind, ...(caller.kind === 'pat' ? { user: caller.actor } : {}) });
  });
}
