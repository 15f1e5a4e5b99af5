// Jobs: scheduling metadata (runsOn labels, needs, matrix, contexts, …) plus steps and hooks.
// A dynamic job is a generator evaluated on an agent at run time; its jobs are not in the lock.
import type { Approval } from './approval.ts';
import type {
  Hook,
  HookContext,
  MatrixCombination,
  MatrixValue,
  MaybePromise,
  RuleContext,
  StepContext,
  StepHookContext,
} from './context.ts';
import type { Rule } from './rules.ts';
import { isStepChain, steps as startChain, type Step, type StepChain } from './step.ts';

/** Static matrix: axis name → values. Every combination becomes one job instance. */
export type MatrixDefinition = { readonly [axis: string]: readonly MatrixValue[] };
/** Dynamic matrix: computed on the agent at run time. */
export type MatrixGenerator = (ctx: RuleContext) => MaybePromise<{ readonly [axis: string]: readonly MatrixValue[] }>;

/** One combination of a static matrix definition (loose for a dynamic matrix or none). */
export type MatrixOf<D> = { readonly [K in keyof D & string]: D[K] extends readonly (infer V extends MatrixValue)[] ? V : never };

export interface Concurrency {
  /** Runs sharing a group are limited together; a function is evaluated at run time. */
  readonly group?: string | ((ctx: RuleContext) => MaybePromise<string>);
  /** Cancel the running member of the group when a new one starts. Default false. */
  readonly cancelInProgress?: boolean;
  /** At most this many at once in the group. */
  readonly max?: number;
}

export interface ContainerOptions {
  readonly image: string;
  /**
   * Extra runtime arguments, one per item (`['--memory=2g', '--cpus', '2']`). Only a subset is
   * honoured (`--env`, `--memory`, `--cpus`, `--pids-limit`, `--shm-size`, `--network none|bridge`,
   * `--read-only`, `--tmpfs`, `--cap-drop`, `--security-opt no-new-privileges`); `svc compile`
   * refuses any other, naming it (docs/sandboxes.md, "container.options").
   */
  readonly options?: readonly string[];
}

export interface CheckoutOptions {
  /** Commits to fetch; 0 for full history. Default 1. */
  readonly depth?: number;
  /** The commit's submodules too, recursively, at the commits it records. Default false. */
  readonly submodules?: boolean;
  /** LFS files with their real content (git-lfs on the agent). Default false: they stay pointers. */
  readonly lfs?: boolean;
}

/** What makes a failed attempt of a job run again (docs/run-states.md "Retries"). */
export type RetryCondition =
  /** The agent running it was lost (recovery window over, ephemeral agent gone, reconnected without it). */
  | 'agent-lost'
  /** It failed only because tests failed (a step's command failed and its result files hold a failed test). */
  | 'failed-tests'
  /** The failing step's command exited with one of these codes (1 to 255). */
  | { readonly exitCodes: readonly number[] };

/** A job-level retry policy: each retry is a new attempt of the same job, after the back-off. */
export interface RetryPolicy {
  /** Attempts in all, the first one included: 2 to 10. */
  readonly maxAttempts: number;
  /** At least one condition; any one of them retries. */
  readonly on: readonly RetryCondition[];
  /** Wait before attempt n+1: delaySeconds × factor^(n-1), at most maxDelaySeconds. Defaults 10 s, 2, 600 s. */
  readonly backoff?: { readonly delaySeconds?: number; readonly factor?: number; readonly maxDelaySeconds?: number };
}

/** Soft placement among agents that carry every `runsOn` label. */
export interface Routing {
  readonly prefer?: readonly string[];
  readonly avoid?: readonly string[];
}

export type JobHooks<M extends MatrixCombination> = {
  readonly onCancel?: Hook<HookContext<M>>;
  readonly cleanup?: Hook<HookContext<M>>;
  readonly onSuccess?: Hook<HookContext<M>>;
  readonly onFailure?: Hook<HookContext<M>>;
  readonly beforeStep?: Hook<StepHookContext<M>>;
  readonly afterStep?: Hook<StepHookContext<M>>;
};

interface JobCommon<Needs extends string, M extends MatrixCombination> extends JobHooks<M> {
  /** Needed only when `jobs` is an array; in the record form the key is the name. */
  readonly name?: string;
  /** Label matchers an agent must all carry (`linux`, `kici:os:linux`, `gpu*`, `!spot`). */
  readonly runsOn: string | readonly string[];
  readonly needs?: readonly Needs[];
  readonly context?: string;
  readonly contexts?: readonly string[];
  readonly concurrency?: Concurrency;
  readonly container?: string | ContainerOptions;
  /** `false` skips the source checkout. */
  readonly checkout?: boolean | CheckoutOptions;
  /** Seconds between the cancel request and the kill signal. */
  readonly gracePeriod?: number;
  /** Milliseconds. */
  readonly timeout?: number;
  readonly routing?: Routing;
  readonly rules?: readonly Rule[];
  readonly approval?: Approval;
  /**
   * Test result files (JUnit XML or TAP) the job's steps write: globs relative to the workspace,
   * read by the agent after each step and stored per run, job and test (docs/test-results.md).
   */
  readonly testResults?: string | readonly string[];
  readonly retry?: RetryPolicy;
}

export type JobSteps<M extends MatrixCombination> =
  | readonly Step[]
  | StepChain<any, M>
  | ((s: StepChain<{}, M>) => StepChain<any, M>);

export interface JobOptions<Needs extends string, D extends MatrixDefinition>
  extends JobCommon<Needs, MatrixOf<D>> {
  readonly matrix?: D | MatrixGenerator;
  /** Job outputs, computed from step outputs when the job ends; read by later jobs with jobOutputs. */
  readonly outputs?: (ctx: StepContext) => MaybePromise<Readonly<Record<string, unknown>>>;
  readonly steps: JobSteps<MatrixOf<D>>;
}

export interface DynamicJobsOptions<Needs extends string> extends JobCommon<Needs, MatrixCombination> {
  /** Runs on an agent at run time and returns the jobs to add to the run. */
  readonly generate: (ctx: StepContext) => MaybePromise<Readonly<Record<string, Job>> | readonly Job[]>;
}

export interface Job<Needs extends string = string> {
  readonly kind: 'svc.job';
  readonly dynamic: boolean;
  readonly options: JobCommon<string, any> & {
    readonly matrix?: MatrixDefinition | MatrixGenerator;
    readonly outputs?: (ctx: StepContext) => MaybePromise<Readonly<Record<string, unknown>>>;
    readonly generate?: (ctx: StepContext) => MaybePromise<Readonly<Record<string, Job>> | readonly Job[]>;
  };
  /** Steps in order (empty for a dynamic job). */
  readonly steps: readonly Step[];
  /** Type-only: names this job needs. */
  readonly __needs?: Needs;
}

function resolveSteps(value: unknown): readonly Step[] {
  if (typeof value === 'function') {
    const chain: unknown = (value as (s: StepChain) => unknown)(startChain());
    if (!isStepChain(chain)) return [chain as Step]; // reported by the compiler as an invalid step
    return chain.list;
  }
  if (isStepChain(value)) return value.list;
  if (Array.isArray(value)) return Object.freeze([...(value as Step[])]);
  return [];
}

export function job<const Needs extends string = never, const D extends MatrixDefinition = MatrixDefinition>(
  options: JobOptions<Needs, D>,
): Job<NoInfer<Needs>> {
  return Object.freeze({
    kind: 'svc.job',
    dynamic: false,
    options: Object.freeze({ ...options }) as Job['options'],
    steps: resolveSteps(options.steps),
  });
}

/** A job generator evaluated at run time; marked dynamic in the lock. */
export function dynamicJobs<const Needs extends string = never>(options: DynamicJobsOptions<Needs>): Job<NoInfer<Needs>> {
  return Object.freeze({
    kind: 'svc.job',
    dynamic: true,
    options: Object.freeze({ ...options }) as Job['options'],
    steps: Object.freeze([]),
  });
}

export function isJob(value: unknown): value is Job {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'svc.job';
}
