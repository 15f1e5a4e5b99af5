// A job whose labels online agents carry, but none of them offers the sandbox it needs (a
// container job, and the agents' only runtime is docker with no engine answering). Waiting cannot
// help: an agent probes its sandboxes once, at start. So the dispatcher fails the job at once,
// naming the sandbox, the agents and what each agent reported (`agent.register`
// `unavailableSandboxes`), as docs/sandboxes.md promises: "a container job fails ..., naming the
// runtime". A job no online agent carries the labels of keeps the "No jobs dispatched" wait (an
// agent may come), and so does one a configured scaler can start an agent for.
import { UnavailableError } from '../../../core/errors.ts';
import { satisfies } from './labels.ts';

const SANDBOX_LABEL = 'svc:sandbox:';
/** Agents named in one reason; the rest are counted. */
const NAMED_AGENTS = 5;

export interface SandboxNote {
  sandbox: string;
  missing: string;
  message: string;
}

export interface OnlineAgentRow {
  id: string;
  labels: string[];
  unavailable_sandboxes: SandboxNote[] | null;
}

export interface SandboxNeed {
  /** Sandbox names the job needs (`container`), from its `svc:sandbox:<name>` matchers. */
  sandboxes: string[];
  /** The job's other matchers. */
  rest: string[];
}

/** The sandboxes a job's matchers require, or null when they require none by exact label. */
export function sandboxNeed(matchers: readonly string[]): SandboxNeed | null {
  const sandboxes: string[] = [];
  const rest: string[] = [];
  for (const m of matchers) {
    if (m.startsWith(SANDBOX_LABEL) && !m.endsWith('*')) sandboxes.push(m.slice(SANDBOX_LABEL.length));
    else rest.push(m);
  }
  return sandboxes.length === 0 ? null : { sandboxes, rest };
}

function agentLine(agent: OnlineAgentRow, need: SandboxNeed): string {
  const labels = new Set(agent.labels);
  const lacking = need.sandboxes.filter((s) => !labels.has(`${SANDBOX_LABEL}${s}`));
  const whys = lacking.map((s) => {
    const note = (agent.unavailable_sandboxes ?? []).find((n) => n.sandbox === s);
    return note === undefined ? `${s} sandbox not installed (no reason reported)` : `${s} sandbox cannot run: ${note.message}`;
  });
  return `agent ${agent.id} (${whys.join('; ')})`;
}

/**
 * The error a job fails with: the code, the sandbox, the agents carrying its labels and what each
 * reported. `agents` are the online agents; those not carrying the job's other labels are left out.
 */
export function sandboxUnavailableError(need: SandboxNeed, runsOn: readonly string[], agents: readonly OnlineAgentRow[]): UnavailableError {
  const carrying = agents.filter((a) => satisfies(need.rest, a.labels)).sort((a, b) => a.id.localeCompare(b.id));
  const named = carrying.slice(0, NAMED_AGENTS).map((a) => agentLine(a, need));
  if (carrying.length > NAMED_AGENTS) named.push(`${carrying.length - NAMED_AGENTS} more`);
  const which = need.sandboxes.map((s) => `${s} (${SANDBOX_LABEL}${s})`).join(' and ');
  const labels = runsOn.length === 0 ? 'any agent' : `the labels ${runsOn.join(', ')}`;
  return new UnavailableError(
    'SVC_ERR_DISPATCH_SANDBOX_UNAVAILABLE',
    `No agent can run this job: it needs the ${which} sandbox, and no online agent with ${labels} offers it: ${named.join(', ')}. ` +
      'No configured scaler starts an agent that offers it. Make the runtime usable on one of these agents and restart it (an agent checks its sandboxes at start; docs/sandboxes.md), or add an agent that offers it.',
    { details: { sandboxes: need.sandboxes, agents: carrying.map((a) => a.id) } },
  );
}
