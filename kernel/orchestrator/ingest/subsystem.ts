// The ingest subsystem: builds the pipeline (provided to the runs and relay-link subsystems) and
// serves the webhook routes itself in independent mode. When `platform.url` is set the relay-link
// subsystem feeds it the relayed deliveries instead.
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { provide } from '../../../core/wiring/index.ts';
import type { OrchestratorContext, Subsystem } from '../context.ts';
import { notifyJobsQueued } from '../dispatch/notify.ts';
import { adminAuthRef, clusterServiceRef, ingestPipelineRef } from '../service-refs.ts';
import { watchSources } from '../sources/cache.ts';
import { watchTrustPolicies } from '../trust-policy/cache.ts';
import { trustPolicyRoutes } from '../trust-policy/routes.ts';
import { createDatabase, createListener, WAKEUP_LINGER_MS, WakeupSender } from '../../services/db/index.ts';
import { INGEST_EVENTS_CHANNEL } from './steps/registrations.ts';
import { releaseInterrupted } from './record/delivery-record.ts';
import { deliveryRoutes } from './record/routes.ts';
import { startEventLogRetention } from './record/retention.ts';
import { webhookRoutes } from './entry/http-route.ts';
import { createIngest } from './pipeline.ts';
import { startRetryWorker } from './retry/worker.ts';

/** The ingest pool: at most this many connections, this many always open, the rest closed after this idle time. */
const INGEST_POOL_MAX = 10;
const INGEST_POOL_WARM = 4;
const INGEST_POOL_IDLE_MS = 60_000;

function storageOf(ctx: OrchestratorContext): StorageExtensionPoint | undefined {
  try {
    return ctx.host.select('storage');
  } catch {
    return undefined;
  }
}

export const ingestSubsystem: Subsystem = {
  id: 'ingest',
  provides: [ingestPipelineRef],
  needs: [adminAuthRef],
  // The event-log archive pass runs on the leader only when there is a cluster.
  optionalNeeds: [clusterServiceRef],
  async start(ctx, deps) {
    const logger = ctx.logger.child({ subsystem: 'ingest' });
    const storage = storageOf(ctx);
    // The ingest path's own pool, so a webhook never waits for a connection behind the other
    // subsystems' work on the shared one. Its connections stay open however long they idle: a
    // burst after a quiet spell would otherwise wait for new backends to start (tens of ms each,
    // the early-burst tail of bench/ingest.ts, issue 19). Its statements are named, so each
    // connection parses them once: PostgreSQL's CPU at 200 webhooks/s fell from ~48 % to ~39 %
    // of a core (parse, analysis and planning of every statement, bench/ingest.ts).
    const pool = await createDatabase({
      url: ctx.databaseUrl,
      logger,
      applicationName: 'svc-orchestrator-ingest',
      maxPoolSize: INGEST_POOL_MAX,
      minPoolSize: INGEST_POOL_WARM,
      idleTimeoutMs: INGEST_POOL_IDLE_MS,
      namedStatements: true,
    });
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
      // This process's dispatcher and feed consumers are woken in-process at each commit; the
      // NOTIFY for other nodes folds a burst's commits (kernel/services/db/wakeups.ts).
      wakeups: new WakeupSender(pool, logger, { url: ctx.databaseUrl, lingerMs: WAKEUP_LINGER_MS }),
      // Read per delivery: `ctx.config` is the holder's current snapshot, so a reload applies it.
      queueMaxDepth: () => ctx.config.queue.maxDepth,
      retryPolicy: () => ctx.config.ingestRetry,
      ...(ctx.tracing === undefined ? {} : { tracing: ctx.tracing }),
    });
    // Cached sources and registrations are dropped when another process (svc-admin, another
    // node) changes them; a listener that lost its connection drops everything.
    const listener = await createListener({ url: ctx.databaseUrl, logger });
    const clearAll = (): void => {
      pipeline.sources.clear();
      pipeline.registrations.clear();
    };
    await watchSources(listener, clearAll, logger);
    await watchTrustPolicies(listener, pipeline.trustPolicies, logger);
    await listener.listen(INGEST_EVENTS_CHANNEL, (payload) => {
      if (payload.includes('registration.updated')) pipeline.registrations.clear();
    });
    deps.onStop(async () => {
      await listener.close();
      // Payload objects still queued are written before the process goes.
      const drained = await pipeline.eventLog.drain(5000);
      const left = pipeline.eventLog.close();
      if (!drained || left > 0) logger.warn({ left }, 'event-log payloads left unwritten or unconfirmed at stop (recorded storage_failed)');
      await pipeline.wakeups.idle();
      await pool.end();
    });
    // The event log for operators (`svc-admin deliveries`), on every node.
    await ctx.http.register(deliveryRoutes({ pool: ctx.db, auth: deps.get(adminAuthRef) }));
    // An org's trust policy, applied by the trust step (docs/trust-policy.md).
    await ctx.http.register(trustPolicyRoutes({ pool: ctx.db, nodeId: ctx.nodeId, auth: deps.get(adminAuthRef) }));
    const cluster = deps.getOptional(clusterServiceRef);
    const retention = startEventLogRetention({
      pool: ctx.db,
      logger,
      metrics: ctx.metrics,
      warmDays: ctx.config.eventLog.warmRetentionDays,
      ...(cluster !== undefined ? { cluster } : {}),
    });
    deps.onStop(() => retention.stop());
    const released = await releaseInterrupted(ctx.db, ctx.nodeId);
    if (released > 0) logger.warn({ released }, 'deliveries interrupted by the last stop are replayable again');
    // Deliveries kept after a passing failure (retry/store.ts), retried by whichever node is free.
    const retries = startRetryWorker({
      pool: ctx.db,
      logger,
      nodeId: ctx.nodeId,
      ingest: (delivery) => pipeline.ingestDelivery(delivery),
      pollMs: Math.min(1000, ctx.config.ingestRetry.baseMs),
    });
    deps.onStop(() => retries.stop());

    if (ctx.config.platform.url === undefined) {
      await ctx.http.register(webhookRoutes(pipeline));
      logger.info('independent mode: serving webhooks at /webhook/:orgId/:providerKind and /webhook/:orgId/generic/:sourceId');
    }
    return [provide(ingestPipelineRef, pipeline)];
  },
};
