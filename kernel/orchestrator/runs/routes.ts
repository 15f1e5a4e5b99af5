// Operator admin routes for runs: `GET /api/v1/admin/runs/:runId` (detail, including the
// workflow repository fields of organization-wide runs) and `GET /api/v1/admin/runs?limit=`.
// Bearer `secrets.bootstrapAdminToken`; without one configured the routes refuse everyone.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { DatabasePool } from '../../services/db/index.ts';
import { AuthenticationError, NotFoundError } from '../../../core/errors.ts';
import { getRunDetail, listRuns, MAX_RUN_LIST } from './queries.ts';

export function checkAdminBearer(request: FastifyRequest, token: string | undefined): void {
  if (token === undefined) throw new AuthenticationError('SVC_ERR_ADMIN_UNAUTHORIZED', 'admin routes are off: set SVC_BOOTSTRAP_ADMIN_TOKEN (secrets.bootstrapAdminToken)');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  if (!match || !timingSafeEqual(digest(match[1]!), digest(token))) throw new AuthenticationError('SVC_ERR_ADMIN_UNAUTHORIZED', 'a valid admin bearer token is required');
}

export function runAdminRoutes(options: { pool: DatabasePool; adminToken: string | undefined }) {
  return async function routes(app: FastifyInstance): Promise<void> {
    app.get(
      '/api/v1/admin/runs',
      { schema: { querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RUN_LIST })), org: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })) }, { additionalProperties: false }) } },
      async (request) => {
        checkAdminBearer(request, options.adminToken);
        const query = request.query as { limit?: number; org?: string };
        return { runs: await listRuns(options.pool, { ...(query.limit !== undefined ? { limit: query.limit } : {}), ...(query.org !== undefined ? { orgId: query.org } : {}) }) };
      },
    );
    app.get('/api/v1/admin/runs/:runId', async (request) => {
      checkAdminBearer(request, options.adminToken);
      const { runId } = request.params as { runId: string };
      const run = await getRunDetail(options.pool, runId);
      if (run === null) throw new NotFoundError('SVC_ERR_RUN_NOT_FOUND', `no run ${runId}`);
      return run;
    });
  };
}
