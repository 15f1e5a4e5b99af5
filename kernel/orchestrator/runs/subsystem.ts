// The runs subsystem: the operator's run admin routes (`/api/v1/admin/runs…`) and the answers to
// the dashboard and CLI requests the relay forwards (run show/logs, rerun, cancel, payload).
// Re-run reads sources, providers and caches through the ingest pipeline, hence the need; the
// relay link (relay-link/subsystem.ts) hands it the relayed messages. The identity service, when
// provenance signing is on, gives the keys the run page's attestations are verified against.
import { provide } from '../../../core/wiring/index.ts';
import type { Subsystem } from '../context.ts';
import { adminAuthRef, identityServiceRef, ingestPipelineRef, runsRelayHandlerRef } from '../service-refs.ts';
import { relayRequestHandler } from './api/index.ts';
import { runAdminRoutes } from './routes.ts';

export const runsSubsystem: Subsystem = {
  id: 'runs',
  provides: [runsRelayHandlerRef],
  needs: [ingestPipelineRef, adminAuthRef],
  optionalNeeds: [identityServiceRef],
  async start(ctx, deps) {
    await ctx.http.register(runAdminRoutes({ pool: ctx.db, auth: deps.get(adminAuthRef) }));
    return [provide(runsRelayHandlerRef, relayRequestHandler(ctx, deps.get(ingestPipelineRef), deps.getOptional(identityServiceRef)))];
  },
};
