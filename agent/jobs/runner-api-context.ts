// What a runner api handler gets from the job it serves. Its own module so the handlers
// (runner-api.ts, artifacts.ts, attest.ts) can share it without importing one another in a cycle.
import type { AgentToOrchestrator, OrchestratorToAgent } from '../../schemas/wire/agent.ts';
import type { SecretSet } from '../logs/masker.ts';
import type { StepDecision } from './step-approval.ts';

export type OrchestratorRequest = (message: AgentToOrchestrator & { requestId: string }) => Promise<OrchestratorToAgent>;

export interface RunnerApiContext {
  jobId: string;
  workspace: string;
  scratch: string;
  secrets: SecretSet;
  request: OrchestratorRequest;
  /** Messages that have no response. */
  send(message: AgentToOrchestrator): void;
  signal: AbortSignal;
  /** A step-hold decision the orchestrator pushed, or null after `ms` (step-approval.ts). */
  awaitStepDecision?: (index: number, ms: number) => Promise<StepDecision | null>;
}
