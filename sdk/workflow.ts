// The workflow definition: a `.svc/workflows/*.ts` file default-exports one. The compiler turns
// it into a lock entry; the agent loads the same object to run closures (steps, rules, hooks).
import type { Approval } from './approval.ts';
import type { Hook, HookContext, MaybePromise, RuleContext } from './context.ts';
import type { Concurrency, Job } from './job.ts';
import type { Rule } from './rules.ts';
import type { Trigger } from './triggers.ts';

/** A secret reference qualified by its context: `<context>:<key>`. */
export type QualifiedSecret = `${string}:${string}`;

export interface RegistryDeclaration {
  readonly url: string;
  /** npm scope such as `@acme`; omitted for the default registry. */
  readonly scope?: string;
  /** Where the token is: a `<context>:<key>` secret reference (never the token itself). */
  readonly tokenSecret: QualifiedSecret;
  readonly alwaysAuth?: boolean;
}

/** A record of jobs where every `needs` entry names a key of the record. */
export type CheckedJobs<J> = {
  readonly [K in keyof J]: J[K] extends Job<infer N>
    ? [Exclude<N, keyof J>] extends [never]
      ? J[K]
      : Job<N> & { readonly __unknownNeeds: Exclude<N, keyof J> }
    : never;
};

export interface WorkflowOptions<J> {
  readonly on: Trigger | readonly Trigger[];
  /** Record keyed by job name (needs are type-checked), or an array of jobs each with `name`. */
  readonly jobs: J;
  readonly description?: string;
  /** Predicate evaluated on an agent before any job is dispatched; never serialized. */
  readonly filter?: (ctx: RuleContext) => MaybePromise<boolean>;
  readonly rules?: readonly Rule[];
  /** Secret contexts the workflow uses; access is validated before dispatch. */
  readonly contexts?: readonly string[];
  readonly concurrency?: Concurrency;
  /** Whole-run wall-clock limit in milliseconds. */
  readonly timeout?: number;
  readonly approval?: Approval;
  /** Extra repository-root globs included in the content hash. */
  readonly hashFiles?: readonly string[];
  /**
   * Private npm registries for the `npm ci` of `.svc/` (only that install): each token's context
   * must be in this workflow's `contexts` (docs/agent.md "Private registries and installEnv").
   */
  readonly registries?: readonly RegistryDeclaration[];
  /**
   * Secrets projected as environment variables on the dependency install only, each named by its
   * key (`'npm:NPM_TOKEN'` → `NPM_TOKEN`, which a `.svc/.npmrc` can read as `${NPM_TOKEN}`).
   */
  readonly installEnv?: readonly QualifiedSecret[];
  readonly onCancel?: Hook<HookContext>;
  readonly cleanup?: Hook<HookContext>;
  readonly onSuccess?: Hook<HookContext>;
  readonly onFailure?: Hook<HookContext>;
}

export interface Workflow {
  readonly kind: 'svc.workflow';
  readonly name: string;
  readonly options: WorkflowOptions<Readonly<Record<string, Job>> | readonly Job[]>;
}

/** Array form passes as is; the record form has its `needs` checked against its keys. */
export type WorkflowJobs<J> = J extends readonly Job[] ? J : J & CheckedJobs<J>;

export function workflow<const J extends Readonly<Record<string, Job>> | readonly Job[]>(
  name: string,
  options: WorkflowOptions<WorkflowJobs<J>>,
): Workflow {
  return Object.freeze({
    kind: 'svc.workflow',
    name,
    options: Object.freeze({ ...options }) as Workflow['options'],
  });
}

export function isWorkflow(value: unknown): value is Workflow {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'svc.workflow';
}
