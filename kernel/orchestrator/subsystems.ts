// The orchestrator's subsystems. Each lives in its own folder and declares what it provides and
// needs (service-refs.ts); the app starts them in the order that graph gives, so this list is a
// set: its order only breaks ties (subsystems free to start together start in this order).
import type { Subsystem } from './context.ts';
import { cachesSubsystem } from './caches/index.ts';
import { dispatchSubsystem } from './dispatch/index.ts';
import { eventsSubsystem } from './events/index.ts';
import { identitySubsystem } from './identity/subsystem.ts';
import { ingestSubsystem } from './ingest/subsystem.ts';
import { relayLinkSubsystem } from './relay-link/subsystem.ts';
import { runsSubsystem } from './runs/subsystem.ts';
import { schedulingSubsystem } from './scheduling/index.ts';
import { checkoutAuthSubsystem } from './sources/checkout-auth.ts';

export const ORCHESTRATOR_SUBSYSTEMS: readonly Subsystem[] = [
  identitySubsystem,
  ingestSubsystem,
  dispatchSubsystem,
  // Checkout credentials from each run's source provider.
  checkoutAuthSubsystem,
  cachesSubsystem,
  eventsSubsystem,
  // Run deadlines: cancels runs past their workflow timeout.
  schedulingSubsystem,
  runsSubsystem,
  // Linked mode only: relayed deliveries to ingest, relayed dashboard requests to runs.
  relayLinkSubsystem,
];
