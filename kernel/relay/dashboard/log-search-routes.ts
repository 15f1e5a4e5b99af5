// The log search route of the developer CLI, the dashboard and any API client
// (docs/log-search.md): `GET /v1/orgs/:orgId/logs/search?q=…&repository=&branch=&workflow=&job=
// &status=&since=&until=&limit=&context=` → 200 `{ hits, more, tookMs }`. The query is checked
// here (a clear 400 before anything is relayed), then forwarded to a connected orchestrator of
// the org as one `logs.search.request`. Needs a viewer of the org.
import type { FastifyRequest } from 'fastify';
import { toLogSearchQuery } from '../../../core/log-search.ts';
import { LogSearchHttpQuery } from '../../../schemas/http/log-search.ts';
import type { LogSearchAnswer, LogSearchQuery } from '../../../schemas/wire/relay.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { ORG_ID_PATTERN } from '../orgs.ts';
import { authorize } from './auth.ts';
import type { DashboardBroker } from './broker.ts';
import { RelayedError, failed, send, unwrap } from './relayed.ts';

/** Sends one logs.search.request and returns the answer (RelayedError on the orchestrator's refusal). */
export async function askLogSearch(broker: DashboardBroker, orgId: string, query: LogSearchQuery): Promise<LogSearchAnswer> {
  const response = unwrap(await broker.request(orgId, { type: 'logs.search.request', orgId, query }));
  if (response.answer === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the search results', status: 502 });
  return response.answer;
}

export function registerLogSearchRoutes(app: SvcHttpServer, options: { db: DatabasePool; broker: DashboardBroker }): void {
  const { db, broker } = options;
  app.get('/v1/orgs/:orgId/logs/search', { schema: { querystring: LogSearchHttpQuery } }, async (request: FastifyRequest, reply) => {
    try {
      const { orgId } = request.params as { orgId: string };
      await authorize(db, request, ORG_ID_PATTERN.test(orgId) ? orgId : `\u0000${orgId}`);
      const query = toLogSearchQuery(request.query as LogSearchHttpQuery);
      return send(reply, 200, await askLogSearch(broker, orgId, query));
    } catch (error) {
      return failed(reply, error);
    }
  });
}
