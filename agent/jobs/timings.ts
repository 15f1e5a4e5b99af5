// Where a job's set-up time goes: named phases in milliseconds, logged at debug level when the
// first step starts (`job set-up timings`) so operators and bench/dispatch-to-step.ts can see
// which phase dominates without a profiler.
import { nowMs } from '../../core/tracing/index.ts';

export class SetupTimings {
  readonly #start = performance.now();
  #last = this.#start;
  readonly #phases: Record<string, number> = {};
  /** Each closed phase with its bounds in epoch ms (a traced job's phase spans, docs/tracing.md). */
  onPhase: ((name: string, start: number, end: number) => void) | undefined;
  /** When the job started and the last phase ended, epoch ms on the trace clock (core/tracing nowMs). */
  readonly startedAt = nowMs();
  #lastAt = this.startedAt;

  /** Close the phase that ran since the previous mark (or the start) under `name`. */
  mark(name: string): void {
    const now = performance.now();
    this.#phases[name] = Math.round(((this.#phases[name] ?? 0) + now - this.#last) * 10) / 10;
    if (this.onPhase !== undefined) {
      const at = nowMs();
      this.onPhase(name, this.#lastAt, at);
      this.#lastAt = at;
    }
    this.#last = now;
  }

  /** Record a phase measured elsewhere (e.g. one that ran in parallel). */
  set(name: string, ms: number): void {
    this.#phases[name] = Math.round(ms * 10) / 10;
  }

  /** Phases so far plus `total` (ms since the job started). */
  snapshot(): Record<string, number> {
    return { ...this.#phases, total: Math.round((performance.now() - this.#start) * 10) / 10 };
  }
}
