// The dashboard's pages and actions under /ui (docs/dashboard.md):
//   GET  /, /ui                                  → the caller's runs, or sign-in
//   GET  /ui/orgs/:orgId/runs?status=&repository= → runs list (live: …/runs/events, SSE)
//   GET  /ui/orgs/:orgId/runs/:runId             → run detail (jobs graph, steps, artifacts, lineage)
//   GET  /ui/orgs/:orgId/runs/:runId/logs        → live logs (…/logs/stream, SSE)
//   POST /ui/orgs/:orgId/runs/:runId/approve|reject|rerun|cancel → 303 back (JSON with Accept: application/json)
// Every route authorises on the server (dashboard/auth.ts: PAT bearer or session cookie, org of the
// credential = org of the path; CSRF + same origin on a cookie POST). A page GET without
// credentials sends the browser to sign in; actions, JSON and streams answer 401.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { RUN_STATUSES } from '../../../../schemas/http/run-index.ts';
import type { DashboardError } from '../../../../schemas/wire/relay.ts';
import { AuthenticationError, InputError, isSvcError } from '../../../../core/errors.ts';
import { mapError } from '../../../services/http/index.ts';
import { sql, type DatabasePool } from '../../../services/db/index.ts';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { ORG_ID_PATTERN } from '../../orgs.ts';
import { listIndexedRuns } from '../../run-index.ts';
import { csrfTokenFor, formField, html, identify, sessionCookieOf } from './deps.ts';
import { authorize, type Caller } from '../auth.ts';
import type { DashboardBroker } from '../broker.ts';
import { sendUiPage, type Frame } from './frame.ts';
import { logsPage, runPage, runsBase, runsPage, type RunsFilter } from './pages.ts';
import { registerStreams } from './streams.ts';
import { registerEventLog } from './events.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface UiOptions {
  db: DatabasePool;
  broker: DashboardBroker;
  logger: Logger;
  /** Streams end when the relay stops. */
  signal: AbortSignal;
}

/** An orchestrator's refusal, relayed with its status. */
export class UiRelayedError extends Error {
  readonly error: DashboardError;
  constructor(error: DashboardError) {
    super(error.message);
    this.error = error;
  }
}

export function unwrapAnswer<T extends { error?: DashboardError }>(response: T): T {
  if (response.error !== undefined) throw new UiRelayedError(response.error);
  return response;
}

/** The caller of a /ui/orgs/:orgId route, authorised for that org. */
export async function uiCaller(db: DatabasePool, request: FastifyRequest): Promise<{ caller: Caller; orgId: string; frame: Frame }> {
  const { orgId } = request.params as { orgId: string };
  const caller = await authorize(db, request, ORG_ID_PATTERN.test(orgId) ? orgId : `\u0000${orgId}`);
  const cookie = caller.via === 'session' ? sessionCookieOf(request) : undefined;
  return { caller, orgId, frame: { orgId, user: caller.actor, csrf: cookie === undefined ? undefined : csrfTokenFor(cookie), current: 'runs' } };
}

export function runIdOf(request: FastifyRequest): string {
  const { runId } = request.params as { runId: string };
  if (!UUID.test(runId)) throw new InputError('SVC_ERR_RELAY_RUN_ID_INVALID', `"${runId.slice(0, 80)}" is not a run id (a UUID)`);
  return runId.toLowerCase();
}

/** A refusal as a page (or a redirect to sign in when no credential came at all). */
export function uiFailed(reply: FastifyReply, request: FastifyRequest, logger: Logger, error: unknown): FastifyReply {
  if (error instanceof AuthenticationError && bearerless(request) && request.method === 'GET') {
    return reply.code(303).header('location', `/signin?next=${encodeURIComponent(request.url)}`).header('cache-control', 'no-store').send();
  }
  let status: number;
  let code: string;
  let message: string;
  if (error instanceof UiRelayedError) {
    status = error.error.status >= 400 && error.error.status <= 599 ? error.error.status : 502;
    ({ code, message } = error.error);
  } else {
    const mapped = mapError(error, { requestId: request.id });
    if (mapped.internal) logger.error({ err: error }, 'dashboard page failed');
    status = mapped.status;
    ({ code, message } = mapped.body.error);
  }
  if (isSvcError(error)) logger.info({ code, status }, message);
  return reply
    .code(status)
    .header('content-security-policy', "default-src 'self'; frame-ancestors 'none'")
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(
      html`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Refused · svc</title><link rel="stylesheet" href="/ui/static/dashboard.css"></head><body><main id="content"><h1>Refused</h1><p class="error" role="alert">${message} <span class="note">(${code})</span></p><p><a href="/ui">Your runs</a> · <a href="/signin">Sign in</a></p></main></body></html>`
        .html,
    );
}

/** A browser that sent no bearer token: it is sent to sign in rather than shown a 401. */
function bearerless(request: FastifyRequest): boolean {
  return request.headers.authorization === undefined;
}

function filterOf(request: FastifyRequest): RunsFilter {
  const query = request.query as Record<string, unknown>;
  const filter: RunsFilter = {};
  const status = query['status'];
  if (typeof status === 'string' && status !== '') {
    if (!(RUN_STATUSES as readonly string[]).includes(status)) throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', `"status" must be one of ${RUN_STATUSES.join(', ')}`);
    filter.status = status;
  }
  const repository = query['repository'];
  if (typeof repository === 'string' && repository.trim() !== '') {
    if (repository.length > 200) throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', '"repository" is at most 200 characters (owner/name)');
    filter.repository = repository.trim();
  }
  return filter;
}

export async function runsFor(db: DatabasePool, orgId: string, filter: RunsFilter) {
  return listIndexedRuns(db, orgId, {
    limit: 50,
    ...(filter.status !== undefined ? { status: filter.status as (typeof RUN_STATUSES)[number] } : {}),
    ...(filter.repository !== undefined ? { repository: filter.repository } : {}),
  });
}

const ACTIONS = ['approve', 'reject', 'rerun', 'cancel'] as const;
type Action = (typeof ACTIONS)[number];

function wantsJson(request: FastifyRequest): boolean {
  return String(request.headers.accept ?? '').includes('application/json');
}

async function act(options: UiOptions, caller: Caller, orgId: string, runId: string, action: Action, comment: string | undefined): Promise<{ message: string; location: string }> {
  const { broker, db, logger } = options;
  const here = `${runsBase(orgId)}/${encodeURIComponent(runId)}`;
  if (action === 'rerun') {
    const response = unwrapAnswer(await broker.request(orgId, { type: 'run.rerun.request', orgId, runId, triggeredBy: caller.actor }));
    if (response.newRunId === undefined) throw new UiRelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without a run id', status: 502 });
    await db.query(sql.unsafe`update relay_runs set last_rerun_at = now() where org_id = ${orgId} and run_id = ${runId}`).catch((error: unknown) => logger.warn({ err: error }, 'last_rerun_at not recorded'));
    logger.info({ orgId, runId, newRunId: response.newRunId, by: caller.actor, via: 'dashboard' }, 'run re-run');
    return { message: `Re-run started as ${response.newRunId}.`, location: `${runsBase(orgId)}/${encodeURIComponent(response.newRunId)}` };
  }
  if (action === 'cancel') {
    const response = unwrapAnswer(await broker.request(orgId, { type: 'run.cancel.request', orgId, runId, cancelledBy: caller.actor }));
    await db
      .query(sql.unsafe`update relay_runs set cancelled_by = coalesce(cancelled_by, ${caller.actor}) where org_id = ${orgId} and run_id = ${runId}`)
      .catch((error: unknown) => logger.warn({ err: error }, 'cancelled_by not recorded'));
    logger.info({ orgId, runId, by: caller.actor, via: 'dashboard' }, 'run cancel requested');
    return { message: `Cancel requested (${response.cancelledJobs ?? 0} job(s)).`, location: here };
  }
  if (comment !== undefined && comment.length > 2000) throw new InputError('SVC_ERR_HTTP_INVALID_BODY', 'the comment is at most 2000 characters');
  const response = unwrapAnswer(
    await broker.request(orgId, { type: 'run.approve.request', orgId, runId, actor: caller.actor, decision: action, via: 'dashboard', ...(comment !== undefined && comment !== '' ? { comment } : {}) }),
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
      const [shown, artifacts] = await Promise.all([
        broker.request(orgId, { type: 'run.show.request', orgId, runId }),
        broker.request(orgId, { type: 'run.artifacts.request', orgId, runId }).catch(() => undefined),
      ]);
      const run = unwrapAnswer(shown).run;
      if (run === undefined) throw new UiRelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the run', status: 502 });
      const notice = (request.query as Record<string, unknown>)['notice'];
      return sendUiPage(reply, 200, `Run ${run.workflow}`, frame, runPage(frame, run, artifacts?.error === undefined ? artifacts?.artifacts : undefined, typeof notice === 'string' ? notice.slice(0, 300) : undefined));
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
}
