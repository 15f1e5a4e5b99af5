// The dispatch subsystem: agent WebSocket endpoint, queue and claims, job status handling,
// needs progression, recovery of disconnected agents, cancellation.
//
// Public API (other subsystems):
//   notifyJobsQueued(tx)                       wake every dispatcher after making jobs `queued`
//   cancelRun(ctx, runId, cancelledBy)         → { cancelledJobs }
//   cancelJob(ctx, jobId, cancelledBy)         → { cancelledJobs }
//   getDispatchService(ctx)                    this node's DispatchService (after start):
//     .handle(type, handler)                   answer agent requests (oidc.token.request, cache.*, event.emit)
//     .setSourceAuthResolver(fn)               checkout credentials for runs with a source
//     .registry                                agents connected to this node
//     .sendToAgent(agentId, message)           send to an agent connected here
import type { OrchestratorContext, Subsystem } from '../context.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { identityServiceOf } from '../identity/subsystem.ts';
import { registerAgentEndpoint } from './endpoint.ts';
import { DispatchService, type DispatchTuning } from './service.ts';

export { notifyJobsQueued, JOBS_CHANNEL, AGENT_COMMANDS_CHANNEL } from './notify.ts';
export { cancelRun, cancelJob, cancelRunIn, cancelRunTx, cancelJobIn, type CancelResult, type CancelRunOptions, type AgentCommand } from './cancel.ts';
export { DispatchService, type AgentRequestHandler, type DelegatedType, type DispatchTuning } from './service.ts';
export { AgentRegistry, type AgentSession } from './registry.ts';
export { effectiveLabels, satisfies, parseMatcher, AUTO_LABEL_PREFIX } from './labels.ts';
export { NO_JOBS_DISPATCHED, noJobsReason } from './queue.ts';
export { recoveryExpiredReason, recoveryWindowMs } from './recovery.ts';
export { progressRun, TERMINAL_JOB_STATUSES } from './progression.ts';
export { AGENT_CONNECT_PATH } from './endpoint.ts';
export { createAgentToken, listAgentTokens, revokeAgentToken, checkAgentToken, hashAgentToken, AGENT_TOKEN_PREFIX } from './tokens.ts';
export type { SourceAuthResolver, SourceAuthRequest } from './message.ts';

const services = new WeakMap<OrchestratorContext, DispatchService>();

/** This node's dispatch service; undefined before the dispatch subsystem started. */
export function getDispatchService(ctx: OrchestratorContext): DispatchService | undefined {
  return services.get(ctx);
}

function storageOf(ctx: OrchestratorContext): StorageExtensionPoint | undefined {
  try {
    return ctx.host.select('storage', ctx.config.storage.type);
  } catch {
    return undefined;
  }
}

/** A dispatch subsystem with non-default timings (tests, benchmarks). */
export function createDispatchSubsystem(tuning: DispatchTuning = {}): Subsystem {
  return {
    name: 'dispatch',
    async start(ctx) {
      const service = new DispatchService({
        ...tuning,
        pool: ctx.db,
        databaseUrl: ctx.databaseUrl,
        logger: ctx.logger.child({ subsystem: 'dispatch' }),
        metrics: ctx.metrics,
        nodeId: ctx.nodeId,
        maxReconnectDelayMs: ctx.config.agent.maxReconnectDelayMs,
        maxDispatchAttempts: ctx.config.cluster.maxDispatchAttempts,
        storage: () => storageOf(ctx),
        masterKeys: ctx.masterKeys,
      });
      // Identity mints when provenance signing is on; otherwise the spec's deferral. Looked up per
      // request so subsystem order does not matter; a handler registered with handle() replaces this.
      service.handle('oidc.token.request', async (agent, message) => {
        const identity = identityServiceOf(ctx);
        if (identity === undefined) return { type: 'oidc.token.response', requestId: message.requestId, deferred: true, code: 'unavailable' };
        return identity.answerOidcTokenRequest(agent.agentId, message);
      });
      await registerAgentEndpoint(ctx, service);
      await service.start();
      services.set(ctx, service);
      ctx.onStop(() => service.stop());
    },
  };
}

export const dispatchSubsystem: Subsystem = createDispatchSubsystem();
