// Operator routes for the event log (the HTTP side of `svc-admin deliveries`):
//   GET /api/v1/admin/deliveries?org=&source=&status=&since=&until=&repository=&limit=&archived=  → { deliveries }
//   GET /api/v1/admin/deliveries/:orgId/:deliveryId                                      → the record with its steps
// Scope deliveries.read (admin-auth/).
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { DeliveriesQuery, DeliveryParams, DeliveryRecordQuery } from '../../../../schemas/http/admin.ts';
import { NotFoundError } from '../../../../core/errors.ts';
import type { DatabasePool } from '../../../services/db/index.ts';
import type { AdminAuth } from '../../admin-auth/require-scope.ts';
import { getDelivery, listDeliveries } from './queries.ts';

export function deliveryRoutes(options: { pool: DatabasePool; auth: AdminAuth }) {
  return async function routes(app: FastifyInstance): Promise<void> {
    // The bearer is checked before the request is validated: a caller without it learns nothing.
    const onRequest = options.auth.requireScope('deliveries.read');
    app.get('/api/v1/admin/deliveries', { onRequest, schema: { querystring: DeliveriesQuery } }, async (request) => {
      const q = request.query as Static<typeof DeliveriesQuery>;
      const deliveries = await listDeliveries(options.pool, {
        orgId: q.org,
        sourceId: q.source,
        status: q.status,
        since: q.since,
        until: q.until,
        repository: q.repository,
        limit: q.limit,
        archived: q.archived,
      });
      return { deliveries };
    });
    app.get('/api/v1/admin/deliveries/:orgId/:deliveryId', { onRequest, schema: { params: DeliveryParams, querystring: DeliveryRecordQuery } }, async (request) => {
      const { orgId, deliveryId } = request.params as Static<typeof DeliveryParams>;
      const record = await getDelivery(options.pool, orgId, deliveryId);
      if (record === null) throw new NotFoundError('SVC_ERR_DELIVERY_NOT_FOUND', `no delivery ${deliveryId} in org ${orgId}`);
      return record;
    });
  };
}
