// Version skew between this orchestrator and its agents. An agent says which wire protocol it
// speaks in `agent.register` (`protocolVersion`); the floor (MIN_PROTOCOL_VERSION) still lets an
// agent one version behind connect. Some `jobConfig` fields are newer than that floor, and an
// older agent either ignores them (the `checkout` object accepts extra properties: a job asking
// for submodules would run without them, accepted and dropped) or refuses the whole dispatch
// (`install`: jobConfig is strict there). So a job using one of them is never given to an agent
// below the protocol that carries it: another agent takes it, or a scaler starts one, or the job
// fails at once naming the agents and the field (the sandbox-gap case's mechanism, queue.ts).
// `retry.exitCodes` is not a dispatch field but the same kind of gap the other way: an agent
// below protocol 5 never reports a failing command's exit code, so a job whose retry policy
// lists exit codes would run there and never be retried for one (docs/run-states.md "Retries").
import { packageVersion } from '../../../core/package-info.ts';
import { UnavailableError } from '../../../core/errors.ts';
import { satisfies } from './labels.ts';

/** The first protocol version each field travels in; a field not listed is older than the floor. */
export const FEATURE_PROTOCOL: Readonly<Record<string, number>> = {
  'checkout.submodules': 4,
  'checkout.lfs': 4,
  'container.options': 4,
  install: 4,
  'retry.exitCodes': 5,
};

/** What an older agent lacks, where the field's name alone does not say it. */
const FEATURE_NOTE: Readonly<Record<string, string>> = {
  'retry.exitCodes': "A retry on exit codes needs the agent to report the failing command's exit code, which agents below protocol 5 do not",
};

/** Agents named in one reason; the rest are counted. */
const NAMED_AGENTS = 5;

/**
 * The parts of a queued job that decide its wire fields, read with the queue page (queue.ts):
 * they mirror what message.ts puts in `jobConfig`.
 */
export interface WireParts {
  kind: string;
  /** The lock job entry's `checkout`. */
  checkout: unknown;
  /** The lock job entry's `container` (`{ image, options }`, or a bare image in older locks). */
  container: unknown;
  /** The workflow's `registries` and `installEnv` (lock entry, workflow level). */
  registries: unknown;
  install_env: unknown;
  /** The lock job entry's `retry` policy. */
  retry: unknown;
}

/** The protocol-gated `jobConfig` fields this job's dispatch carries (message.ts builds the same). */
export function wireFeatures(parts: WireParts): string[] {
  const out: string[] = [];
  // message.ts sends `checkout` only for non-build jobs whose lock entry sets `enabled`.
  const checkout = parts.checkout as { enabled?: unknown; submodules?: unknown; lfs?: unknown } | null;
  if (parts.kind !== 'build' && typeof checkout?.enabled === 'boolean') {
    if (checkout.submodules === true) out.push('checkout.submodules');
    if (checkout.lfs === true) out.push('checkout.lfs');
  }
  const container = parts.container as { options?: unknown } | null;
  if (typeof container === 'object' && container !== null && Array.isArray(container.options) && container.options.length > 0) out.push('container.options');
  const nonEmpty = (v: unknown): boolean => Array.isArray(v) && v.length > 0;
  if (parts.kind !== 'build' && (nonEmpty(parts.registries) || nonEmpty(parts.install_env))) out.push('install');
  // Retries apply to workflow jobs only (retry.ts), never to builds or scheduling pseudo-jobs.
  const retry = parts.retry as { exitCodes?: unknown } | null;
  if (parts.kind === 'job' && typeof retry === 'object' && retry !== null && nonEmpty(retry.exitCodes)) out.push('retry.exitCodes');
  return out;
}

/** The lowest protocol an agent must speak to be given a job with these fields. */
export function protocolFloor(features: readonly string[]): number {
  return features.reduce((floor, f) => Math.max(floor, FEATURE_PROTOCOL[f] ?? 0), 0);
}

/**
 * Whether an agent speaking `version` carries every field. Null (an agents row written by an
 * orchestrator before the column existed, whose node decides for its own sessions) is not held
 * against it: a job is never failed on a guess.
 */
export function speaks(version: number | null | undefined, floor: number): boolean {
  return version === null || version === undefined || version >= floor;
}

export interface VersionedAgentRow {
  id: string;
  labels: string[];
  protocol_version: number | null;
}

/**
 * The error a job fails with when every online agent carrying its labels speaks a protocol below
 * its fields' and no configured scaler starts one: the code, each agent with its version and the
 * fields it does not carry, and the release to upgrade to.
 */
export function protocolTooOldError(features: readonly string[], matchers: readonly string[], runsOn: readonly string[], agents: readonly VersionedAgentRow[]): UnavailableError {
  const floor = protocolFloor(features);
  const carrying = agents.filter((a) => satisfies(matchers, a.labels) && !speaks(a.protocol_version, floor)).sort((a, b) => a.id.localeCompare(b.id));
  const line = (a: VersionedAgentRow): string => {
    const missing = features.filter((f) => !speaks(a.protocol_version, FEATURE_PROTOCOL[f] ?? 0));
    return `agent ${a.id} speaks protocol ${a.protocol_version}, which does not carry ${missing.join(', ')}`;
  };
  const named = carrying.slice(0, NAMED_AGENTS).map(line);
  if (carrying.length > NAMED_AGENTS) named.push(`${carrying.length - NAMED_AGENTS} more`);
  const labels = runsOn.length === 0 ? 'any agent' : `the labels ${runsOn.join(', ')}`;
  const notes = features.flatMap((f) => (FEATURE_NOTE[f] === undefined ? [] : [`${FEATURE_NOTE[f]}. `])).join('');
  return new UnavailableError(
    'SVC_ERR_DISPATCH_AGENT_PROTOCOL_TOO_OLD',
    `No agent can run this job: it uses ${features.join(', ')} (wire protocol ${floor}), and every online agent with ${labels} is older: ${named.join('; ')}. ${notes}` +
      `No configured scaler starts an agent for it. Upgrade ${carrying.length === 1 ? 'it' : 'them'} to svc ${packageVersion()} (this orchestrator's release) or later, which speaks protocol ${floor} (docs/agent.md "Mixed versions").`,
    { details: { features, protocol: floor, agents: carrying.map((a) => ({ id: a.id, protocolVersion: a.protocol_version })) } },
  );
}
