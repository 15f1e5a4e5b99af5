// The services orchestrator subsystems provide each other. Declared here, apart from the
// subsystems, so a subsystem can name what it needs without importing the one that provides it;
// the app orders subsystems from these declarations (core/wiring). Import the refs from here: a
// subsystem's index re-exporting them would close an import cycle through the types below.
import { createServiceRef } from '../../core/wiring/index.ts';
import type { AdminAuth } from './admin-auth/require-scope.ts';
import type { ClusterService } from './cluster/service.ts';
import type { DispatchService } from './dispatch/service.ts';
import type { IdentityService } from './identity/service.ts';
import type { IngestPipeline } from './ingest/pipeline.ts';
import type { RelayRequestHandler } from './runs/api/relay-handlers.ts';

/** The OIDC issuer; undefined when provenance signing is off (no `provenanceIssuer`). Subsystem `identity`. */
export const identityServiceRef = createServiceRef<IdentityService | undefined>('identity');

/** This node's dispatcher: agent connections, queue, `handle()` for agent requests. Subsystem `dispatch`. */
export const dispatchServiceRef = createServiceRef<DispatchService>('dispatch');

/** The webhook ingest pipeline (sources, providers, caches, ingestDelivery). Subsystem `ingest`. */
export const ingestPipelineRef = createServiceRef<IngestPipeline>('ingest-pipeline');

/** Answers the dashboard and CLI requests the relay forwards (run show/logs, rerun, cancel, payload). Subsystem `runs`. */
export const runsRelayHandlerRef = createServiceRef<RelayRequestHandler>('runs-relay-handler');

/** This node's place in the cluster: its id and whether it leads (schedules run on the leader only). Subsystem `cluster`. */
export const clusterServiceRef = createServiceRef<ClusterService>('cluster');

/** Operator admin authentication: `requireScope('<scope>')` for every admin route (docs/admin-api.md). Subsystem `admin-auth`. */
export const adminAuthRef = createServiceRef<AdminAuth>('admin-auth');
