// The orchestrator's subsystems, in start order. Each lives in its own folder.
import type { Subsystem } from './context.ts';
import { cachesSubsystem } from './caches/index.ts';
import { dispatchSubsystem } from './dispatch/index.ts';
import { eventsSubsystem } from './events/index.ts';
import { identitySubsystem } from './identity/subsystem.ts';
import { ingestSubsystem } from './ingest/subsystem.ts';
import { schedulingSubsystem } from './scheduling/index.ts';
import { checkoutAuthSubsystem } from './sources/checkout-auth.ts';

export const ORCHESTRATOR_SUBSYSTEMS: readonly Subsystem[] = [
  identitySubsystem,
  ingestSubsystem,
  dispatchSubsystem,
  // Checkout credentials from each run's source provider (needs dispatch started).
  checkoutAuthSubsystem,
  cachesSubsystem,
  eventsSubsystem,
  // Run deadlines: cancels runs past their workflow timeout.
  schedulingSubsystem,
];
