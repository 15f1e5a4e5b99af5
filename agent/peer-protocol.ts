// What the agent may send to the orchestrator it is registered with. Agent messages are strict
// objects (schemas/wire/agent.ts): an orchestrator of an older wire protocol refuses a message
// carrying a field it does not know, and a refused `job.status` would lose the job's result. So a
// field newer than the orchestrator's protocol (its `agent.registered` `protocolVersion`) is left
// out of what goes on the wire; the agent keeps running as it would for a current orchestrator.
import { JOB_PHASES_PROTOCOL, type AgentToOrchestrator } from '../schemas/wire/agent.ts';
import { EXIT_CODE_PROTOCOL } from '../schemas/wire/relay.ts';

/** `message` as an orchestrator speaking `protocol` accepts it (the same object when nothing goes). */
export function forPeerProtocol(message: AgentToOrchestrator, protocol: number): AgentToOrchestrator {
  if (message.type === 'job.status' && message.phases !== undefined && protocol < JOB_PHASES_PROTOCOL) {
    const { phases: _dropped, ...older } = message;
    return forPeerProtocol(older, protocol);
  }
  if (protocol >= EXIT_CODE_PROTOCOL) return message;
  if (message.type === 'step.status' && message.exitCode !== undefined) {
    const { exitCode: _dropped, ...older } = message;
    return older;
  }
  if (message.type === 'job.status' && (message.exitCode !== undefined || message.steps.some((s) => s.exitCode !== undefined))) {
    const { exitCode: _dropped, steps, ...older } = message;
    return { ...older, steps: steps.map(({ exitCode: _code, ...step }) => step) };
  }
  return message;
}
