// Independent mode (no `platform.url`): the orchestrator is its own ingest point and serves the
// webhook front door (kernel/webhook) that the relay serves, with the same admission, limits and
// status codes. Its gate is the source cache; it has no relay buffer, so an admitted delivery is
// answered from the pipeline's result.
import type { FastifyInstance } from 'fastify';
import type { RelaySource } from '../../../../schemas/wire/relay.ts';
import { webhookFrontDoor, type InboundWebhook, type WebhookAnswer, type WebhookGate } from '../../../webhook/front-door.ts';
import { forwardedHeaders } from '../../../webhook/parse-request.ts';
import { IngressLimiter } from '../../../webhook/rate-limiter.ts';
import { ROW_OF_ACK } from '../../../webhook/status-codes.ts';
import { configDefaults } from '../../../services/config/defaults.ts';
import { toRelaySource } from '../../sources/store.ts';
import type { IngestPipeline } from '../pipeline.ts';
import type { IncomingDelivery, IngestOutcome } from '../types.ts';

/** The front door's answer for a pipeline outcome (one row of the status table each). */
export function answerFor(outcome: IngestOutcome): WebhookAnswer {
  const row = ROW_OF_ACK[outcome.result];
  if (row === 'accepted' || row === 'duplicate') return { status: 200, body: { status: outcome.status, deliveryId: outcome.deliveryId, runIds: outcome.runIds } };
  return {
    refusal: row,
    ...(outcome.message === undefined ? {} : { message: outcome.message }),
    ...(outcome.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: outcome.retryAfterSeconds }),
  };
}

/** Orgs and sources as the source cache knows them; the limits are those a relay would be told. */
function sourceGate(pipeline: IngestPipeline): WebhookGate<RelaySource> {
  return {
    hasOrg: async (orgId) => (await pipeline.sources.listOrg(orgId)).length > 0,
    async source(orgId, routingKey, providerKind) {
      const lookup = await pipeline.sources.get(orgId, routingKey);
      if (lookup.ok) return toRelaySource(lookup.source);
      if (lookup.reason === 'unknown') return undefined;
      // Known but unusable (its secret does not open): the pipeline answers it, with the reason.
      return { routingKey, providerKind };
    },
  };
}

export function webhookRoutes(pipeline: IngestPipeline): (app: FastifyInstance) => Promise<void> {
  // The front door's limits are the same settings wherever it runs (relay or here).
  const { rateLimitPerOrgRpm, rateLimitPerIpRpm } = pipeline.deps.config.relay ?? configDefaults().relay;
  return webhookFrontDoor<RelaySource>({
    gate: sourceGate(pipeline),
    limiter: new IngressLimiter({ perOrgRpm: rateLimitPerOrgRpm, perIpRpm: rateLimitPerIpRpm }),
    async handle(webhook: InboundWebhook<RelaySource>, request) {
      const delivery: IncomingDelivery = {
        orgId: webhook.orgId,
        routingKey: webhook.routingKey,
        providerKind: webhook.providerKind,
        ...(webhook.sourceId === undefined ? {} : { sourceId: webhook.sourceId }),
        deliveryId: webhook.deliveryId,
        headers: forwardedHeaders(request.headers),
        body: webhook.body,
        receivedAt: new Date(webhook.arrival),
        clientIp: request.ip,
        replay: false,
      };
      return answerFor(await pipeline.ingestDelivery(delivery));
    },
  });
}
