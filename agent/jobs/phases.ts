// A job's set-up phases as wall-clock spans (source restore, checkout and its parts, overlay,
// dependencies), reported on `job.status` (`phases`, protocol 5) for the dashboard's timeline.
// SetupTimings keeps the monotonic per-phase totals operators read in the log; these are the
// same phases placed in time, so they line up with the steps' times and the orchestrator's.
import { MAX_JOB_PHASES, type JobPhase } from '../../schemas/wire/agent.ts';

const iso = (ms: number): string => new Date(ms).toISOString();

export class PhaseLog {
  readonly #phases = new Map<string, JobPhase>();

  /** Run `work` as phase `name`; it ends when `work` settles, failed or not (the time it cost). */
  async time<T>(name: string, work: () => Promise<T>): Promise<T> {
    const start = Date.now();
    try {
      return await work();
    } finally {
      this.record(name, start, Date.now());
    }
  }

  /** Consecutive parts of a phase (`checkout.fetch`, …): each call closes the part since the previous one. */
  parts(phase: string): (part: string) => void {
    let last = Date.now();
    return (part) => {
      const now = Date.now();
      this.record(`${phase}.${part}`, last, now);
      last = now;
    };
  }

  record(name: string, start: number, end: number): void {
    if (this.#phases.size >= MAX_JOB_PHASES && !this.#phases.has(name)) return;
    this.#phases.set(name, { name, startedAt: iso(start), finishedAt: iso(Math.max(start, end)) });
  }

  /** The field for `job.status`: nothing while no phase ended. */
  wire(): { phases?: JobPhase[] } {
    return this.#phases.size === 0 ? {} : { phases: [...this.#phases.values()] };
  }
}
