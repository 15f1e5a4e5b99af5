// A dispatched job's spans (docs/tracing.md): the job span under the run's span (job.dispatch's
// traceparent), one span per set-up phase (work dir, source restore and checkout, content hash,
// dependencies, runner spawn and load), one per step under the id the step ran with as its
// TRACEPARENT, and the tail from the last step to the final report. Phases and steps follow
// each other, so a gap in the job span is time nothing here accounts for.
import { nowMs, type TraceSpan, type Tracing } from '../../core/tracing/index.ts';
import type { JobDispatch } from '../../schemas/wire/agent.ts';
import type { SetupTimings } from './timings.ts';

/** SetupTimings' phase names as span names. */
const PHASE_SPANS: Readonly<Record<string, string>> = {
  spare: 'warm runner',
  workDir: 'work dir',
  storeWait: 'checkout store wait',
  fetch: 'checkout fetch',
  materialise: 'checkout materialise',
  source: 'source restore and checkout',
  contentHash: 'content hash',
  deps: 'dependencies restore',
  workspace: 'workspace',
  spawn: 'runner spawn',
  runnerReady: 'runner load',
  firstStep: 'runner start',
  build: 'build job',
};

/** `cicd.pipeline.task.run.result` for a job's or step's status. */
function taskResult(status: string): string {
  return status === 'completed' ? 'success' : status === 'failed' ? 'failure' : status === 'cancelled' ? 'cancellation' : status === 'skipped' ? 'skip' : status;
}

export class JobTrace {
  readonly #tracing: Tracing;
  readonly #span: TraceSpan;
  readonly #dispatch: JobDispatch;
  /** Steps running: their span id (TRACEPARENT) and start. */
  readonly #running = new Map<number, { traceparent: string | undefined; start: number }>();
  /** End of the last phase or step: the tail span starts here. */
  #last: number;
  #stepsSeen = 0;

  private constructor(tracing: Tracing, span: TraceSpan, dispatch: JobDispatch, timings: SetupTimings) {
    this.#tracing = tracing;
    this.#span = span;
    this.#dispatch = dispatch;
    this.#last = timings.startedAt;
    timings.onPhase = (name, start, end) => this.#phase(PHASE_SPANS[name] ?? name, start, end);
  }

  /** Undefined when tracing is off or the orchestrator sent no trace context. */
  static start(tracing: Tracing | undefined, dispatch: JobDispatch, timings: SetupTimings): JobTrace | undefined {
    if (tracing === undefined || !tracing.enabled || dispatch.traceparent === undefined) return undefined;
    const config = dispatch.jobConfig;
    const span = tracing.start(`job ${config.job}`, {
      kind: 'consumer',
      parent: dispatch.traceparent,
      tracestate: dispatch.tracestate,
      start: timings.startedAt,
      attributes: {
        'cicd.pipeline.name': config.workflow,
        'cicd.pipeline.run.id': dispatch.runId,
        'cicd.pipeline.task.name': config.job,
        'cicd.pipeline.task.run.id': dispatch.jobId,
        'cicd.pipeline.task.type': config.build === true ? 'build' : config.isTestRun ? 'test' : undefined,
        'vcs.repository.name': config.repository,
        'vcs.ref.head.revision': config.sha,
        'vcs.ref.head.name': config.ref?.replace(/^refs\/(heads|tags)\//, '') ?? undefined,
        'svc.job.attempt': dispatch.attempt,
      },
    });
    return span.traceparent === undefined ? undefined : new JobTrace(tracing, span, dispatch, timings);
  }

  /** The job span's traceparent: the runner gives each step a span under it. */
  get traceparent(): string | undefined {
    return this.#span.traceparent;
  }

  /** A step span id for a step the agent runs itself (a build job's steps). */
  reserveStep(): string | undefined {
    return this.#tracing.reserve(this.#span.traceparent);
  }

  stepStarted(index: number, traceparent: string | undefined): void {
    const now = nowMs();
    // The runner's time between steps (outputs, checkpoints, the next step's rules) as its own
    // span; before the first step the set-up's `runner start` phase covers it.
    if (this.#stepsSeen > 0 && now > this.#last) this.#phase('between steps', this.#last, now);
    this.#stepsSeen += 1;
    this.#running.set(index, { traceparent, start: now });
  }

  stepEnded(index: number, name: string, status: string, reason: string | undefined): void {
    const started = this.#running.get(index);
    if (started === undefined) return; // skipped without running: no span
    this.#running.delete(index);
    const end = nowMs();
    this.#tracing.record(`step ${name}`, {
      reserved: started.traceparent,
      parent: this.#span,
      start: started.start,
      end,
      error: status === 'failed' ? (reason ?? 'failed') : undefined,
      attributes: {
        'cicd.pipeline.task.name': this.#dispatch.jobConfig.job,
        'cicd.pipeline.task.run.id': this.#dispatch.jobId,
        'svc.step.name': name,
        'svc.step.index': index,
        'cicd.pipeline.task.run.result': taskResult(status),
      },
    });
    this.#last = Math.max(this.#last, end);
  }

  /** The final report is written: the tail (hooks, runner exit, clean-up) and the job span end. */
  end(status: string, reason: string | undefined): void {
    const now = nowMs();
    if (now > this.#last) this.#phase('job finish', this.#last, now);
    this.#span.setAttributes({ 'cicd.pipeline.task.run.result': taskResult(status) });
    if (status === 'failed') this.#span.fail(reason ?? 'failed');
    this.#span.end(now);
  }

  #phase(name: string, start: number, end: number): void {
    this.#tracing.record(name, { parent: this.#span, start, end });
    this.#last = Math.max(this.#last, end);
  }
}
