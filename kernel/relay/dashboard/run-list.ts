// `GET /v1/orgs/:orgId/runs?limit=&status=&repository=&workflow=&branch=&before=` (`svc runs list`): an org's
// recent runs from the relay's own run index (kernel/relay/run-index.ts), so the answer needs no
// connected orchestrator. Checks in the order of the other run routes: token (401), org of the
// path (403), query (400: `SVC_ERR_HTTP_INVALID_QUERY` naming the failing parameter, or
// `SVC_ERR_RELAY_RUN_LIST_CURSOR_INVALID` for a `before` that is no cursor).
import type { FastifyRequest } from 'fastify';
import { DEFAULT_RUN_LIST_LIMIT, RunList, RunListQuery } from '../../../schemas/http/run-index.ts';
import { InputError } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { ORG_ID_PATTERN } from '../orgs.ts';
import { cursorAfter, listIndexedRuns, type RunListCursor } from '../run-index.ts';
import { authorize } from './auth.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

/** `<ISO time>` or `<ISO time>,<run id>` (the `nextBefore` of a page). */
export function parseBefore(value: string): RunListCursor {
  const [time = '', runId, ...rest] = value.split(',');
  const createdAt = new Date(time);
  if (!ISO_TIME.test(time) || Number.isNaN(createdAt.getTime()) || rest.length > 0 || (runId !== undefined && !UUID.test(runId))) {
    throw new InputError(
      'SVC_ERR_RELAY_RUN_LIST_CURSOR_INVALID',
      `"before" must be the "nextBefore" of the previous page (<time>,<run id>) or an ISO time such as 2026-01-31T12:00:00Z; got "${value.slice(0, 100)}"`,
    );
  }
  return runId === undefined ? { createdAt } : { createdAt, runId: runId.toLowerCase() };
}

export function registerRunListRoute(app: SvcHttpServer, db: DatabasePool): void {
  // The token and org are checked before the query: a caller of another org learns nothing.
  const onRequest = async (request: FastifyRequest): Promise<void> => {
    const { orgId } = request.params as { orgId: string };
    // A malformed org id cannot be the caller's org: 403 after a good token, like any other org.
    await authorize(db, request, ORG_ID_PATTERN.test(orgId) ? orgId : `\u0000${orgId}`);
  };
  app.get('/v1/orgs/:orgId/runs', { onRequest, schema: { querystring: RunListQuery } }, async (request, reply): Promise<RunList> => {
    const { orgId } = request.params as { orgId: string };
    const query = request.query as RunListQuery;
    const limit = query.limit ?? DEFAULT_RUN_LIST_LIMIT;
    const runs = await listIndexedRuns(db, orgId, {
      limit,
      ...(query.status !== undefined ? { status: query.status } : {}),
      ...(query.repository !== undefined ? { repository: query.repository } : {}),
      ...(query.workflow !== undefined ? { workflow: query.workflow } : {}),
      ...(query.branch !== undefined ? { branch: query.branch } : {}),
      ...(query.before !== undefined ? { before: parseBefore(query.before) } : {}),
    });
    const last = runs.at(-1);
    void reply.type('application/json; charset=utf-8');
    return { runs, nextBefore: runs.length === limit && last !== undefined ? cursorAfter(last) : null };
  });
}
