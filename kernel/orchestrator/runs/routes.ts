// Operator admin routes for runs: `GET /api/v1/admin/runs/:runId` (detail, including the
// workflow repository fields of organization-wide runs), `GET /api/v1/admin/runs?limit=` and
// `GET /api/v1/admin/logs/search?org=&q=&…` (log search, docs/log-search.md: an admin token is
// not bound to an org, so the org is named). Scope runs.read (admin-auth/), checked before the
// request is validated.
import type { FastifyInstance } from 'fastify';
import { RunDetailParams, RunListQuery } from '../../../schemas/http/admin.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { NotFoundError } from '../../../core/errors.ts';
import type { AdminAuth } from '../admin-auth/require-scope.ts';
import { getRunDetail, listRuns } from './queries.ts';
import { AdminLogSearchQuery } from '../../../schemas/http/log-search.ts';
import { toLogSearchQuery } from '../../../core/log-search.ts';
import { searchLogs } from '../log-search/search.ts';

export function runAdminRoutes(options: { pool: DatabasePool; auth: AdminAuth }) {
  return async function routes(app: FastifyInstance): Promise<void> {
    const onRequest = options.auth.requireScope('runs.read');
    app.get(
      '/api/v1/admin/runs',
      { onRequest, schema: { querystring: RunListQuery } },
      async (request) => {
        const query = request.query as { limit?: number; org?: string };
        return { runs: await listRuns(options.pool, { ...(query.limit !== undefined ? { limit: query.limit } : {}), ...(query.org !== undefined ? { orgId: query.org } : {}) }) };
      },
    );
    app.get('/api/v1/admin/logs/search', { onRequest, schema: { querystring: AdminLogSearchQuery } }, async (request) => {
      const { org, ...input } = request.query as AdminLogSearchQuery;
      return searchLogs(options.pool, org, toLogSearchQuery(input));
    });
    app.get('/api/v1/admin/runs/:runId', { onRequest, schema: { params: RunDetailParams } }, async (request) => {
      const { runId } = request.params as { runId: string };
      const run = await getRunDetail(options.pool, runId);
      if (run === null) throw new NotFoundError('SVC_ERR_RUN_NOT_FOUND', `no run ${runId}`);
      return run;
    });
  };
}
