// Operator routes for the event dead-letter queue (the HTTP side of `svc-admin event-dlq`):
//   GET  /api/v1/admin/events/dlq?org=&name=&limit=   → { count, events }
//   POST /api/v1/admin/events/dlq/retry    { ids? | all, org?, name? }   → { retried }
//   POST /api/v1/admin/events/dlq/discard  { ids? | all, org?, name?, reason } → { discarded }
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import { DlqDiscardBody, DlqQuery, DlqRetryBody } from '../../../schemas/http/admin.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { AdminAuth } from '../admin-auth/require-scope.ts';
import { countDlq, discardDlq, listDlq, retryDlq, type DlqFilter } from './dlq.ts';

function filterOf(q: { org?: string | undefined; name?: string | undefined }): DlqFilter {
  return { ...(q.org === undefined ? {} : { orgId: q.org }), ...(q.name === undefined ? {} : { name: q.name }) };
}

// Scopes events.read (list) and events.write (retry, discard), checked before validation.
export function dlqRoutes(options: { pool: DatabasePool; auth: AdminAuth }) {
  return async function routes(app: FastifyInstance): Promise<void> {
    const read = options.auth.requireScope('events.read');
    const write = options.auth.requireScope('events.write');
    app.get('/api/v1/admin/events/dlq', { onRequest: read, schema: { querystring: DlqQuery } }, async (request) => {
      const q = request.query as Static<typeof DlqQuery>;
      const filter = filterOf(q);
      return { count: await countDlq(options.pool, filter), events: await listDlq(options.pool, { ...filter, ...(q.limit === undefined ? {} : { limit: q.limit }) }) };
    });
    app.post('/api/v1/admin/events/dlq/retry', { onRequest: write, schema: { body: DlqRetryBody } }, async (request) => {
      const b = request.body as Static<typeof DlqRetryBody>;
      return { retried: await retryDlq(options.pool, b.ids ?? [], { ...filterOf(b), all: b.all === true }) };
    });
    app.post('/api/v1/admin/events/dlq/discard', { onRequest: write, schema: { body: DlqDiscardBody } }, async (request) => {
      const b = request.body as Static<typeof DlqDiscardBody>;
      return { discarded: await discardDlq(options.pool, b.ids ?? [], b.reason, { ...filterOf(b), all: b.all === true }) };
    });
  };
}
