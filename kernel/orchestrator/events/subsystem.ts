// The events subsystem: stores what steps emit (`event.emit`, behind the circuit breaker) and runs
// this node's delivery loop (worker.ts), which turns every stored event into the runs of the
// registrations it matches. Also serves the DLQ admin routes.
import { Type, type Static } from 'typebox';
import type { EventEmit, EventEmitResponse } from '../../../schemas/wire/agent.ts';
import { createListener, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { isSvcError } from '../../../core/errors.ts';
import { activeJobOf } from '../caches/job-access.ts';
import type { OrchestratorContext, Subsystem } from '../context.ts';
import { notifyJobsQueued } from '../dispatch/notify.ts';
import { clusterServiceRef, dispatchServiceRef, ingestPipelineRef, adminAuthRef } from '../service-refs.ts';
import { checkChainDepth, OrgEventRate, recordRefusal, type EventLimits, type RefusalReason } from './breaker.ts';
import { configureCompletionLimits } from './completion.ts';
import { commitDeliveries, deliverEvent, prepareDelivery, ProviderKinds, type ConsumerDeps, type PreparedDelivery } from './consumer.ts';
import { dlqRoutes } from './routes.ts';
import { emitInternalEvent, INTERNAL_EVENTS_CHANNEL } from './emit.ts';
import { EventWorker } from './worker.ts';

const DepthRow = Type.Object({ chain_depth: Type.Number() });

export interface EmitGuard {
  limits: EventLimits;
  rate: OrgEventRate;
}

/** `event.emit` → `event.emit.response { requestId, deliveryId }`; refusals carry `error`. */
export async function answerEventEmit(
  pool: DatabasePool,
  agent: { agentId: string },
  message: Static<typeof EventEmit>,
  guard?: EmitGuard,
): Promise<Static<typeof EventEmitResponse>> {
  interface Refused { orgId: string; runId: string; jobId: string; depth: number; reason: RefusalReason; message: string }
  const refused: Refused[] = [];
  try {
    const stored = await pool.transaction(async (tx) => {
      // The share lock keeps the job from finishing between the check and the insert.
      const job = await activeJobOf(tx, agent.agentId, message.jobId, { lock: true, area: 'EVENT' });
      const run = await tx.one(sqlTyped(DepthRow)`SELECT chain_depth FROM runs WHERE id = ${job.run_id}`);
      try {
        // Depth first: an event the breaker refuses for depth takes no slot of the org's rate.
        if (guard !== undefined) {
          checkChainDepth(message.eventName, run.chain_depth, guard.limits);
          guard.rate.take(job.org_id, message.eventName);
        }
        return await emitInternalEvent(
          tx,
          { name: message.eventName, payload: message.payload, orgId: job.org_id, target: message.target ?? null, source: 'step', runId: job.run_id, jobId: job.job_id, chainDepth: run.chain_depth },
          guard?.limits,
        );
      } catch (error) {
        if (isSvcError(error) && (error.code === 'SVC_ERR_EVENT_CHAIN_TOO_DEEP' || error.code === 'SVC_ERR_EVENT_RATE_LIMITED')) {
          refused.push({ orgId: job.org_id, runId: job.run_id, jobId: job.job_id, depth: run.chain_depth, reason: error.code === 'SVC_ERR_EVENT_RATE_LIMITED' ? 'rate_limit' : 'chain_depth', message: error.message });
        }
        throw error;
      }
    });
    return { type: 'event.emit.response', requestId: message.requestId, deliveryId: stored.id };
  } catch (error) {
    if (!isSvcError(error)) throw error;
    const r = refused[0];
    // The emitter's transaction rolled back; the refusal is recorded on its own.
    if (r !== undefined) await recordRefusal(pool, { orgId: r.orgId, name: message.eventName, runId: r.runId, jobId: r.jobId, chainDepth: r.depth, reason: r.reason, detail: r.message });
    return { type: 'event.emit.response', requestId: message.requestId, error: { code: error.code, message: error.message } };
  }
}

export const eventsSubsystem: Subsystem = {
  id: 'events',
  needs: [dispatchServiceRef, ingestPipelineRef, adminAuthRef],
  // maxDispatchAttempts comes from the cluster settings when the cluster subsystem runs.
  optionalNeeds: [clusterServiceRef],
  async start(ctx: OrchestratorContext, deps): Promise<void> {
    const clusterService = deps.getOptional(clusterServiceRef);
    const dispatch = deps.get(dispatchServiceRef);
    const pipeline = deps.get(ingestPipelineRef);
    const logger = ctx.logger.child({ subsystem: 'events' });
    const { events, cluster } = ctx.config;
    const guard: EmitGuard = { limits: events, rate: new OrgEventRate(events.rateLimitPerOrgPerMinute) };
    configureCompletionLimits(events);
    dispatch.handle('event.emit', async (agent, message) => {
      const answer = await answerEventEmit(ctx.db, agent, message, guard);
      if (answer.error) logger.info({ agentId: agent.agentId, jobId: message.jobId, code: answer.error.code }, 'event.emit refused');
      return answer;
    });

    const consumer: ConsumerDeps = {
      pool: ctx.db,
      logger,
      nodeId: ctx.nodeId,
      checkCaches: (org, hash, lockfile) => pipeline.caches.check(org, hash, lockfile),
      notifyJobsQueued,
      registrations: pipeline.registrations,
      providerKinds: new ProviderKinds(),
    };
    const worker = new EventWorker({
      pool: ctx.db,
      logger,
      metrics: ctx.metrics,
      nodeId: ctx.nodeId,
      leaseDurationMs: cluster.leaseDurationMs,
      // Read at each decision: a cluster-settings change applies without a restart.
      get maxDispatchAttempts() {
        return clusterService?.settings.current().maxDispatchAttempts ?? cluster.maxDispatchAttempts;
      },
      retryBaseMs: events.retryBaseMs,
      retryMaxMs: events.retryMaxMs,
      deliver: (event) => deliverEvent(consumer, event),
      batch: {
        prepare: (event) => prepareDelivery(consumer, event),
        commit: (prepared) => commitDeliveries(consumer, prepared as PreparedDelivery[]),
      },
    });
    const listener = await createListener({ url: ctx.databaseUrl, logger });
    await listener.listen(INTERNAL_EVENTS_CHANNEL, () => worker.wake());
    listener.onGap(() => worker.wake());
    worker.start();
    await ctx.http.register(dlqRoutes({ pool: ctx.db, auth: deps.get(adminAuthRef) }));
    deps.onStop(async () => {
      await listener.close();
      await worker.stop();
    });
  },
};
