// A job's step checkpoints as the agent keeps them (docs/agent.md "When an agent restarts
// mid-job"): each `runner.checkpoint` and each step that starts is written to the in-flight
// store, in order, so that a restarted agent resumes the job after its last finished step. A
// resumed job starts from the checkpoints the previous process left, carried to its new workspace.
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import { messageOf } from '../../core/errors.ts';
import type { StepResult } from '../../schemas/wire/agent.ts';
import type { JobProgress, StepCheckpoint } from '../../schemas/wire/runner.ts';
import { carryProgress } from './in-flight.ts';

export class ProgressTracker {
  readonly #resume: JobProgress | undefined;
  readonly #save: ((progress: JobProgress) => Promise<void>) | undefined;
  readonly #logger: Logger;
  #progress: JobProgress | undefined;
  #writes: Promise<void> = Promise.resolve();

  /** `resume`: what a previous process of this agent left; `save`: a static agent's store (none when ephemeral). */
  constructor(options: { resume?: JobProgress | undefined; save?: ((progress: JobProgress) => Promise<void>) | undefined; logger: Logger }) {
    this.#resume = options.resume;
    this.#save = options.save;
    this.#logger = options.logger;
  }

  /** The steps a previous process finished, as the job's step results (the final job.status lists them). */
  restoredResults(): Array<Static<typeof StepResult>> {
    return (this.#resume?.steps ?? []).map(({ name, status, startedAt, finishedAt, reason }) => ({
      name,
      status,
      ...(startedAt === undefined ? {} : { startedAt }),
      ...(finishedAt === undefined ? {} : { finishedAt }),
      ...(reason === undefined ? {} : { reason }),
    }));
  }

  /** Secret output values of restored steps: masked in this job's logs as before. */
  restoredSecrets(): string[] {
    return (this.#resume?.steps ?? []).flatMap((step) => (step.secretOutputs ?? []).map((key) => step.outputs?.[key]).filter((v): v is string => typeof v === 'string'));
  }

  /** The runner is about to start in `workspace`: `runner.start`'s `resume` field when resuming. */
  begin(workspace: string): { resume?: JobProgress } {
    this.#progress = this.#resume === undefined ? { workspace, steps: [] } : carryProgress(this.#resume, workspace);
    return this.#resume === undefined ? {} : { resume: this.#progress };
  }

  /** A step reported `running`: if the agent goes now, it is the interrupted step. */
  running(index: number, name: string): void {
    if (this.#progress === undefined || this.#progress.steps.some((s) => s.index === index)) return;
    this.#progress.running = { index, name };
    this.#write();
  }

  checkpoint(step: StepCheckpoint): void {
    if (this.#progress === undefined) return;
    this.#progress.steps = [...this.#progress.steps.filter((s) => s.index !== step.index), step];
    if (this.#progress.running?.index === step.index) delete this.#progress.running;
    this.#write();
  }

  /** Every write has landed (before the job's records are removed). */
  settled(): Promise<void> {
    return this.#writes;
  }

  #write(): void {
    const save = this.#save;
    if (save === undefined || this.#progress === undefined) return;
    const snapshot = structuredClone(this.#progress);
    this.#writes = this.#writes.then(() => save(snapshot)).catch((error: unknown) => this.#logger.warn({ err: messageOf(error) }, 'could not record the job progress'));
  }
}
