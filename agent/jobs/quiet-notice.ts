// "still running (60 s)": a step (or the job's set-up) that prints nothing for a whole interval
// gets one system line in its log, and another after each further quiet interval, so a long
// silent `npm install` reads as alive in `svc run --local` and in the run's log instead of as a
// hang. Any line of the job's log restarts the quiet time; waiting for a step's approval is not
// running, so the notices pause while the agent waits for that decision.

/** Default quiet interval before a notice (docs/agent.md "Job logs"). */
export const QUIET_NOTICE_MS = 60_000;

export interface QuietNoticeOptions {
  /** Quiet time before a notice; tests pass a short one instead of waiting a minute. */
  everyMs?: number;
  /** Writes the notice as a system line of the current step. */
  notice(text: string): void;
  /** Monotonic milliseconds (performance.now by default). */
  now?: () => number;
}

export class QuietNotice {
  readonly #every: number;
  readonly #notice: (text: string) => void;
  readonly #now: () => number;
  #stepStarted: number;
  #lastOutput: number;
  #paused = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;

  constructor(options: QuietNoticeOptions) {
    this.#every = Math.max(1, options.everyMs ?? QUIET_NOTICE_MS);
    this.#notice = options.notice;
    this.#now = options.now ?? (() => performance.now());
    this.#stepStarted = this.#now();
    this.#lastOutput = this.#stepStarted;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#stepStarted = this.#now();
    this.#lastOutput = this.#stepStarted;
    this.#arm(this.#every);
  }

  /** A step began: its running time counts from now. */
  step(): void {
    this.#stepStarted = this.#now();
    this.#lastOutput = this.#stepStarted;
  }

  /** The job's log got a line. */
  output(): void {
    this.#lastOutput = this.#now();
  }

  /** Not running while `wait` is pending (a step's approval); quiet time restarts after it. */
  async pauseDuring<T>(wait: Promise<T>): Promise<T> {
    this.#paused++;
    try {
      return await wait;
    } finally {
      this.#paused--;
      this.#lastOutput = this.#now();
    }
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#check(), ms);
    // The job's own work keeps the process alive; this timer alone must not.
    this.#timer.unref();
  }

  #check(): void {
    if (this.#stopped) return;
    const now = this.#now();
    if (this.#paused > 0) {
      this.#arm(this.#every);
      return;
    }
    if (now - this.#lastOutput >= this.#every) {
      this.#lastOutput = now;
      this.#notice(`still running (${Math.round((now - this.#stepStarted) / 1000)} s)`);
    }
    this.#arm(Math.max(1, this.#every - (this.#now() - this.#lastOutput)));
  }
}
