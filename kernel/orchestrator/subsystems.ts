// The orchestrator's subsystems. Each lives in its own folder and declares what it provides and
// needs (service-refs.ts); the app starts them in the order that graph gives, so this list is a
// set: its order only breaks ties (subsystems free to start together start in this order).
import type { Subsystem } from './context.ts';
import { adminAuthSubsystem } from './admin-auth/subsystem.ts';
import { artifactsSubsystem } from './artifacts/subsystem.ts';
import { auditSubsystem } from './audit/subsystem.ts';
import { billingSubsystem } from './billing/subsystem.ts';
import { cachesSubsystem } from './caches/index.ts';
import { clusterSubsystem } from './cluster/subsystem.ts';
import { configSubsystem } from './config/subsystem.ts';
import { dispatchSubsystem } from './dispatch/index.ts';
import { eventsSubsystem } from './events/index.ts';
import { forgeStatusSubsystem } from './forge-status/index.ts';
import { identitySubsystem } from './identity/subsystem.ts';
import { ingestSubsystem } from './ingest/subsystem.ts';
import { relayLinkSubsystem } from './relay-link/subsystem.ts';
import { runControlSubsystem } from './run-control/subsystem.ts';
import { runsSubsystem } from './runs/subsystem.ts';
import { scalingSubsystem } from './scaling/subsystem.ts';
import { schedulingSubsystem } from './scheduling/index.ts';
import { schedulesSubsystem } from './schedules/subsystem.ts';
import { reconcileSubsystem } from './reconcile/subsystem.ts';
import { checkoutAuthSubsystem } from './sources/checkout-auth.ts';
import { testResultsSubsystem } from './test-results/subsystem.ts';

export const ORCHESTRATOR_SUBSYSTEMS: readonly Subsystem[] = [
  // Admin authentication (requireScope) for every subsystem that serves admin routes.
  adminAuthSubsystem,
  // Shared config versions and reload (SIGHUP, admin route, cluster notifications).
  configSubsystem,
  // Membership and leader election first: schedules need to know who leads.
  clusterSubsystem,
  identitySubsystem,
  ingestSubsystem,
  dispatchSubsystem,
  // Scale-up of agents for queued jobs no online agent can take; reaping (scaler config).
  scalingSubsystem,
  // Checkout credentials from each run's source provider.
  checkoutAuthSubsystem,
  cachesSubsystem,
  // Run artifacts (ctx.artifacts): pre-signed uploads and downloads, retention sweep.
  artifactsSubsystem,
  // Test results (JUnit XML, TAP) the agents report per step; flakiness and quarantine.
  testResultsSubsystem,
  // Internal events: event.emit, and the delivery loop that turns events into runs.
  eventsSubsystem,
  // Cron schedules, fired by the cluster leader.
  schedulesSubsystem,
  // Run deadlines: cancels runs past their workflow timeout.
  schedulingSubsystem,
  // Approval holds, concurrency groups, the gates a ready job passes before it is queued.
  runControlSubsystem,
  runsSubsystem,
  // Run status back to the forge: check runs through the source's provider, run-status webhooks.
  forgeStatusSubsystem,
  // Linked mode only: relayed deliveries to ingest, relayed dashboard requests to runs.
  relayLinkSubsystem,
  // After downtime: deliveries the forge could not hand over are asked for again.
  reconcileSubsystem,
  // The audit trail: its admin route and retention pass (docs/audit.md).
  auditSubsystem,
  // The public plan catalogue (GET /api/v1/billing/plans).
  billingSubsystem,
];
