// Which queued jobs get a scale-up this pass: pure, so the rules read in one place. A job needs
// one when no online agent can take it: a static agent whose labels cover the job always can (it
// frees up), unless it speaks a wire protocol older than the job's fields need
// (dispatch/protocol-gap.ts); an ephemeral agent that has not taken its one job covers one job
// only, and so does a scale-up still waiting for its agent. The dispatcher gives an agent
// whichever queued job it satisfies first, not the one it was started for, so waiting scale-ups
// cover jobs by labels: a job keeps its own waiting scale-up first, the others are shared out in
// queue order. The first scaler (config order) whose agents' label set covers an uncovered job
// and that is within its limits is asked.
import type { ResolvedScaler } from '../../../core/scalers/config-file.ts';
import { satisfies } from '../dispatch/labels.ts';
import { orderByRouting, type JobRouting } from '../dispatch/routing.ts';
import { speaks } from '../dispatch/protocol-gap.ts';

export interface PlanJob {
  id: string;
  /** The job's `runsOn` plus the container sandbox a container job implies. */
  matchers: readonly string[];
  /** The job's prefer/avoid: among the scalers that serve it, the order they are tried in. */
  routing?: JobRouting | null;
  /** The wire protocol its fields need (dispatch/protocol-gap.ts): an older agent does not cover it. */
  protocol?: number;
}

export interface OnlineAgent {
  id: string;
  labels: ReadonlySet<string>;
  ephemeral: boolean;
  /** The protocol it registered with; null or absent: unknown, counted as able. */
  protocol?: number | null;
}

export interface ScalerUsage {
  /** Agents alive or starting (all nodes). */
  live: number;
  /** Scale-ups in the last 60 s (all nodes). */
  startedLastMinute: number;
}

export interface WaitingScaleUp {
  jobId: string | null;
  agentId: string | null;
  scaler: string;
}

export interface PlannedScaleUp {
  jobId: string;
  scaler: ResolvedScaler;
}

export interface PlanInput {
  /** Queued, dispatchable jobs in queue order. */
  jobs: readonly PlanJob[];
  /** Connected agents that can still take a job (ephemeral ones that took theirs are left out). */
  agents: readonly OnlineAgent[];
  /** Scale-ups still waiting for their agent to take a job (any node). */
  waiting: readonly WaitingScaleUp[];
  scalers: readonly ResolvedScaler[];
  usage: ReadonlyMap<string, ScalerUsage>;
}

export interface Plan {
  scaleUps: PlannedScaleUp[];
  /** Jobs a scaler serves but whose every serving scaler is at a limit (they wait). */
  deferred: string[];
}

export function planScaleUps(input: PlanInput): Plan {
  const statics = input.agents.filter((a) => !a.ephemeral);
  // An agent of a waiting scale-up is counted once, as that scale-up.
  const waitingAgents = new Set(input.waiting.flatMap((w) => (w.agentId === null ? [] : [w.agentId])));
  const spare = input.agents.filter((a) => a.ephemeral && !waitingAgents.has(a.id));
  const gates = new Map(input.scalers.map((s) => [s.name, s.gate] as const));
  // Scale-ups of a scaler no longer configured are being reaped: they cover nothing.
  const pending = input.waiting.filter((w) => gates.has(w.scaler));
  const queued = new Set(input.jobs.map((j) => j.id));
  const own = new Set<string>();
  for (let i = pending.length - 1; i >= 0; i -= 1) {
    const jobId = pending[i]!.jobId;
    if (jobId !== null && queued.has(jobId) && !own.has(jobId)) {
      own.add(jobId);
      pending.splice(i, 1);
    }
  }
  const usage = new Map<string, ScalerUsage>();
  for (const s of input.scalers) usage.set(s.name, { ...(input.usage.get(s.name) ?? { live: 0, startedLastMinute: 0 }) });
  const scaleUps: PlannedScaleUp[] = [];
  const deferred: string[] = [];
  for (const job of input.jobs) {
    if (own.has(job.id)) continue;
    const covers = (a: OnlineAgent): boolean => speaks(a.protocol, job.protocol ?? 0) && satisfies(job.matchers, a.labels);
    if (statics.some(covers)) continue;
    const free = spare.findIndex(covers);
    if (free >= 0) {
      spare.splice(free, 1);
      continue;
    }
    const shared = pending.findIndex((w) => satisfies(job.matchers, gates.get(w.scaler) as readonly string[]));
    if (shared >= 0) {
      pending.splice(shared, 1);
      continue;
    }
    const serving = orderByRouting(
      input.scalers.filter((s) => satisfies(job.matchers, s.gate)),
      (s) => s.gate,
      job.routing,
    );
    if (serving.length === 0) continue;
    const scaler = serving.find((s) => {
      const u = usage.get(s.name) as ScalerUsage;
      return u.live < s.maxAgents && u.startedLastMinute < s.startsPerMinute;
    });
    if (scaler === undefined) {
      deferred.push(job.id);
      continue;
    }
    const u = usage.get(scaler.name) as ScalerUsage;
    u.live += 1;
    u.startedLastMinute += 1;
    scaleUps.push({ jobId: job.id, scaler });
  }
  return { scaleUps, deferred };
}
