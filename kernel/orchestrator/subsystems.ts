// The orchestrator's subsystems, in start order. Each lives in its own folder.
import type { Subsystem } from './context.ts';
import { dispatchSubsystem } from './dispatch/index.ts';
import { identitySubsystem } from './identity/subsystem.ts';
import { ingestSubsystem } from './ingest/subsystem.ts';

export const ORCHESTRATOR_SUBSYSTEMS: readonly Subsystem[] = [identitySubsystem, ingestSubsystem, dispatchSubsystem];
