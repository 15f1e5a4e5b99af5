// The agents connected to THIS node. Other nodes have their own; the `agents` table says which
// node holds an agent's current session.
import type { OrchestratorToAgent } from '../../../schemas/wire/agent.ts';

export interface AgentSession {
  readonly agentId: string;
  /** New per registration; matches `agents.session_id` while this connection is the current one. */
  readonly sessionId: string;
  readonly labels: readonly string[];
  readonly labelSet: ReadonlySet<string>;
  readonly ephemeral: boolean;
  readonly os: string;
  readonly arch: string;
  /** The wire protocol it registered with: jobs with newer fields skip it (protocol-gap.ts). */
  readonly protocolVersion: number;
  /** Jobs this agent holds (dispatched, running or reattached). */
  readonly activeJobs: Set<string>;
  /** Jobs it may hold at once (one for now). */
  readonly capacity: number;
  /** An ephemeral agent takes one job in its life. */
  dispatchedCount: number;
  lastDispatchAt: number;
  /** Resolves once the frame is handed to the socket; rejects when the socket cannot take it. */
  send(message: OrchestratorToAgent): Promise<void>;
  close(code: number, reason: string): void;
}

export class AgentRegistry {
  readonly #sessions = new Map<string, AgentSession>();

  get(agentId: string): AgentSession | undefined {
    return this.#sessions.get(agentId);
  }

  /** Adds a session; returns the one it replaced (same agent reconnecting), if any. */
  add(session: AgentSession): AgentSession | undefined {
    const previous = this.#sessions.get(session.agentId);
    this.#sessions.set(session.agentId, session);
    return previous === session ? undefined : previous;
  }

  /** Removes `session` if it is still the agent's current one. */
  remove(session: AgentSession): boolean {
    if (this.#sessions.get(session.agentId) !== session) return false;
    this.#sessions.delete(session.agentId);
    return true;
  }

  isCurrent(session: AgentSession): boolean {
    return this.#sessions.get(session.agentId) === session;
  }

  list(): AgentSession[] {
    return [...this.#sessions.values()];
  }

  /** Sessions with free capacity, least recently dispatched first. */
  idle(): AgentSession[] {
    return this.list()
      .filter((s) => s.activeJobs.size < s.capacity && !(s.ephemeral && s.dispatchedCount > 0))
      .sort((a, b) => a.lastDispatchAt - b.lastDispatchAt);
  }

  get size(): number {
    return this.#sessions.size;
  }
}
