// The relay-link subsystem: when `platform.url` is set, links this orchestrator to the relay,
// announces its sources (re-read every SOURCE_SYNC_MS so `svc-admin source` changes made by
// another process reach the relay), feeds relayed deliveries to the ingest pipeline and relayed
// dashboard requests to the runs subsystem, and forwards run and job status changes to the
// relay's run index (status-forwarder.ts). Without `platform.url` ingest serves the webhooks
// itself and this subsystem only keeps the run status feed's relay column bounded
// (feed-janitor.ts). It starts after both of its needs, so every handler exists before the first
// message can arrive.
import type { RelaySource } from '../../../schemas/wire/relay.ts';
import type { Subsystem } from '../context.ts';
import type { IncomingDelivery } from '../ingest/types.ts';
import { ingestPipelineRef, runsRelayHandlerRef } from '../service-refs.ts';
import { listSources, toRelaySource } from '../sources/store.ts';
import { connectRelay, type RelayLink } from './connect.ts';
import { startFeedJanitor } from './feed-janitor.ts';
import { StatusForwarder } from './status-forwarder.ts';
import { publishRelayLinkState } from './link-state.ts';

/** How often a linked orchestrator re-reads its sources to announce additions and removals. */
export const SOURCE_SYNC_MS = 2000;

export const relayLinkSubsystem: Subsystem = {
  id: 'relay-link',
  needs: [ingestPipelineRef, runsRelayHandlerRef],
  async start(ctx, deps) {
    const platformUrl = ctx.config.platform.url;
    if (platformUrl === undefined) {
      const janitor = startFeedJanitor({ pool: ctx.db, logger: ctx.logger.child({ subsystem: 'relay-link' }) });
      deps.onStop(() => janitor.stop());
      return;
    }
    const token = ctx.config.platform.token;
    if (token === undefined) throw new Error('platform.url is set without platform.token: set SVC_PLATFORM_TOKEN to the org token from "svc-admin relay org create"');
    const logger = ctx.logger.child({ subsystem: 'relay-link' });
    const pipeline = deps.get(ingestPipelineRef);
    const answerRequest = deps.get(runsRelayHandlerRef);

    let announced = new Map<string, RelaySource>();
    for (const s of await listSources(ctx.db)) announced.set(s.routingKey, toRelaySource(s));
    // Run and job status changes to the relay's run index; it reads the link through this getter.
    let linkRef: RelayLink | undefined;
    const forwarder = new StatusForwarder({
      pool: ctx.db,
      databaseUrl: ctx.databaseUrl,
      logger,
      metrics: ctx.metrics,
      link: {
        get connected() {
          return linkRef?.connected ?? false;
        },
        get orgId() {
          return linkRef?.orgId;
        },
        send: (message) => linkRef?.send(message) ?? false,
      },
    });
    await forwarder.start();
    const link: RelayLink = connectRelay({
      platformUrl,
      platformToken: token,
      orchestratorId: ctx.nodeId,
      metrics: ctx.metrics,
      sources: () => [...announced.values()],
      logger,
      onMessage: (message) => void answerRequest(message, (reply) => link.send(reply)),
      onWelcome: () => forwarder.welcome(),
      onDisconnected: () => forwarder.disconnected(),
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
          ...(message.traceparent === undefined ? {} : { traceparent: message.traceparent }),
          ...(message.tracestate === undefined ? {} : { tracestate: message.tracestate }),
        };
        const outcome = await pipeline.ingestDelivery(delivery);
        return { result: outcome.result, ...(outcome.retryAfterSeconds !== undefined ? { retryAfterSeconds: outcome.retryAfterSeconds } : {}), ...(outcome.message !== undefined ? { message: outcome.message } : {}) };
      },
    });
    linkRef = link;
    publishRelayLinkState(ctx, () => ({ configured: true, connected: link.connected, platformUrl }));
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
    deps.onStop(async () => {
      clearInterval(timer);
      await forwarder.stop();
      await link.close();
    });
    logger.info({ platformUrl }, 'linked to the relay');
  },
};
