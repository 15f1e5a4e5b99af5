// NOTIFY channels of the dispatch queue. Anything that makes jobs `queued` calls
// `notifyJobsQueued(tx)` inside the same transaction, so dispatchers wake only once the rows are
// visible.
import type { CommonQueryMethods } from 'slonik';
import type { OrchestratorToAgent } from '../../../schemas/wire/agent.ts';
import { notify } from '../../services/db/index.ts';

/** Queued jobs appeared (or may have): every node's dispatcher runs a pass. */
export const JOBS_CHANNEL = 'svc_jobs';
/** Gates to pass, runs to admit, holds to act on: every node's run-control worker runs a pass. */
export const RUN_CONTROL_CHANNEL = 'svc_run_control';
/** A message for an agent that may be connected to another node (`job.cancel`). */
export const AGENT_COMMANDS_CHANNEL = 'svc_agent_cmd';

/**
 * Payload on AGENT_COMMANDS_CHANNEL that carries a whole message (a step hold's decision); the
 * node holding the agent's socket sends it as is. `job.cancel` keeps its own shape (AgentCommand).
 */
export interface AgentMessageCommand {
  agentId: string;
  message: OrchestratorToAgent;
}

/** Sends `message` to `agentId` from whichever node holds its socket; delivered at commit. */
export async function notifyAgent(tx: CommonQueryMethods, agentId: string, message: OrchestratorToAgent): Promise<void> {
  await notify(tx, AGENT_COMMANDS_CHANNEL, { agentId, message } satisfies AgentMessageCommand);
}

/** Wake every dispatcher; delivered only if the surrounding transaction commits. */
export async function notifyJobsQueued(tx: CommonQueryMethods): Promise<void> {
  await notify(tx, JOBS_CHANNEL, '');
}
