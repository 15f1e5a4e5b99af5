// Steps: a name, a function, and options. A step's outputs are the value its function returns,
// described by a TypeBox object schema (`outputs`). Built with the chain form
// (`steps: (s) => s.step(...).step(...)`), each step's `ctx.outputsOf` is typed for the steps
// before it only; the array form (`steps: [step(...), ...]`) types outputs loosely.
import type { Static, TObject } from 'typebox';
import type { Approval } from './approval.ts';
import type {
  AnyOutputs,
  Hook,
  HookContext,
  MatrixCombination,
  MaybePromise,
  OutputsMap,
  StepContext,
} from './context.ts';
import type { Rule } from './rules.ts';

/** Result of an idempotent check facet: does the target differ from what the step would make? */
export interface DriftCheck {
  readonly drift: boolean;
  readonly reason?: string;
}

export interface StepOptions<O, Prev extends OutputsMap = AnyOutputs, M extends MatrixCombination = MatrixCombination> {
  readonly rules?: readonly Rule[];
  /** Idempotent check: when it reports no drift the step body is not run. */
  readonly check?: (ctx: StepContext<Prev, M>) => MaybePromise<DriftCheck>;
  /** Produces the step's outputs when `check` reports no drift. */
  readonly whenInSync?: (ctx: StepContext<Prev, M>) => MaybePromise<O>;
  readonly onCancel?: Hook<HookContext<M>>;
  readonly cleanup?: Hook<HookContext<M>>;
  readonly approval?: Approval;
  /** Milliseconds. */
  readonly timeout?: number;
  /** Test result files (JUnit XML or TAP) this step writes: globs relative to the workspace. */
  readonly testResults?: string | readonly string[];
}

export type StepOptionsWithOutputs<S extends TObject, Prev extends OutputsMap = AnyOutputs, M extends MatrixCombination = MatrixCombination> =
  StepOptions<Static<S>, Prev, M> & { readonly outputs: S };

export type StepFn<O, Prev extends OutputsMap = AnyOutputs, M extends MatrixCombination = MatrixCombination> = (
  ctx: StepContext<Prev, M>,
) => MaybePromise<O>;

export interface Step<N extends string = string, O extends object = object> {
  readonly kind: 'svc.step';
  readonly name: N;
  readonly run: (ctx: never) => unknown;
  readonly options: StepOptions<unknown, never, never> & { readonly outputs?: TObject };
  /** Type-only: the outputs this step produces. */
  readonly __outputs?: O;
}

export function step<const N extends string, S extends TObject>(
  name: N,
  run: StepFn<Static<S>>,
  options: StepOptionsWithOutputs<S>,
): Step<N, Static<S>>;
export function step<const N extends string>(
  name: N,
  run: StepFn<void>,
  options?: StepOptions<void> & { readonly outputs?: undefined },
): Step<N, {}>;
export function step(name: string, run: StepFn<unknown>, options: object = {}): Step {
  return makeStep(name, run, options);
}

function makeStep(name: string, run: unknown, options: object): Step {
  return Object.freeze({
    kind: 'svc.step',
    name,
    run: run as Step['run'],
    options: Object.freeze({ ...options }) as Step['options'],
  });
}

/** A name not used by an earlier step of the chain (a reused name is a type error). */
type FreshName<N extends string, Prev> = N extends keyof Prev ? never : N;

export interface StepChain<Prev extends OutputsMap = {}, M extends MatrixCombination = MatrixCombination> {
  readonly kind: 'svc.steps';
  readonly list: readonly Step[];
  step<const N extends string, S extends TObject>(
    name: N & FreshName<N, Prev>,
    run: StepFn<Static<S>, Prev, M>,
    options: StepOptionsWithOutputs<S, Prev, M>,
  ): StepChain<Prev & { readonly [K in N]: Static<S> }, M>;
  step<const N extends string>(
    name: N & FreshName<N, Prev>,
    run: StepFn<void, Prev, M>,
    options?: StepOptions<void, Prev, M> & { readonly outputs?: undefined },
  ): StepChain<Prev & { readonly [K in N]: {} }, M>;
}

function chainOf(list: readonly Step[]): StepChain<any, any> {
  return Object.freeze({
    kind: 'svc.steps' as const,
    list,
    step(name: string, run: unknown, options: object = {}) {
      return chainOf(Object.freeze([...list, makeStep(name, run, options)]));
    },
  }) as StepChain<any, any>;
}

/** Starts a typed step chain (the `s` in `steps: (s) => s.step(...)`). */
export function steps<M extends MatrixCombination = MatrixCombination>(): StepChain<{}, M> {
  return chainOf(Object.freeze([]));
}

export function isStep(value: unknown): value is Step {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'svc.step';
}

export function isStepChain(value: unknown): value is StepChain<any, any> {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'svc.steps';
}
