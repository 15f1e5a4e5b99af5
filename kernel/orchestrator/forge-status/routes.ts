// Operator routes for run status reported to forges (the HTTP side of `svc-admin forge-status`):
//   GET /api/v1/admin/forge-status?run=&org=&status=&target=&limit=  → { deliveries }
//   GET /api/v1/admin/forge-status/:id                                → the delivery with every attempt (`history`)
// Scope forge-status.read (admin-auth/).
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { ForgeStatusParams, ForgeStatusQuery } from '../../../schemas/http/forge-status.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { AdminAuth } from '../admin-auth/require-scope.ts';
import { getForgeStatus, listForgeStatus } from './store.ts';

export function forgeStatusRoutes(options: { pool: DatabasePool; auth: AdminAuth }) {
  return async function routes(app: FastifyInstance): Promise<void> {
    // The bearer is checked before the request is validated: a caller without it learns nothing.
    const onRequest = options.auth.requireScope('forge-status.read');
    app.get('/api/v1/admin/forge-status', { onRequest, schema: { querystring: ForgeStatusQuery } }, async (request) => {
      const q = request.query as Static<typeof ForgeStatusQuery>;
      return { deliveries: await listForgeStatus(options.pool, { runId: q.run, orgId: q.org, status: q.status, target: q.target, limit: q.limit }) };
    });
    app.get('/api/v1/admin/forge-status/:id', { onRequest, schema: { params: ForgeStatusParams } }, async (request) => {
      const { id } = request.params as Static<typeof ForgeStatusParams>;
      return getForgeStatus(options.pool, id);
    });
  };
}
