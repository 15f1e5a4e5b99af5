// The developer CLI's org routes (each authorised by the caller's token, scoped to its org):
//   GET  /v1/orgs/:orgId/orchestrators          → 200 OrchestratorList   (relay memory: connected sockets)
//   GET  /v1/orgs/:orgId/endpoints              → 200 EndpointList       (relay_sources of the org)
//   GET  /v1/orgs/:orgId/report?days=           → 200 RunReport          (relay run index)
//   GET  /v1/orgs/:orgId/secrets                → 200 SecretList         (forwarded: org.secrets.list)
//   POST /v1/orgs/:orgId/secrets/:context/:key  → 200 SecretSetResult    (forwarded: org.secret.set; body { value })
//   GET  /v1/orgs/:orgId/notifications?limit=   → 200 Notifications      (forwarded: org.notifications)
// The first three need no orchestrator; the others answer 503 when none of the org is connected.
// A secret value is never logged: the body is checked here with a message that does not echo it.
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Type } from 'typebox';
import { NotificationsQuery, SecretSetBody, type EndpointList, type OrchestratorList } from '../../../schemas/http/org.ts';
import { DEFAULT_REPORT_DAYS, RunReportQuery, type RunReport } from '../../../schemas/http/run-index.ts';
import { DEFAULT_NOTIFICATIONS_LIMIT } from '../../../schemas/wire/relay.ts';
import { compileSchema } from '../../../schemas/validate.ts';
import { InputError } from '../../../core/errors.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { ORG_ID_PATTERN } from '../orgs.ts';
import type { OrchestratorPool } from '../orchestrator-pool.ts';
import { reportIndexedRuns } from '../run-index.ts';
import { authorize, type Caller } from './auth.ts';
import { actorOf } from '../audit/caller.ts';
import type { DashboardBroker } from './broker.ts';
import { RelayedError, failed, send, unwrap } from './relayed.ts';

export interface OrgRoutesOptions {
  db: DatabasePool;
  broker: DashboardBroker;
  logger: Logger;
  pool: OrchestratorPool;
}

const SourceRow = Type.Object({
  routing_key: Type.String(),
  provider_kind: Type.String(),
  source_id: Type.Union([Type.String(), Type.Null()]),
  signature_mode: Type.Union([Type.String(), Type.Null()]),
  registered_by: Type.String(),
  updated_at: Type.Number(),
});

const checkSecretBody = compileSchema(SecretSetBody);

/** The caller of `/v1/orgs/:orgId/…`, who must belong to that org (401, then 403). */
async function orgCaller(db: DatabasePool, request: FastifyRequest): Promise<{ caller: Caller; orgId: string }> {
  const { orgId } = request.params as { orgId: string };
  // A malformed org id cannot be the caller's org: 403 after a good token, like any other org.
  const caller = await authorize(db, request, ORG_ID_PATTERN.test(orgId) ? orgId : `\u0000${orgId}`);
  return { caller, orgId };
}

/** The webhook path the relay serves for one registered source (kernel/webhook/front-door.ts). */
export function ingestPath(orgId: string, providerKind: string, sourceId: string | null): string {
  const org = encodeURIComponent(orgId);
  return providerKind === 'generic' && sourceId !== null ? `/webhook/${org}/generic/${encodeURIComponent(sourceId)}` : `/webhook/${org}/${encodeURIComponent(providerKind)}`;
}

export function registerOrgRoutes(app: SvcHttpServer, options: OrgRoutesOptions): void {
  registerRelayAnswered(app, options);
  registerForwarded(app, options);
}

/** Token and org before the query: a caller of another org learns nothing. */
function orgCheck(db: DatabasePool): (request: FastifyRequest) => Promise<void> {
  return async (request) => void (await orgCaller(db, request));
}

/** Routes the relay answers from its own state: no orchestrator needed. */
function registerRelayAnswered(app: SvcHttpServer, options: OrgRoutesOptions): void {
  const { db, pool } = options;
  const onRequest = orgCheck(db);

  app.get('/v1/orgs/:orgId/orchestrators', { onRequest }, async (request, reply) => {
    const { orgId } = request.params as { orgId: string };
    const body: OrchestratorList = {
      orchestrators: pool
        .connections(orgId)
        .filter((c) => !c.closed)
        .map((c) => ({ orchestratorId: c.orchestratorId, connectedAt: c.connectedAt.toISOString(), lastSeenAt: c.lastSeenAt.toISOString(), version: c.version }))
        .sort((a, b) => a.connectedAt.localeCompare(b.connectedAt)),
    };
    return send(reply, 200, body);
  });

  app.get('/v1/orgs/:orgId/endpoints', { onRequest }, async (request, reply) => {
    const { orgId } = request.params as { orgId: string };
    const rows = await db.any(sqlTyped(SourceRow)`
      select routing_key, provider_kind, source_id, signature_mode, registered_by, updated_at
      from relay_sources where org_id = ${orgId} order by provider_kind, routing_key`);
    const body: EndpointList = {
      endpoints: rows.map((r) => ({
        providerKind: r.provider_kind,
        routingKey: r.routing_key,
        sourceId: r.source_id,
        path: ingestPath(orgId, r.provider_kind, r.source_id),
        signatureMode: r.signature_mode,
        registeredBy: r.registered_by,
        updatedAt: new Date(r.updated_at).toISOString(),
      })),
    };
    return send(reply, 200, body);
  });

  app.get('/v1/orgs/:orgId/report', { onRequest, schema: { querystring: RunReportQuery } }, async (request, reply) => {
    const { orgId } = request.params as { orgId: string };
    const days = (request.query as RunReportQuery).days ?? DEFAULT_REPORT_DAYS;
    const report: RunReport = await reportIndexedRuns(db, orgId, new Date(Date.now() - days * 86_400_000));
    return send(reply, 200, report);
  });
}

/** Routes forwarded to a connected orchestrator of the org. */
function registerForwarded(app: SvcHttpServer, options: OrgRoutesOptions): void {
  const { db, broker, logger } = options;
  const onRequest = orgCheck(db);

  app.get('/v1/orgs/:orgId/secrets', { onRequest }, async (request, reply) => {
    try {
      const { orgId } = request.params as { orgId: string };
      const response = unwrap(await broker.request(orgId, { type: 'org.secrets.list.request', orgId }));
      if (response.contexts === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the contexts', status: 502 });
      return send(reply, 200, { contexts: response.contexts });
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.post('/v1/orgs/:orgId/secrets/:context/:key', async (request, reply) => {
    try {
      const { caller, orgId } = await orgCaller(db, request);
      const { context, key } = request.params as { context: string; key: string };
      // Longer names would not pass the relay link's frame check; the orchestrator checks the rest.
      if (context.length > 100) throw new InputError('SVC_ERR_SECRETS_CONTEXT_NAME', `context name "${context.slice(0, 100)}…" is not valid: at most 100 characters`);
      if (key.length > 128) throw new InputError('SVC_ERR_SECRETS_KEY', `secret key "${key.slice(0, 128)}…" is not valid: at most 128 characters`);
      const checked = checkSecretBody.validate(request.body ?? {});
      // Not formatIssues: an issue may quote the value.
      if (!checked.ok) throw new InputError('SVC_ERR_HTTP_INVALID_BODY', 'invalid request body: send { "value": the secret, 1 to 65536 characters } and nothing else');
      const response = unwrap(await broker.request(orgId, { type: 'org.secret.set.request', orgId, actor: caller.actor, context, key, value: checked.value.value, by: actorOf(caller) }));
      if (response.result === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without a result', status: 502 });
      logger.info({ orgId, context: response.result.context, key: response.result.key, by: caller.actor, replaced: response.result.replaced }, 'test-context secret set');
      return send(reply, 200, response.result);
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.get('/v1/orgs/:orgId/notifications', { onRequest, schema: { querystring: NotificationsQuery } }, async (request, reply) => {
    try {
      const { orgId } = request.params as { orgId: string };
      const limit = (request.query as NotificationsQuery).limit ?? DEFAULT_NOTIFICATIONS_LIMIT;
      const response = unwrap(await broker.request(orgId, { type: 'org.notifications.request', orgId, limit }));
      if (response.notifications === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the notifications', status: 502 });
      return send(reply, 200, response.notifications);
    } catch (error) {
      return failed(reply, error);
    }
  });
}
