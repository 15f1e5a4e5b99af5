// The operator route for the audit trail (the HTTP side of `svc-admin audit list`):
//   GET /api/v1/admin/audit?actor=&action=&org=&outcome=&since=&until=&limit=  → { events }
// Scope audit.read (admin-auth/). Newest first.
import type { FastifyInstance } from 'fastify';
import { AuditList, AuditQuery } from '../../../schemas/http/audit.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { AdminAuth } from '../admin-auth/require-scope.ts';
import { listAudit } from './store.ts';

export function auditRoutes(options: { pool: DatabasePool; auth: AdminAuth }) {
  return async function routes(app: FastifyInstance): Promise<void> {
    // The bearer is checked before the query is validated: a caller without it learns nothing.
    const onRequest = options.auth.requireScope('audit.read');
    app.get('/api/v1/admin/audit', { onRequest, schema: { querystring: AuditQuery, response: { 200: AuditList } } }, async (request) => {
      return { events: await listAudit(options.pool, request.query as AuditQuery) };
    });
  };
}
