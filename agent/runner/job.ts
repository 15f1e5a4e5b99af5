// One job, start to result: workflow filter and rules, job rules, steps in order (rules, check /
// whenInSync, body, outputs), step and job hooks in the spec's order, job outputs, and the
// workflow-level hooks when runner.start asks for them. The path (success, failure, cancel) is
// fixed by the steps; hooks observe it and cannot change it, but a hook that fails makes the
// final status `failed` with a compound reason.
import { randomBytes } from 'node:crypto';
import type { Static, TObject } from 'typebox';
import { InputError, messageOf } from '../../core/errors.ts';
import type { Outcome } from '../../sdk/context.ts';
import type { Job } from '../../sdk/job.ts';
import type { Step } from '../../sdk/step.ts';
import type { Workflow } from '../../sdk/workflow.ts';
import { compileSchema, formatIssues, type SchemaCheck } from '../../schemas/validate.ts';
import type { JobProgress, RunnerResult, RunnerStart, StepCheckpoint } from '../../schemas/wire/runner.ts';
import { Activity, allActivities, guard } from './activity.ts';
import { RunnerErrorCode } from './errors.ts';
import { HookLevel, runHook, type HookRunner } from './hooks.ts';
import type { RunnerChannel } from './ipc.ts';
import type { LogSink } from './log-capture.ts';
import { notRunAgainReason, replayEffects } from './resume.ts';
import { evaluateRules, evaluateWorkflowFilter } from './rules.ts';
import { createStepContext, ruleContext, type JobRuntime } from './step-context.ts';
import { beginStepReports, collectStepTests, commandExitCode, discardStepReports } from './test-results.ts';

export type ResultMessage = Static<typeof RunnerResult>;
type StepStatus = 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';
type Path = 'success' | 'failure' | 'cancel' | 'skipped';

interface StepRecord {
  name: string;
  status: StepStatus | 'pending';
  startedAt?: string;
  finishedAt?: string;
  reason?: string;
  /** A failed step's failing command exit code (commandExitCode). */
  exitCode?: number;
}

const MAX_REASON = 10_000;
export const REASON_EARLIER_FAILED = 'an earlier step failed';
export const REASON_CANCELLED = 'the job was cancelled';

function clip(text: string): string {
  return text.length <= MAX_REASON ? text : `${text.slice(0, MAX_REASON - 1)}…`;
}

const schemaChecks = new WeakMap<object, SchemaCheck<TObject>>();
function outputsCheck(schema: TObject): SchemaCheck<TObject> {
  let check = schemaChecks.get(schema);
  if (check === undefined) {
    check = compileSchema(schema);
    schemaChecks.set(schema, check);
  }
  return check;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** A step's outputs: its schema's shape when it declares one, else any plain object it returned. */
function stepOutputs(step: Step, value: unknown, hint: string): Record<string, unknown> {
  const schema = step.options.outputs;
  if (schema === undefined) return isPlainObject(value) ? { ...value } : {};
  const checked = outputsCheck(schema).validate(value === undefined ? {} : value);
  if (!checked.ok) {
    throw new InputError(RunnerErrorCode.outputs, `outputs do not match the step's outputs schema: ${formatIssues(checked.issues)}${hint}`);
  }
  return { ...(checked.value as Record<string, unknown>) };
}

export interface RunnerJobOptions {
  start: RunnerStart;
  workflow: Workflow;
  job: Job;
  channel: RunnerChannel;
  sink: LogSink;
}

export class RunnerJob {
  readonly #start: RunnerStart;
  readonly #workflow: Workflow;
  readonly #job: Job;
  readonly #channel: RunnerChannel;
  readonly #sink: LogSink;
  readonly #rt: JobRuntime;
  readonly #records: StepRecord[];
  readonly #jobLevel = new HookLevel('job');
  readonly #workflowLevel = new HookLevel('workflow');
  readonly #hookRunner: HookRunner;
  #path: Path = 'success';
  #baseReason: string | undefined;
  readonly #hookFailures: string[] = [];
  #failedStep: string | undefined;
  /** The exit code of the command that failed #failedStep, when a command's exit failed it. */
  #failedExitCode: number | undefined;
  #outputs: Record<string, unknown> = {};
  #startedAt = Date.now();
  /** The step (or setup/outputs) activity a non-force cancel aborts; hooks are never in it. */
  #abortable: Activity | undefined;
  #cancel: { reason: string } | undefined;
  #jobTimedOut: string | undefined;
  #inHooks = false;
  /** Force cancel: nothing more runs (the result is sent without waiting for this run). */
  #forced = false;
  /** Indexes of the steps held for an approval (runner.start approvalSteps). */
  readonly #heldSteps: ReadonlySet<number>;
  /** Steps a previous runner of this job finished (runner.start resume): not run again. */
  readonly #restored = new Set<number>();

  constructor(options: RunnerJobOptions) {
    this.#start = options.start;
    this.#workflow = options.workflow;
    this.#job = options.job;
    this.#channel = options.channel;
    this.#sink = options.sink;
    this.#rt = {
      start: options.start,
      channel: options.channel,
      sink: options.sink,
      env: { ...options.start.env },
      stepOutputs: new Map(),
      noOutputsReason: new Map(),
      effects: [],
      tempRoot: undefined,
      tempCount: 0,
    };
    // No PATH from the agent: commands still need one to be found.
    if (this.#rt.env['PATH'] === undefined && process.env['PATH'] !== undefined) this.#rt.env['PATH'] = process.env['PATH'];
    this.#records = options.job.steps.map((s) => ({ name: s.name, status: 'pending' }));
    this.#heldSteps = new Set((options.start.approvalSteps ?? []).map((s) => s.index));
    this.#hookRunner = { sink: options.sink, defaultTimeoutMs: options.start.hookTimeoutMs, track: () => {} };
    if (options.start.resume !== undefined) this.#restore(options.start.resume);
  }

  /** The steps a previous runner finished: their records, outputs, env effects and the job's path. */
  #restore(resume: JobProgress): void {
    for (const checkpoint of resume.steps) {
      const record = this.#records[checkpoint.index];
      // Same dispatch, same tree: a mismatch means a different job definition; such a step runs.
      if (record === undefined || record.name !== checkpoint.name || this.#restored.has(checkpoint.index)) continue;
      this.#restored.add(checkpoint.index);
      const { name, status, reason } = checkpoint;
      Object.assign(record, { status, startedAt: checkpoint.startedAt, finishedAt: checkpoint.finishedAt, reason });
      replayEffects(this.#rt.env, checkpoint.effects);
      if (status === 'completed') {
        this.#rt.stepOutputs.set(name, Object.freeze({ ...checkpoint.outputs }));
        continue;
      }
      this.#rt.noOutputsReason.set(name, status === 'skipped' ? `it was skipped (${reason ?? ''})` : status === 'failed' ? 'it failed' : 'it was cancelled');
      if (status === 'failed' && this.#path === 'success') {
        this.#path = 'failure';
        this.#failedStep = name;
        this.#baseReason = `step "${name}" failed: ${reason ?? 'failed'}`;
      } else if (status === 'cancelled' && this.#path === 'success') {
        this.#path = 'cancel';
        this.#baseReason = reason ?? 'cancelled';
      }
    }
    const names = this.#records.filter((_, i) => this.#restored.has(i)).map((r) => r.name);
    this.#sink.line('(setup)', 'system', `resumed after an agent restart: ${names.length === 0 ? 'no step had finished' : `not run again: ${names.join(', ')}`}`);
  }

  /** What a restarted agent needs to resume after this step (runner.checkpoint). */
  #checkpoint(index: number, secretOutputs: ReadonlyMap<string, string>): void {
    const record = this.#records[index]!;
    if (record.status === 'pending' || record.status === 'running') return;
    const outputs = record.status === 'completed' ? this.#rt.stepOutputs.get(record.name) : undefined;
    const step: StepCheckpoint = {
      index,
      name: record.name,
      status: record.status,
      ...(record.startedAt === undefined ? {} : { startedAt: record.startedAt }),
      ...(record.finishedAt === undefined ? {} : { finishedAt: record.finishedAt }),
      ...(record.reason === undefined ? {} : { reason: clip(record.reason) }),
      ...(outputs === undefined ? {} : { outputs: { ...outputs } }),
      ...(secretOutputs.size === 0 ? {} : { secretOutputs: [...secretOutputs.keys()] }),
      effects: this.#rt.effects.splice(0),
    };
    this.#channel.send({ type: 'runner.checkpoint', step });
  }

  /** The step that was running when the agent went away: failed here instead of run again, unless it has a check. */
  #interrupted(index: number, step: Step): string | undefined {
    const running = this.#start.resume?.running;
    if (running === undefined || running.index !== index || running.name !== step.name) return undefined;
    const refused = notRunAgainReason(step.options.check !== undefined);
    if (refused === undefined) this.#sink.line(step.name, 'system', 'the agent restarted while this step was running: running it again from its start (it has a check)');
    return refused;
  }

  get runtime(): JobRuntime {
    return this.#rt;
  }

  /**
   * Non-force: abort the running step (its signal; its commands get SIGTERM, SIGKILL after
   * 2 s), then the cancel hooks run. Force: the caller stops waiting at once (forcedResult);
   * every running activity's command groups get SIGKILL.
   */
  cancel(reason: string, force: boolean): void {
    this.#cancel ??= { reason: reason.trim() === '' ? 'cancelled' : reason };
    if (force) {
      this.#forced = true;
      for (const activity of allActivities()) activity.killNow();
      return;
    }
    this.#abortable?.abort(new Error(this.#cancel.reason));
  }

  async run(): Promise<ResultMessage> {
    this.#startedAt = Date.now();
    const timeoutMs = this.#start.jobTimeoutMs;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            if (this.#inHooks) return;
            this.#jobTimedOut = `job timed out after ${timeoutMs} ms`;
            this.#abortable?.abort(new Error(this.#jobTimedOut));
          }, timeoutMs);
    try {
      await this.#setup();
      if (this.#path !== 'skipped') {
        if (this.#path === 'success') await this.#steps();
        this.#noteInterruption();
        if (this.#path === 'success') await this.#jobOutputs();
        this.#inHooks = true;
        await this.#hooks();
      }
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
    return this.result();
  }

  #reason(): string | undefined {
    const parts = [this.#baseReason, ...this.#hookFailures].filter((p): p is string => p !== undefined && p !== '');
    return parts.length === 0 ? undefined : clip(parts.join('; '));
  }

  result(): ResultMessage {
    const status =
      this.#path === 'skipped'
        ? 'skipped'
        : this.#hookFailures.length > 0
          ? 'failed'
          : this.#path === 'success'
            ? 'completed'
            : this.#path === 'failure'
              ? 'failed'
              : 'cancelled';
    const reason = this.#reason();
    const exitCode = status === 'failed' ? this.#failedExitCode : undefined;
    return {
      type: 'runner.result',
      status,
      ...(reason === undefined ? {} : { reason }),
      ...(exitCode === undefined ? {} : { exitCode }),
      outputs: this.#outputs,
      steps: this.#stepList(this.#path === 'cancel' ? REASON_CANCELLED : REASON_EARLIER_FAILED),
    };
  }

  /** The result of a force cancel: whatever ran so far, the rest not run. */
  forcedResult(): ResultMessage {
    const reason = clip(`${this.#cancel?.reason ?? 'cancelled'} (force cancel: running hooks killed, remaining hooks not run)`);
    for (const record of this.#records) {
      if (record.status === 'running') Object.assign(record, { status: 'cancelled', reason: this.#cancel?.reason ?? 'cancelled', finishedAt: new Date().toISOString() });
    }
    return { type: 'runner.result', status: 'cancelled', reason, outputs: {}, steps: this.#stepList(REASON_CANCELLED) };
  }

  #stepList(pendingReason: string): ResultMessage['steps'] {
    return this.#records.map((r) =>
      r.status === 'pending'
        ? { name: r.name, status: 'skipped' as const, reason: pendingReason }
        : {
            name: r.name,
            status: r.status,
            ...(r.startedAt === undefined ? {} : { startedAt: r.startedAt }),
            ...(r.finishedAt === undefined ? {} : { finishedAt: r.finishedAt }),
            ...(r.reason === undefined ? {} : { reason: clip(r.reason) }),
            ...(r.exitCode === undefined ? {} : { exitCode: r.exitCode }),
          },
    );
  }

  /**
   * A traced job (runner.start traceparent): the step about to run gets a span id of its own under
   * the job's span, as TRACEPARENT/TRACESTATE in its environment and this process's (its commands
   * and its own OpenTelemetry code join the trace); the agent records the span under that id.
   * Between steps (hooks) they name the job's span. Undefined when not traced.
   */
  #traceStep(running: boolean): string | undefined {
    const job = this.#start.traceparent;
    if (job === undefined) return undefined;
    const value = running ? `${job.slice(0, 36)}${randomBytes(8).toString('hex')}-01` : job;
    for (const env of [this.#rt.env, process.env]) {
      env['TRACEPARENT'] = value;
      if (this.#start.tracestate !== undefined) env['TRACESTATE'] = this.#start.tracestate;
    }
    return running ? value : undefined;
  }

  #report(index: number, status: StepStatus, reason?: string, exitCode?: number): void {
    const record = this.#records[index]!;
    const at = new Date().toISOString();
    const traceparent = this.#traceStep(status === 'running');
    record.status = status;
    if (status === 'running') record.startedAt = at;
    else record.finishedAt = at;
    if (reason !== undefined) record.reason = reason;
    if (exitCode !== undefined) record.exitCode = exitCode;
    this.#channel.send({
      type: 'runner.step',
      index,
      name: record.name,
      status,
      at,
      ...(reason === undefined ? {} : { reason: clip(reason) }),
      ...(exitCode === undefined ? {} : { exitCode }),
      ...(traceparent === undefined ? {} : { traceparent }),
    });
  }

  /** A cancel or job timeout that arrived between activities takes effect here. */
  #noteInterruption(): void {
    if (this.#path !== 'success') return;
    if (this.#jobTimedOut !== undefined) {
      this.#path = 'failure';
      this.#baseReason = this.#jobTimedOut;
    } else if (this.#cancel !== undefined) {
      this.#path = 'cancel';
      this.#baseReason = this.#cancel.reason;
    }
  }

  async #setup(): Promise<void> {
    const activity = new Activity('(setup)');
    this.#abortable = activity;
    const outcome = await guard(activity, async () => {
      const ctx = ruleContext(this.#rt, activity);
      if (this.#start.evaluateWorkflowFilter) {
        const filter = await evaluateWorkflowFilter(this.#workflow.options.filter, ctx);
        if (!filter.run) return filter.reason;
        const rules = await evaluateRules(this.#workflow.options.rules, ctx, 'workflow');
        if (!rules.run) return rules.reason;
      }
      const rules = await evaluateRules(this.#job.options.rules, ctx, 'job');
      return rules.run ? undefined : rules.reason;
    });
    this.#abortable = undefined;
    this.#sink.flush('(setup)');
    if (outcome.kind === 'ok') {
      if (outcome.value === undefined) return;
      this.#path = 'skipped';
      this.#baseReason = outcome.value;
      this.#sink.line('(setup)', 'system', `job skipped: ${outcome.value}`);
      for (let i = 0; i < this.#records.length; i++) this.#report(i, 'skipped', `the job was skipped: ${outcome.value}`);
      return;
    }
    if (outcome.kind === 'aborted') {
      this.#noteInterruption();
      return;
    }
    this.#path = 'failure';
    this.#baseReason = outcome.kind === 'error' ? messageOf(outcome.error) : `timed out after ${outcome.ms} ms`;
  }

  async #steps(): Promise<void> {
    const steps = this.#job.steps;
    for (let i = 0; i < steps.length && !this.#forced; i++) {
      if (this.#restored.has(i)) continue;
      this.#noteInterruption();
      if (this.#path !== 'success') {
        this.#report(i, 'skipped', this.#path === 'cancel' ? REASON_CANCELLED : REASON_EARLIER_FAILED);
        this.#rt.noOutputsReason.set(steps[i]!.name, 'it did not run');
        continue;
      }
      await this.#runStep(i, steps[i]!);
    }
  }

  #outcome(status: Outcome['status'], startedAt: number): Outcome {
    const reason = this.#reason();
    return {
      status,
      ...(reason === undefined ? {} : { reason }),
      ...(this.#failedStep === undefined ? {} : { failedStep: this.#failedStep }),
      stepOutputs: Object.fromEntries(this.#rt.stepOutputs),
      duration: Date.now() - startedAt,
    };
  }

  #hook(level: HookLevel, name: string, hook: unknown, extra: () => object, labelSuffix = ''): Promise<void> {
    if (this.#forced) return Promise.resolve();
    return runHook(this.#hookRunner, level, name, hook, (activity) => ({ ...createStepContext(this.#rt, activity), ...extra() }), labelSuffix).then((failure) => {
      if (failure !== undefined) this.#hookFailures.push(failure);
    });
  }

  /**
   * A held step waits here, before its hooks and rules, for the approval's decision (the agent
   * asks the orchestrator). True: approved, the step goes on. Otherwise the step is reported
   * failed with the decision's reason (rejected, expired) or cancelled, and the job takes that
   * path as for any failed or cancelled step. The wait is abortable by a cancel or the job timeout.
   */
  async #approved(index: number, step: Step): Promise<boolean> {
    const activity = new Activity(step.name);
    this.#abortable = activity;
    this.#sink.line(step.name, 'system', 'waiting for an approval before this step runs');
    const outcome = await guard(activity, () => this.#channel.request('step.approval', { index, name: step.name }, `step ${step.name} approval`));
    this.#abortable = undefined;
    if (outcome.kind === 'ok' && outcome.value.status === 'approved') {
      this.#sink.line(step.name, 'system', outcome.value.reason);
      this.#sink.flush(step.name);
      return true;
    }
    if (outcome.kind === 'aborted' && this.#jobTimedOut === undefined) {
      const reason = this.#cancel?.reason ?? 'cancelled';
      this.#sink.flush(step.name);
      this.#report(index, 'cancelled', reason);
      this.#path = 'cancel';
      this.#baseReason = reason;
      this.#rt.noOutputsReason.set(step.name, 'it was cancelled while waiting for its approval');
      return false;
    }
    const why =
      outcome.kind === 'ok'
        ? outcome.value.reason
        : outcome.kind === 'error'
          ? messageOf(outcome.error)
          : outcome.kind === 'timeout'
            ? `timed out after ${outcome.ms} ms`
            : (this.#jobTimedOut ?? 'aborted');
    this.#sink.line(step.name, 'stderr', `step failed: ${why}`);
    this.#sink.flush(step.name);
    this.#report(index, 'failed', why);
    this.#path = 'failure';
    this.#failedStep = step.name;
    this.#baseReason = `step "${step.name}" failed: ${why}`;
    this.#rt.noOutputsReason.set(step.name, 'it was not approved');
    return false;
  }

  async #runStep(index: number, step: Step): Promise<void> {
    const refused = this.#interrupted(index, step);
    const jobHooks = this.#job.options;
    if (refused === undefined) {
      if (this.#heldSteps.has(index) && !(await this.#approved(index, step))) return;
      await this.#hook(this.#jobLevel, 'beforeStep', jobHooks.beforeStep, () => ({ step: { name: step.name } }), `: ${step.name}`);
      this.#noteInterruption();
      if (this.#path !== 'success') {
        this.#report(index, 'skipped', this.#path === 'cancel' ? REASON_CANCELLED : REASON_EARLIER_FAILED);
        return;
      }
    }
    const activity = new Activity(step.name);
    this.#abortable = activity;
    const secretOutputs = new Map<string, string>();
    const stepStarted = Date.now();
    const timeout = step.options.timeout;
    const reports = (this.#rt.testReports = await beginStepReports(this.#rt.env));
    const outcome =
      refused !== undefined
        ? ({ kind: 'error', error: new Error(refused) } as const)
        : await guard(activity, () => this.#stepBody(index, step, activity, secretOutputs), typeof timeout === 'number' && timeout > 0 ? timeout : undefined);
    this.#abortable = undefined;
    this.#rt.testReports = undefined;
    this.#sink.flush(step.name);
    // Result files are read after the body, whatever it returned, unless it did not run or was cancelled.
    const tests =
      refused !== undefined || outcome.kind === 'aborted' || (outcome.kind === 'ok' && 'skipped' in outcome.value)
        ? await discardStepReports(this.#rt.env, reports)
        : await collectStepTests({ channel: this.#channel, sink: this.#sink, env: this.#rt.env }, this.#job, step, index, reports, outcome);

    let status: 'success' | 'failed' | 'skipped' | 'cancelled';
    if (outcome.kind === 'ok' && 'skipped' in outcome.value) {
      status = 'skipped';
      this.#report(index, 'skipped', outcome.value.skipped);
      this.#rt.noOutputsReason.set(step.name, `it was skipped (${outcome.value.skipped})`);
    } else if (outcome.kind === 'ok' && 'outputs' in outcome.value) {
      status = 'success';
      this.#rt.stepOutputs.set(step.name, Object.freeze({ ...outcome.value.outputs, ...Object.fromEntries(secretOutputs) }));
      this.#report(index, 'completed', outcome.value.note);
    } else if (tests?.waived === true) {
      // Every failing test is quarantined and the command's exit came from them: the step passes.
      status = 'success';
      this.#rt.stepOutputs.set(step.name, Object.freeze({ ...Object.fromEntries(secretOutputs) }));
      this.#report(index, 'completed', tests.note);
    } else if (outcome.kind === 'aborted' && this.#jobTimedOut === undefined) {
      status = 'cancelled';
      const reason = this.#cancel?.reason ?? 'cancelled';
      this.#report(index, 'cancelled', reason);
      this.#path = 'cancel';
      this.#baseReason = reason;
      this.#rt.noOutputsReason.set(step.name, 'it was cancelled');
    } else {
      status = 'failed';
      const why =
        outcome.kind === 'error'
          ? messageOf(outcome.error)
          : outcome.kind === 'timeout'
            ? `step timed out after ${outcome.ms} ms`
            : (this.#jobTimedOut ?? 'aborted');
      this.#sink.line(step.name, 'stderr', `step failed: ${why}`);
      const exitCode = commandExitCode(outcome);
      this.#report(index, 'failed', why, exitCode);
      this.#path = 'failure';
      this.#failedStep = step.name;
      this.#failedExitCode = exitCode;
      this.#baseReason = `step "${step.name}" failed: ${why}`;
      this.#rt.noOutputsReason.set(step.name, 'it failed');
    }
    this.#checkpoint(index, secretOutputs);

    if (status !== 'skipped') {
      // Step-level hooks: onCancel (when cancelled) then cleanup (always), before the job's afterStep.
      const level = new HookLevel(`step ${step.name}`);
      const hookStatus: Outcome['status'] = status === 'success' ? 'success' : status === 'failed' ? 'failed' : 'cancelled';
      const extra = () => ({ outcome: this.#outcome(hookStatus, stepStarted), step: { name: step.name, status } });
      if (status === 'cancelled') await this.#hook(level, 'onCancel', step.options.onCancel, extra);
      await this.#hook(level, 'cleanup', step.options.cleanup, extra);
    }
    if (status !== 'cancelled') {
      await this.#hook(this.#jobLevel, 'afterStep', jobHooks.afterStep, () => ({ step: { name: step.name, status } }), `: ${step.name}`);
    }
  }

  async #stepBody(
    index: number,
    step: Step,
    activity: Activity,
    secretOutputs: Map<string, string>,
  ): Promise<{ skipped: string } | { outputs: Record<string, unknown>; note?: string }> {
    const ctx = createStepContext(this.#rt, activity, secretOutputs);
    const verdict = await evaluateRules(step.options.rules, ctx, 'step');
    if (!verdict.run) return { skipped: verdict.reason };
    this.#report(index, 'running');
    const { check, whenInSync } = step.options;
    if (check !== undefined) {
      const drift: unknown = await (check as unknown as (c: typeof ctx) => unknown)(ctx);
      if (typeof drift !== 'object' || drift === null || typeof (drift as { drift?: unknown }).drift !== 'boolean') {
        throw new InputError(RunnerErrorCode.checkResult, 'check must return { drift: boolean, reason?: string }');
      }
      const { drift: differs, reason } = drift as { drift: boolean; reason?: unknown };
      if (!differs) {
        const note = `in sync${typeof reason === 'string' && reason !== '' ? `: ${reason}` : ''}; body not run`;
        this.#sink.line(step.name, 'system', note);
        const value = whenInSync === undefined ? undefined : await (whenInSync as unknown as (c: typeof ctx) => unknown)(ctx);
        const hint = whenInSync === undefined ? ' (check reported no drift and the step has no whenInSync to produce its outputs)' : ' (from whenInSync)';
        return { outputs: stepOutputs(step, value, hint), note };
      }
    }
    const value = await (step.run as (c: typeof ctx) => unknown)(ctx);
    return { outputs: stepOutputs(step, value, '') };
  }

  async #jobOutputs(): Promise<void> {
    const fn = this.#job.options.outputs;
    if (fn === undefined) return;
    const activity = new Activity('(outputs)');
    this.#abortable = activity;
    const outcome = await guard(activity, async () => {
      if (typeof fn !== 'function') throw new InputError(RunnerErrorCode.jobOutputs, 'the job outputs option must be a function');
      const value: unknown = await fn(createStepContext(this.#rt, activity));
      if (!isPlainObject(value)) throw new InputError(RunnerErrorCode.jobOutputs, 'the job outputs function must return a plain object');
      let copy: unknown;
      try {
        copy = JSON.parse(JSON.stringify(value));
      } catch (error) {
        throw new InputError(RunnerErrorCode.jobOutputs, `job outputs must be JSON-serializable: ${messageOf(error)}`);
      }
      return copy as Record<string, unknown>;
    });
    this.#abortable = undefined;
    this.#sink.flush('(outputs)');
    if (outcome.kind === 'ok') this.#outputs = outcome.value;
    else if (outcome.kind === 'aborted') this.#noteInterruption();
    else {
      this.#path = 'failure';
      this.#baseReason = `job outputs failed: ${outcome.kind === 'error' ? messageOf(outcome.error) : `timed out after ${outcome.ms} ms`}`;
    }
  }

  async #hooks(): Promise<void> {
    const names: readonly ('onSuccess' | 'onFailure' | 'onCancel' | 'cleanup')[] =
      this.#path === 'success' ? ['onSuccess', 'cleanup'] : this.#path === 'failure' ? ['onFailure', 'cleanup'] : ['onCancel', 'cleanup'];
    const status: Outcome['status'] = this.#path === 'success' ? 'success' : this.#path === 'failure' ? 'failed' : 'cancelled';
    const started = this.#startedAt;
    for (const name of names) {
      await this.#hook(this.#jobLevel, name, this.#job.options[name], () => ({ outcome: this.#outcome(status, started) }));
    }
    if (this.#start.workflowHooks !== true) return;
    for (const name of names) {
      await this.#hook(this.#workflowLevel, name, this.#workflow.options[name], () => ({ outcome: this.#outcome(status, started) }));
    }
  }
}
