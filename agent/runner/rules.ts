// Workflow filter, workflow/job/step rules at run time. `rule(name, fn)` lets the job or step
// run only when fn returns true; `skip(reason, fn)` skips it when fn returns true. Rules run in
// order and the first that says no decides. A predicate must return a boolean: anything else,
// or a throw, is an error naming the rule (the caller fails the job or step with it).
import { InputError, messageOf } from '../../core/errors.ts';
import type { RuleContext } from '../../sdk/context.ts';
import { isRule } from '../../sdk/rules.ts';
import { RunnerErrorCode } from './errors.ts';

export type RuleVerdict = { run: true } | { run: false; reason: string };

async function predicate(what: string, fn: () => unknown): Promise<boolean> {
  let value: unknown;
  try {
    value = await fn();
  } catch (error) {
    throw new InputError(RunnerErrorCode.ruleResult, `${what} failed: ${messageOf(error)}`, { cause: error });
  }
  if (typeof value !== 'boolean') {
    throw new InputError(RunnerErrorCode.ruleResult, `${what} returned ${value === null ? 'null' : typeof value}, expected a boolean`);
  }
  return value;
}

/** @param scope `workflow`, `job` or `step` (for messages). */
export async function evaluateRules(rules: unknown, ctx: RuleContext, scope: string): Promise<RuleVerdict> {
  if (rules === undefined) return { run: true };
  if (!Array.isArray(rules)) throw new InputError(RunnerErrorCode.ruleResult, `${scope} rules must be an array of rule(...) / skip(...)`);
  for (const [index, r] of rules.entries()) {
    if (!isRule(r)) throw new InputError(RunnerErrorCode.ruleResult, `${scope} rules[${index}] is not a rule(...) or skip(...)`);
    if (r.mode === 'run') {
      if (!(await predicate(`${scope} rule "${r.name}"`, () => r.fn(ctx)))) return { run: false, reason: `${scope} rule "${r.name}" returned false` };
    } else if (await predicate(`${scope} skip rule "${r.name}"`, () => r.fn(ctx))) {
      return { run: false, reason: `skipped by ${scope} rule: ${r.name}` };
    }
  }
  return { run: true };
}

export async function evaluateWorkflowFilter(filter: unknown, ctx: RuleContext): Promise<RuleVerdict> {
  if (filter === undefined) return { run: true };
  if (typeof filter !== 'function') throw new InputError(RunnerErrorCode.ruleResult, 'workflow filter must be a function');
  const ok = await predicate('workflow filter', () => (filter as (c: RuleContext) => unknown)(ctx));
  return ok ? { run: true } : { run: false, reason: 'workflow filter returned false' };
}
