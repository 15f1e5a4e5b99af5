// Rules decide at run time, on the agent, whether a job or step runs. They are closures, so the
// lock records only where they are (dynamic references), never what they do.
import type { MaybePromise, RuleContext } from './context.ts';

export interface Rule {
  readonly kind: 'svc.rule';
  readonly name: string;
  /** `run` runs when the predicate is true; `skip` skips when it is true. */
  readonly mode: 'run' | 'skip';
  readonly fn: (ctx: RuleContext) => MaybePromise<boolean>;
}

/** Runs the job or step only when `fn` returns true; otherwise it is reported `skipped`. */
export function rule(name: string, fn: (ctx: RuleContext) => MaybePromise<boolean>): Rule {
  return Object.freeze({ kind: 'svc.rule', name, mode: 'run', fn });
}

/** Skips the job or step with `reason` when `fn` returns true. */
export function skip(reason: string, fn: (ctx: RuleContext) => MaybePromise<boolean>): Rule {
  return Object.freeze({ kind: 'svc.rule', name: reason, mode: 'skip', fn });
}

export function isRule(value: unknown): value is Rule {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'svc.rule';
}
