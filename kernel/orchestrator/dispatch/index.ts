// The dispatch subsystem: agent WebSocket endpoint, queue and claims, job status handling,
// needs progression, recovery of disconnected agents, cancellation.
//
// Public API (other subsystems):
//   notifyJobsQueued(tx)                       wake every dispatcher after making jobs `queued`
//   cancelRun(ctx, runId, cancelledBy)         → { cancelledJobs }
//   cancelJob(ctx, jobId, cancelledBy)         → { cancelledJobs }
//   dispatchServiceRef (../service-refs.ts)    this node's DispatchService, provided to the
//                                              subsystems that need it (deps.get) and to
//                                              composition roots (orchestrator.get):
//     .handle(type, handler)                   answer agent requests (oidc.token.request, cache.*, event.emit)
//     .setSourceAuthResolver(fn)               checkout credentials for runs with a source
//     .registry                                agents connected to this node
//     .sendToAgent(agentId, message)           send to an agent connected here
import type { OrchestratorContext, Subsystem } from '../context.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { provide } from '../../../core/wiring/index.ts';
import { clusterServiceRef, dispatchServiceRef, identityServiceRef } from '../service-refs.ts';
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
    id: 'dispatch',
    provides: [dispatchServiceRef],
    // Identity mints when it is started and provenance signing is on; otherwise the spec's deferral.
    // The cluster's settings (attempts, sealed-secret back-off) when the cluster subsystem runs.
    optionalNeeds: [identityServiceRef, clusterServiceRef],
    async start(ctx, deps) {
      const cluster = deps.getOptional(clusterServiceRef);
      const service = new DispatchService({
        ...tuning,
        pool: ctx.db,
        databaseUrl: ctx.databaseUrl,
        logger: ctx.logger.child({ subsystem: 'dispatch' }),
        metrics: ctx.metrics,
        nodeId: ctx.nodeId,
        maxReconnectDelayMs: ctx.config.agent.maxReconnectDelayMs,
        maxDispatchAttempts: ctx.config.cluster.maxDispatchAttempts,
        sealedSecretsRetryBackoffMs: ctx.config.sealedSecretsRetryBackoffMs,
        // Read at use time: `ctx.config` is the holder's current snapshot, so a reload applies them.
        queueTimeoutMs: () => ctx.config.queue.timeoutMs,
        staleScanIntervalMs: () => ctx.config.staleDetector.scanIntervalMs,
        ...(cluster === undefined ? {} : { clusterSettings: () => cluster.settings.current() }),
        storage: () => storageOf(ctx),
        masterKeys: ctx.masterKeys,
        ...(ctx.tracing === undefined ? {} : { tracing: ctx.tracing }),
      });
      // A handler registered with handle() later replaces this one.
      const identity = deps.getOptional(identityServiceRef);
      service.handle('oidc.token.request', async (agent, message) => {
        if (identity === undefined) return { type: 'oidc.token.response', requestId: message.requestId, deferred: true, code: 'unavailable' };
        return identity.answerOidcTokenRequest(agent.agentId, message);
      });
      service.handle('attestation.create.request', async (agent, message) => {
        if (identity === undefined) {
          const error = { code: 'SVC_ERR_IDENTITY_OFF', message: 'provenance signing is off on this orchestrator (set SVC_ORCHESTRATOR_PROVENANCE_ISSUER); ctx.attestProvenance needs it' };
          return { type: 'attestation.create.response', requestId: message.requestId, error };
        }
        return identity.answerAttestationRequest(agent.agentId, message);
      });
      await registerAgentEndpoint(ctx, service);
      await service.start();
      deps.onStop(() => service.stop());
      return [provide(dispatchServiceRef, service)];
    },
  };
}

export const dispatchSubsystem: Subsystem = createDispatchSubsystem();
