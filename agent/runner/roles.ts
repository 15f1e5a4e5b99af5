// Scheduling pseudo-jobs in the runner (docs/scheduling.md), selected by `runner.start.role`:
// - `filter`: the workflow filter, then the workflow rules; `skipped` when one says no; else the
//   concurrency group keys (concurrency-groups.ts), reported in `runner.result.concurrencyGroups`.
// - `hooks`: the workflow hooks for `workflowOutcome` (onSuccess/onFailure/onCancel, then cleanup),
//   with `ctx.outcome` set and every job's outputs behind `ctx.jobOutputs`.
// - `generate`: a dynamicJobs generator (→ lock job entries, described with the compiler's own
//   job-entry code) or a dynamic matrix (→ axes), reported in `runner.result.generated`.
// A generated job itself runs as an ordinary job: `findGeneratedJob` re-evaluates its generator
// to get the job's closures.
import type { Static } from 'typebox';
import { childPath, CompileScope } from '../../workflow/compile/compile-scope.ts';
import { jobEntries } from '../../workflow/compile/job-entries.ts';
import { JOB_NAME } from '../../workflow/compile/normalize-triggers.ts';
import { nameSet } from '../../workflow/compile/validate-fields.ts';
import { InputError, messageOf } from '../../core/errors.ts';
import type { Outcome } from '../../sdk/context.ts';
import { isJob, type Job } from '../../sdk/job.ts';
import { resolveDefinitionRef } from '../../sdk/resolve-ref.ts';
import type { Workflow } from '../../sdk/workflow.ts';
import type { GeneratedJobs, GeneratorRef, RunnerResult, RunnerStart } from '../../schemas/wire/runner.ts';
import { Activity, allActivities, guard } from './activity.ts';
import { evaluateConcurrencyGroups } from './concurrency-groups.ts';
import { RunnerErrorCode } from './errors.ts';
import { HookLevel, runHook } from './hooks.ts';
import type { RunnerChannel } from './ipc.ts';
import type { LogSink } from './log-capture.ts';
import { evaluateRules, evaluateWorkflowFilter } from './rules.ts';
import { createStepContext, ruleContext, type JobRuntime } from './step-context.ts';

type ResultMessage = Static<typeof RunnerResult>;
type GeneratedJobItem = NonNullable<GeneratedJobs['jobs']>[number];
const MAX_GENERATED = 256;
const MAX_REASON = 10_000;

/** What runner.ts drives: a job or a pseudo-job. */
export interface Execution {
  readonly runtime: JobRuntime;
  run(): Promise<ResultMessage>;
  cancel(reason: string, force: boolean): void;
  forcedResult(): ResultMessage;
}

export function newRuntime(start: RunnerStart, channel: RunnerChannel, sink: LogSink): JobRuntime {
  const env: Record<string, string | undefined> = { ...start.env };
  if (env['PATH'] === undefined && process.env['PATH'] !== undefined) env['PATH'] = process.env['PATH'];
  return { start, channel, sink, env, stepOutputs: new Map(), noOutputsReason: new Map(), effects: [], tempRoot: undefined, tempCount: 0 };
}

function clip(text: string): string {
  return text.length <= MAX_REASON ? text : `${text.slice(0, MAX_REASON - 1)}…`;
}

function result(status: ResultMessage['status'], reason?: string, generated?: GeneratedJobs): ResultMessage {
  return {
    type: 'runner.result',
    status,
    ...(reason === undefined ? {} : { reason: clip(reason) }),
    outputs: {},
    steps: [],
    ...(generated === undefined ? {} : { generated }),
  };
}

function whyOf(outcome: { kind: 'error'; error: unknown } | { kind: 'timeout'; ms: number } | { kind: 'aborted'; reason: unknown }): string {
  if (outcome.kind === 'error') return messageOf(outcome.error);
  if (outcome.kind === 'timeout') return `timed out after ${outcome.ms} ms`;
  return `cancelled: ${messageOf(outcome.reason)}`;
}

/** Shared cancel behaviour: a non-force cancel aborts the running activity; force kills everything. */
abstract class RoleExecution implements Execution {
  readonly runtime: JobRuntime;
  protected readonly workflow: Workflow;
  protected current: Activity | undefined;
  protected cancelled: string | undefined;

  constructor(start: RunnerStart, workflow: Workflow, channel: RunnerChannel, sink: LogSink) {
    this.runtime = newRuntime(start, channel, sink);
    this.workflow = workflow;
  }

  abstract run(): Promise<ResultMessage>;

  cancel(reason: string, force: boolean): void {
    this.cancelled ??= reason.trim() === '' ? 'cancelled' : reason;
    if (force) {
      for (const activity of allActivities()) activity.killNow();
      return;
    }
    this.current?.abort(new Error(this.cancelled));
  }

  forcedResult(): ResultMessage {
    return result('cancelled', `${this.cancelled ?? 'cancelled'} (force cancel: running hooks killed, remaining hooks not run)`);
  }
}

export class FilterExecution extends RoleExecution {
  async run(): Promise<ResultMessage> {
    const activity = new Activity('(setup)');
    this.current = activity;
    const outcome = await guard(activity, async () => {
      const ctx = ruleContext(this.runtime, activity);
      const filter = await evaluateWorkflowFilter(this.workflow.options.filter, ctx);
      if (!filter.run) return filter.reason;
      const rules = await evaluateRules(this.workflow.options.rules, ctx, 'workflow');
      return rules.run ? undefined : rules.reason;
    });
    this.current = undefined;
    this.runtime.sink.flush('(setup)');
    if (outcome.kind === 'ok') {
      if (outcome.value === undefined) return this.#groups();
      this.runtime.sink.line('(setup)', 'system', `the workflow does not run: ${outcome.value}`);
      return result('skipped', outcome.value);
    }
    if (outcome.kind === 'aborted') return result('cancelled', this.cancelled ?? 'cancelled');
    const why = whyOf(outcome);
    this.runtime.sink.line('(setup)', 'stderr', why);
    return result('failed', why);
  }

  /** The workflow runs: evaluate the concurrency group keys before its jobs dispatch. */
  async #groups(): Promise<ResultMessage> {
    const { start } = this.runtime;
    const evaluated = await evaluateConcurrencyGroups(this.workflow, {
      label: '(setup)',
      context: (activity) => ruleContext(this.runtime, activity),
      timeoutMs: Math.min(start.hookTimeoutMs, start.jobTimeoutMs ?? Number.POSITIVE_INFINITY),
      track: (activity) => {
        this.current = activity;
        // A cancel that arrived between two group functions stops the next one at once.
        if (activity !== undefined && this.cancelled !== undefined) activity.abort(new Error(this.cancelled));
      },
    });
    this.runtime.sink.flush('(setup)');
    if (evaluated.kind === 'aborted') return result('cancelled', this.cancelled ?? 'cancelled');
    if (evaluated.kind === 'failed') {
      this.runtime.sink.line('(setup)', 'stderr', evaluated.reason);
      return result('failed', evaluated.reason);
    }
    if (this.cancelled !== undefined) return result('cancelled', this.cancelled);
    const groups = evaluated.groups;
    if (groups === undefined) return result('completed');
    this.runtime.sink.line('(setup)', 'system', `concurrency groups: ${JSON.stringify(groups).slice(0, 2000)}`);
    return { ...result('completed'), concurrencyGroups: groups };
  }
}

export class HooksExecution extends RoleExecution {
  async run(): Promise<ResultMessage> {
    const outcome = this.runtime.start.workflowOutcome;
    if (outcome === undefined) return result('failed', 'the workflow hooks job carries no workflowOutcome');
    const names: readonly ('onSuccess' | 'onFailure' | 'onCancel' | 'cleanup')[] =
      outcome.status === 'success' ? ['onSuccess', 'cleanup'] : outcome.status === 'failed' ? ['onFailure', 'cleanup'] : ['onCancel', 'cleanup'];
    const ctxOutcome: Outcome = {
      status: outcome.status,
      ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
      ...(outcome.failedStep === undefined ? {} : { failedStep: outcome.failedStep }),
      stepOutputs: {},
      duration: outcome.duration,
    };
    const level = new HookLevel('workflow');
    const failures: string[] = [];
    // Hooks are never aborted by a non-force cancel (only by their own timeout).
    const runner = { sink: this.runtime.sink, defaultTimeoutMs: this.runtime.start.hookTimeoutMs, track: () => {} };
    for (const name of names) {
      const failure = await runHook(runner, level, name, this.workflow.options[name], (activity) => ({
        ...createStepContext(this.runtime, activity),
        outcome: ctxOutcome,
        ...(outcome.failedJob === undefined ? {} : { failedJob: outcome.failedJob }),
      }));
      if (failure !== undefined) failures.push(failure);
    }
    return failures.length === 0 ? result('completed') : result('failed', failures.join('; '));
  }
}

/** A generator's jobs by name; a string says why the output as a whole is unusable. */
export function listGenerated(value: unknown, entry: string): Array<{ name: string; job: unknown }> | string {
  if (Array.isArray(value)) {
    if (value.length > MAX_GENERATED) return `generator ${entry} returned ${value.length} jobs; the limit is ${MAX_GENERATED}`;
    const out: Array<{ name: string; job: unknown }> = [];
    for (const [index, job] of value.entries()) {
      const name = isJob(job) ? job.options.name : undefined;
      if (typeof name !== 'string' || name === '') return `generator ${entry} returned jobs[${index}] without a name (jobs given as an array need a name)`;
      out.push({ name, job });
    }
    return out;
  }
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length > MAX_GENERATED) return `generator ${entry} returned ${entries.length} jobs; the limit is ${MAX_GENERATED}`;
    return entries.map(([name, job]) => ({ name, job }));
  }
  return `generator ${entry} must return a record of jobs or an array of named jobs, got ${value === null ? 'null' : typeof value}`;
}

/** One generated job → its lock entry, with the compiler's job-entry code; or why it cannot be described. */
export function describeGenerated(name: string, job: unknown, scope: CompileScope): GeneratedJobItem {
  try {
    if (!isJob(job)) throw new InputError(RunnerErrorCode.generator, 'must be built with job(...)');
    const declared = job.options.name;
    if (declared !== undefined && declared !== name) throw new InputError(RunnerErrorCode.generator, `its name ${JSON.stringify(declared)} differs from its key ${JSON.stringify(name)}`);
    // `needs` may name jobs outside the generated set (the run's lock jobs): the orchestrator checks them.
    const stripped = { kind: 'svc.job', dynamic: job.dynamic, options: { ...job.options, name: undefined, needs: undefined }, steps: job.steps };
    const [entry] = jobEntries(scope, { [name]: stripped });
    const needs = nameSet(scope, childPath(childPath(childPath('jobs', name), 'options'), 'needs'), job.options.needs, JOB_NAME, 'job name');
    return { name: name.slice(0, 200), entry: { ...entry, needs } };
  } catch (error) {
    return { name: name.slice(0, 200), error: clip(messageOf(error)) };
  }
}

async function callGenerator(workflow: Workflow, generator: GeneratorRef, runtime: JobRuntime, activity: Activity): Promise<unknown> {
  const fn = resolveDefinitionRef(workflow, generator.ref);
  if (typeof fn !== 'function') throw new InputError(RunnerErrorCode.generator, `${generator.ref} is not a function`);
  const ctx = createStepContext({ ...runtime, start: { ...runtime.start, needs: generator.needs } }, activity);
  return (fn as (c: unknown) => unknown)(ctx);
}

export class GenerateExecution extends RoleExecution {
  async run(): Promise<ResultMessage> {
    const generator = this.runtime.start.generator;
    if (generator === undefined) return result('failed', 'the generator job carries no generator reference');
    const activity = new Activity('(generate)');
    this.current = activity;
    const outcome = await guard(activity, () => callGenerator(this.workflow, generator, this.runtime, activity));
    this.current = undefined;
    this.runtime.sink.flush('(generate)');
    if (outcome.kind === 'aborted') return result('cancelled', this.cancelled ?? 'cancelled');
    if (outcome.kind !== 'ok') {
      const why = `generator ${generator.entry} failed: ${whyOf(outcome)}`;
      this.runtime.sink.line('(generate)', 'stderr', why);
      return result('failed', why);
    }
    if (generator.kind === 'matrix') {
      let axes: unknown;
      try {
        axes = JSON.parse(JSON.stringify(outcome.value ?? null));
      } catch (error) {
        return result('failed', `matrix generator of ${generator.entry} returned a value that is not JSON: ${messageOf(error)}`);
      }
      if (typeof axes !== 'object' || axes === null || Array.isArray(axes)) {
        return result('failed', `matrix generator of ${generator.entry} must return a record of axis name → array of values`);
      }
      this.runtime.sink.line('(generate)', 'system', `matrix: ${JSON.stringify(axes).slice(0, 2000)}`);
      return result('completed', undefined, { matrix: axes as Record<string, unknown> });
    }
    const listed = listGenerated(outcome.value, generator.entry);
    if (typeof listed === 'string') {
      this.runtime.sink.line('(generate)', 'stderr', listed);
      return result('failed', listed);
    }
    const scope = new CompileScope(this.runtime.start.workflowFile, `${this.workflow.name}, generator ${generator.entry}`);
    const jobs = listed.map(({ name, job }) => describeGenerated(name, job, scope));
    for (const job of jobs) this.runtime.sink.line('(generate)', job.error === undefined ? 'system' : 'stderr', job.error === undefined ? `generated job ${job.name}` : `generated job ${job.name} is invalid: ${job.error}`);
    return result('completed', undefined, { jobs });
  }
}

/**
 * The closures of a generated job: re-evaluates its generator (in a `(generate)` activity) and
 * picks the job named `start.jobName`.
 */
export async function findGeneratedJob(workflow: Workflow, start: RunnerStart, runtime: JobRuntime): Promise<Job> {
  const generator = start.generator!;
  const activity = new Activity('(generate)');
  const outcome = await guard(activity, () => callGenerator(workflow, generator, runtime, activity));
  runtime.sink.flush('(generate)');
  if (outcome.kind !== 'ok') throw new InputError(RunnerErrorCode.generator, `generator ${generator.entry} failed when re-evaluated for job ${start.jobName}: ${whyOf(outcome)}`);
  const listed = listGenerated(outcome.value, generator.entry);
  if (typeof listed === 'string') throw new InputError(RunnerErrorCode.generator, listed);
  const found = listed.find((j) => j.name === start.jobName);
  if (found === undefined || !isJob(found.job)) {
    throw new InputError(
      RunnerErrorCode.generator,
      `generator ${generator.entry} no longer produces job ${JSON.stringify(start.jobName)} (generators must return the same jobs for one run; got ${listed.map((j) => j.name).join(', ') || 'none'})`,
    );
  }
  if (found.job.dynamic) throw new InputError(RunnerErrorCode.dynamicJob, `generated job ${JSON.stringify(start.jobName)} is itself a generator`);
  return found.job;
}
