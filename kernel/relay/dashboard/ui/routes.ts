// The dashboard's pages and actions under /ui (docs/dashboard.md):
//   GET  /, /ui                                  → the caller's runs, or sign-in
//   GET  /ui/orgs/:orgId/runs?status=&repository= → runs list (live: …/runs/events, SSE)
//   GET  /ui/orgs/:orgId/runs/:runId             → run detail (jobs graph, steps, outputs, artifacts,
//                                                  attestations with their verdict, re-run lineage)
//   GET  /ui/orgs/:orgId/runs/:runId/attestations/:id → an attestation bundle (attestations.ts)
//   GET  /ui/orgs/:orgId/runs/:runId/logs        → live logs (…/logs/stream, SSE)
//   GET  /ui/orgs/:orgId/events, …/agents         → event log (events.ts), agents and keys (fleet.ts)
//   POST /ui/orgs/:orgId/runs/:runId/approve|reject|rerun|rerun-failed|cancel → 303 back (JSON with Accept: application/json)
// Every route authorises on the server (dashboard/auth.ts: PAT bearer or session cookie, org of the
// credential = org of the path; CSRF + same origin on a cookie POST). A page GET without
// credentials sends the browser to sign in; actions, JSON and streams answer 401.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AuthenticationError, InputError } from '../../../../core/errors.ts';
import { mapError } from '../../../services/http/index.ts';
import { sql } from '../../../services/db/index.ts';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { formField } from '../../sessions/index.ts';
import { identify, type Caller } from '../auth.ts';
import { actorOf, principalsOf } from '../../audit/caller.ts';
import { filterOf, runIdOf, runsFor, uiCaller, uiFailed, UiRelayedError, unwrapAnswer, type UiOptions } from './common.ts';
import { sendUiPage } from './frame.ts';
import { logsPage, runPage, runsBase, runsPage } from './pages.ts';
import { registerStreams } from './streams.ts';
import { registerEventLog } from './events.ts';
import { registerFleetPage } from './fleet.ts';
import { registerAuditPage } from './audit.ts';
import { registerAttestationDownload } from './attestations.ts';
import { registerTestPages } from './tests.ts';
import { registerLogSearchPage } from './log-search.ts';

export type { UiOptions } from './common.ts';

const ACTIONS = ['approve', 'reject', 'rerun', 'rerun-failed', 'cancel'] as const;
type Action = (typeof ACTIONS)[number];

function wantsJson(request: FastifyRequest): boolean {
  return String(request.headers.accept ?? '').includes('application/json');
}

async function act(options: UiOptions, caller: Caller, orgId: string, runId: string, action: Action, comment: string | undefined): Promise<{ message: string; location: string }> {
  const { broker, db, logger } = options;
  const here = `${runsBase(orgId)}/${encodeURIComponent(runId)}`;
  if (action === 'rerun' || action === 'rerun-failed') {
    const mode = action === 'rerun-failed' ? { mode: 'failed' as const } : {};
    const response = unwrapAnswer(await broker.request(orgId, { type: 'run.rerun.request', orgId, runId, triggeredBy: caller.actor, by: actorOf(caller), ...mode }));
    if (response.newRunId === undefined) throw new UiRelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without a run id', status: 502 });
    await db.query(sql.unsafe`update relay_runs set last_rerun_at = now() where org_id = ${orgId} and run_id = ${runId}`).catch((error: unknown) => logger.warn({ err: error }, 'last_rerun_at not recorded'));
    logger.info({ orgId, runId, newRunId: response.newRunId, by: caller.actor, via: 'dashboard', failedOnly: action === 'rerun-failed' }, 'run re-run');
    return { message: `${action === 'rerun-failed' ? 'Restart from failed jobs' : 'Re-run'} started as ${response.newRunId}.`, location: `${runsBase(orgId)}/${encodeURIComponent(response.newRunId)}` };
  }
  if (action === 'cancel') {
    const response = unwrapAnswer(await broker.request(orgId, { type: 'run.cancel.request', orgId, runId, cancelledBy: caller.actor, by: actorOf(caller) }));
    await db
      .query(sql.unsafe`update relay_runs set cancelled_by = coalesce(cancelled_by, ${caller.actor}) where org_id = ${orgId} and run_id = ${runId}`)
      .catch((error: unknown) => logger.warn({ err: error }, 'cancelled_by not recorded'));
    logger.info({ orgId, runId, by: caller.actor, via: 'dashboard' }, 'run cancel requested');
    return { message: `Cancel requested (${response.cancelledJobs ?? 0} job(s)).`, location: here };
  }
  if (comment !== undefined && comment.length > 2000) throw new InputError('SVC_ERR_HTTP_INVALID_BODY', 'the comment is at most 2000 characters');
  const principals = await principalsOf(db, caller);
  const response = unwrapAnswer(
    await broker.request(orgId, {
      type: 'run.approve.request',
      orgId,
      runId,
      actor: caller.actor,
      decision: action,
      via: 'dashboard',
      ...(comment !== undefined && comment !== '' ? { comment } : {}),
      by: actorOf(caller),
      ...(principals === undefined ? {} : { principals }),
    }),
  );
  const result = response.result;
  if (result === undefined) throw new UiRelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without a result', status: 502 });
  const ignored = result.decisions.find((d) => !d.counted);
  logger.info({ orgId, runId, decision: action, by: caller.actor, runStatus: result.runStatus }, 'run approval decision');
  const verb = action === 'approve' ? 'Approval' : 'Rejection';
  return { message: ignored !== undefined && !result.decisions.some((d) => d.counted) ? `${verb} not counted: ${ignored.ignoredReason ?? 'no pending hold'}.` : `${verb} recorded; the run is ${result.runStatus}.`, location: here };
}

export function registerUiRoutes(app: SvcHttpServer, options: UiOptions): void {
  const { db, broker, logger } = options;

  const home = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      const caller = await identify(db, request);
      return reply.code(303).header('location', runsBase(caller.orgId)).header('cache-control', 'no-store').send();
    } catch (error) {
      if (error instanceof AuthenticationError) return reply.code(303).header('location', '/signin?next=/ui').header('cache-control', 'no-store').send();
      return uiFailed(reply, request, logger, error);
    }
  };
  app.get('/', home);
  app.get('/ui', home);

  app.get('/ui/orgs/:orgId/runs', async (request, reply) => {
    try {
      const { orgId, frame } = await uiCaller(db, request);
      const filter = filterOf(request);
      return sendUiPage(reply, 200, 'Runs', frame, runsPage(frame, await runsFor(db, orgId, filter), filter));
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });

  app.get('/ui/orgs/:orgId/runs/:runId', async (request, reply) => {
    try {
      const { orgId, frame } = await uiCaller(db, request);
      const runId = runIdOf(request);
      // Artifacts and the detail (outputs, lineage, attestations) are extras: the page shows the
      // run without them (an older orchestrator does not answer run.detail).
      const [shown, artifacts, detail, timeline] = await Promise.all([
        broker.request(orgId, { type: 'run.show.request', orgId, runId }),
        broker.request(orgId, { type: 'run.artifacts.request', orgId, runId }).catch(() => undefined),
        broker.request(orgId, { type: 'run.detail.request', orgId, runId }).catch((error: unknown) => {
          logger.warn({ err: error, runId }, 'run detail (outputs, lineage, attestations) not read');
          return undefined;
        }),
        // The timeline too (an orchestrator before it does not answer run.timeline).
        broker.request(orgId, { type: 'run.timeline.request', orgId, runId }).catch((error: unknown) => {
          logger.warn({ err: error, runId }, 'run timeline not read');
          return undefined;
        }),
      ]);
      if (detail?.error !== undefined) logger.warn({ runId, code: detail.error.code }, `run detail (outputs, lineage, attestations) refused: ${detail.error.message}`);
      const run = unwrapAnswer(shown).run;
      if (run === undefined) throw new UiRelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the run', status: 502 });
      const notice = (request.query as Record<string, unknown>)['notice'];
      return sendUiPage(reply, 200, `Run ${run.workflow}`, frame, runPage(frame, run, artifacts?.error === undefined ? artifacts?.artifacts : undefined, detail?.error === undefined ? detail?.detail : undefined, typeof notice === 'string' ? notice.slice(0, 300) : undefined, timeline?.error === undefined ? timeline?.timeline : undefined));
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });

  app.get('/ui/orgs/:orgId/runs/:runId/logs', async (request, reply) => {
    try {
      const { orgId, frame } = await uiCaller(db, request);
      const runId = runIdOf(request);
      const shown = unwrapAnswer(await broker.request(orgId, { type: 'run.show.request', orgId, runId }));
      return sendUiPage(reply, 200, 'Logs', frame, logsPage(frame, runId, shown.run?.status ?? 'unknown'));
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });

  for (const action of ACTIONS) {
    app.post(`/ui/orgs/:orgId/runs/:runId/${action}`, async (request, reply) => {
      try {
        const { caller, orgId } = await uiCaller(db, request);
        const runId = runIdOf(request);
        const done = await act(options, caller, orgId, runId, action, formField(request, 'comment'));
        if (wantsJson(request)) return reply.code(200).type('application/json; charset=utf-8').send({ ok: true, ...done });
        return reply.code(303).header('location', `${done.location}?notice=${encodeURIComponent(done.message)}`).send();
      } catch (error) {
        if (!wantsJson(request)) return uiFailed(reply, request, logger, error);
        const relayed = error instanceof UiRelayedError ? error.error : undefined;
        const mapped = relayed === undefined ? mapError(error, { requestId: request.id }) : undefined;
        const status = relayed?.status ?? mapped!.status;
        if (relayed?.retryAfterSeconds !== undefined) void reply.header('retry-after', String(Math.max(1, relayed.retryAfterSeconds)));
        for (const [name, value] of Object.entries(mapped?.headers ?? {})) void reply.header(name, value);
        return reply
          .code(status >= 400 && status <= 599 ? status : 502)
          .type('application/json; charset=utf-8')
          .send({ ok: false, error: relayed !== undefined ? { code: relayed.code, message: relayed.message } : mapped!.body.error, ...(relayed?.retryAfterSeconds !== undefined ? { retryAfterSeconds: relayed.retryAfterSeconds } : {}) });
      }
    });
  }

  registerStreams(app, options);
  registerEventLog(app, options);
  registerFleetPage(app, options);
  registerAuditPage(app, options);
  registerAttestationDownload(app, options);
  registerTestPages(app, options);
  registerLogSearchPage(app, options);
}
