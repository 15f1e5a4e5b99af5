// What the dashboard's pages, streams and event log share: the caller check of a /ui/orgs/:orgId
// route (dashboard/auth.ts, credential org = path org), the run id of the path, the relayed
// orchestrator refusal, and the refusal page (or the way to sign in).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { RUN_STATUSES } from '../../../../schemas/http/run-index.ts';
import type { DashboardError } from '../../../../schemas/wire/relay.ts';
import { AuthenticationError, InputError, isSvcError } from '../../../../core/errors.ts';
import { mapError } from '../../../services/http/index.ts';
import type { DatabasePool } from '../../../services/db/index.ts';
import { ORG_ID_PATTERN } from '../../orgs.ts';
import { listIndexedRuns } from '../../run-index.ts';
import { csrfTokenFor, html, sessionCookieOf } from '../../sessions/index.ts';
import { authorize, type Caller } from '../auth.ts';
import type { DashboardBroker } from '../broker.ts';
import type { Frame } from './frame.ts';
import type { RunsFilter } from './pages.ts';

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

export function filterOf(request: FastifyRequest): RunsFilter {
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

