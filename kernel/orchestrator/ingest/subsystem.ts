// The ingest subsystem: builds the pipeline, serves the webhook routes itself in independent
// mode or links to the relay (announcing sources, routing only) when `platform.url` is set, and
// serves the run admin routes.
import type { RelaySource } from '../../../schemas/wire/relay.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import type { OrchestratorContext, Subsystem } from '../context.ts';
import { notifyJobsQueued } from '../dispatch/notify.ts';
import { connectRelay, type RelayLink } from '../relay-link/index.ts';
import { runAdminRoutes } from '../runs/routes.ts';
import { relayMessageHandler } from '../runs/api/index.ts';
import { watchSources } from '../sources/cache.ts';
import { listSources, toRelaySource } from '../sources/store.ts';
import { createListener } from '../../services/db/index.ts';
import { INGEST_EVENTS_CHANNEL } from './steps/registrations.ts';
import { releaseInterrupted } from './record/delivery-record.ts';
import { webhookRoutes } from './entry/http-route.ts';
import { createIngest, type IngestPipeline } from './pipeline.ts';
import { createIngestPool } from './pool.ts';
import type { IncomingDelivery } from './types.ts';

/** How often a linked orchestrator re-reads its sources to announce additions and removals. */
export const SOURCE_SYNC_MS = 2000;

function storageOf(ctx: OrchestratorContext): StorageExtensionPoint | undefined {
  try {
    return ctx.host.select('storage');
  } catch {
    return undefined;
  }
}

/** The pipeline of the running orchestrator (tests and the bench reach it through here). */
export const ingestPipelines = new WeakMap<OrchestratorContext, IngestPipeline>();

export const ingestSubsystem: Subsystem = {
  name: 'ingest',
  async start(ctx: OrchestratorContext): Promise<void> {
    const logger = ctx.logger.child({ subsystem: 'ingest' });
    const storage = storageOf(ctx);
    const pool = await createIngestPool({ url: ctx.databaseUrl, logger });
    const pipeline = createIngest({
      pool,
      logger,
      metrics: ctx.metrics,
      host: ctx.host,
      masterKeys: ctx.masterKeys.all,
      config: ctx.config,
      nodeId: ctx.nodeId,
      ...(storage ? { storage } : {}),
      notifyJobsQueued,
    });
    ingestPipelines.set(ctx, pipeline);
    // Cached sources and registrations are dropped when another process (svc-admin, another
    // node) changes them; a listener that lost its connection drops everything.
    const listener = await createListener({ url: ctx.databaseUrl, logger });
    const clearAll = (): void => {
      pipeline.sources.clear();
      pipeline.registrations.clear();
    };
    await watchSources(listener, clearAll, logger);
    await listener.listen(INGEST_EVENTS_CHANNEL, (payload) => {
      if (payload.includes('registration.updated')) pipeline.registrations.clear();
    });
    ctx.onStop(async () => {
      await listener.close();
      // Payload objects still queued are written before the process goes.
      if (!(await pipeline.eventLog.drain(5000))) logger.warn({ pending: pipeline.eventLog.pending }, 'event-log payloads left unwritten at stop (recorded storage_failed)');
      await pool.end();
    });
    const released = await releaseInterrupted(ctx.db, ctx.nodeId);
    if (released > 0) logger.warn({ released }, 'deliveries interrupted by the last stop are replayable again');

    await ctx.http.register(runAdminRoutes({ pool: ctx.db, adminToken: ctx.config.secrets.bootstrapAdminToken }));

    const platformUrl = ctx.config.platform.url;
    if (platformUrl === undefined) {
      await ctx.http.register(webhookRoutes(pipeline));
      logger.info('independent mode: serving webhooks at /webhook/:orgId/:providerKind and /webhook/:orgId/generic/:sourceId');
      return;
    }
    const token = ctx.config.platform.token;
    if (token === undefined) throw new Error('platform.url is set without platform.token: set SVC_PLATFORM_TOKEN to the org token from "svc-admin relay org create"');

    let announced = new Map<string, RelaySource>();
    for (const s of await listSources(ctx.db)) announced.set(s.routingKey, toRelaySource(s));
    const link: RelayLink = connectRelay({
      platformUrl,
      platformToken: token,
      orchestratorId: ctx.nodeId,
      sources: () => [...announced.values()],
      logger,
      // Dashboard/CLI requests relayed by the Platform (rerun, cancel, payload, run show/logs): runs/api.
      onMessage: relayMessageHandler(ctx, pipeline, (reply) => link.send(reply)),
      onDelivery: async (message) => {
        const delivery: IncomingDelivery = {
          orgId: message.orgId,
          routingKey: message.routingKey,
          providerKind: message.providerKind,
          ...(message.sourceId !== undefined ? { sourceId: message.sourceId } : {}),
          deliveryId: message.deliveryId,
          headers: message.headers,
          body: Buffer.from(message.bodyBase64, 'base64'),
          receivedAt: new Date(message.receivedAt),
          clientIp: message.clientIp,
          replay: message.replay,
        };
        const outcome = await pipeline.ingestDelivery(delivery);
        return { result: outcome.result, ...(outcome.retryAfterSeconds !== undefined ? { retryAfterSeconds: outcome.retryAfterSeconds } : {}), ...(outcome.message !== undefined ? { message: outcome.message } : {}) };
      },
    });
    // Sources added or removed by `svc-admin source` (another process) reach the relay here.
    let syncing = false;
    const timer = setInterval(() => {
      if (syncing) return;
      syncing = true;
      listSources(ctx.db)
        .then((sources) => {
          const next = new Map(sources.map((s) => [s.routingKey, toRelaySource(s)]));
          for (const [key, source] of next) if (JSON.stringify(announced.get(key)) !== JSON.stringify(source)) link.registerSource(source);
          for (const key of announced.keys()) if (!next.has(key)) link.deregisterSource(key);
          announced = next;
        })
        .catch((error: unknown) => logger.warn({ err: error }, 'source sync failed'))
        .finally(() => (syncing = false));
    }, SOURCE_SYNC_MS);
    timer.unref();
    ctx.onStop(async () => {
      clearInterval(timer);
      await link.close();
    });
    logger.info({ platformUrl }, 'linked to the relay');
  },
};
