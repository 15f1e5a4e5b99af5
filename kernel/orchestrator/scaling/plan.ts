// Which queued jobs get a scale-up this pass: pure, so the rules read in one place. A job needs
// one when no online agent can take it: a static agent whose labels cover the job always can (it
// frees up); an ephemeral agent that has not taken its one job covers one job only. A job with a
// scale-up still waiting for its agent is covered too. The first scaler (config order) whose
// agents' label set covers the job and that is within its limits is asked.
import type { ResolvedScaler } from '../../../core/scalers/config-file.ts';
import { satisfies } from '../dispatch/labels.ts';

export interface PlanJob {
  id: string;
  /** The job's `runsOn` plus the container sandbox a container job implies. */
  matchers: readonly string[];
}

export interface OnlineAgent {
  id: string;
  labels: ReadonlySet<string>;
  ephemeral: boolean;
}

export interface ScalerUsage {
  /** Agents alive or starting (all nodes). */
  live: number;
  /** Scale-ups in the last 60 s (all nodes). */
  startedLastMinute: number;
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
  /** Jobs whose scale-up is still waiting for its agent. */
  waitingJobs: ReadonlySet<string>;
  /** Agents of those waiting scale-ups (kept for their job, not counted for another). */
  waitingAgents: ReadonlySet<string>;
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
  const spare = input.agents.filter((a) => a.ephemeral && !input.waitingAgents.has(a.id));
  const usage = new Map<string, ScalerUsage>();
  for (const s of input.scalers) usage.set(s.name, { ...(input.usage.get(s.name) ?? { live: 0, startedLastMinute: 0 }) });
  const scaleUps: PlannedScaleUp[] = [];
  const deferred: string[] = [];
  for (const job of input.jobs) {
    if (input.waitingJobs.has(job.id)) continue;
    if (statics.some((a) => satisfies(job.matchers, a.labels))) continue;
    const free = spare.findIndex((a) => satisfies(job.matchers, a.labels));
    if (free >= 0) {
      spare.splice(free, 1);
      continue;
    }
    const serving = input.scalers.filter((s) => satisfies(job.matchers, s.gate));
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
