// A normalized event against a lock file: which workflows run, and for every workflow that does
// not, the verdict of each filter that kept it out. Pure and synchronous: the caller fetches
// changed files, review details and policy answers first (see MatchOptions).
import type { NormalizedEvent } from '../../schemas/event.ts';
import type { Lock } from '../../schemas/lock.ts';
import { compileLock, type CompiledWorkflow } from './compiled-lock.ts';
import type { MessageRegex } from './patterns.ts';
import { evaluateTrigger, messageRegexesOf } from './trigger.ts';
import type { FilterVerdict, LockMatchResult, MatchOptions, WorkflowMatch, WorkflowNonMatch } from './types.ts';

function toMatch(cw: CompiledWorkflow, triggerIndex: number, orgWide: boolean, verdicts: FilterVerdict[]): WorkflowMatch {
  const trigger = cw.workflow.triggers[triggerIndex]!;
  const paths = cw.triggers[triggerIndex]!.paths;
  return {
    workflow: cw.workflow.name,
    trigger,
    triggerIndex,
    jobs: [...cw.jobs],
    dynamicJobs: [...cw.dynamicJobs],
    needsChangedFiles: paths !== null && paths.patterns.length > 0,
    requires: 'requires' in trigger ? [...trigger.requires] : [],
    orgWide,
    verdicts,
  };
}

function matchWorkflow(cw: CompiledWorkflow, event: NormalizedEvent, options: MatchOptions): WorkflowMatch | WorkflowNonMatch {
  const verdicts: FilterVerdict[] = [];
  let undecided = false;
  for (const compiled of cw.triggers) {
    const result = evaluateTrigger(compiled, cw.workflow.name, event, options, verdicts);
    if (result.verdict === 'pass') return toMatch(cw, compiled.index, result.orgWide, verdicts);
    if (result.verdict === 'indeterminate') undecided = true;
  }
  return { workflow: cw.workflow.name, verdict: undecided ? 'indeterminate' : 'no_match', reasons: verdicts };
}

/**
 * Match an event against every workflow of a lock. A workflow matches when any of its triggers
 * matches (the first one is reported); it is `indeterminate` (and does not run) when no trigger
 * matched and at least one could not be decided. Results keep the lock's workflow order.
 */
export function matchLock(event: NormalizedEvent, lock: Lock, options: MatchOptions = {}): LockMatchResult {
  const matched: WorkflowMatch[] = [];
  const unmatched: WorkflowNonMatch[] = [];
  for (const cw of compileLock(lock).workflows) {
    const result = matchWorkflow(cw, event, options);
    if ('triggerIndex' in result) matched.push(result);
    else unmatched.push(result);
  }
  return { matched, unmatched };
}

/** Every trigger's verdicts for one workflow (`svc preview --debug`), or `null` when the lock has no such workflow. */
export function explainWorkflow(event: NormalizedEvent, lock: Lock, workflow: string, options: MatchOptions = {}): FilterVerdict[] | null {
  const cw = compileLock(lock).byName.get(workflow);
  if (!cw) return null;
  const verdicts: FilterVerdict[] = [];
  for (const compiled of cw.triggers) evaluateTrigger(compiled, workflow, event, options, verdicts);
  return verdicts;
}

/** The `customEventName` of a schedule event that fires trigger `triggerIndex` of `workflow`. */
export function scheduleFireName(workflow: string, triggerIndex: number): string {
  return `${workflow}#${triggerIndex}`;
}

/**
 * The match a schedule fire produces, for the scheduler: `null` when the lock has no such
 * workflow or that trigger is not a schedule (the lock changed since the schedule was read).
 */
export function matchSchedule(lock: Lock, workflowName: string, triggerIndex: number): WorkflowMatch | null {
  const cw = compileLock(lock).byName.get(workflowName);
  const trigger = cw?.workflow.triggers[triggerIndex];
  if (!cw || !trigger || trigger.type !== 'schedule') return null;
  const verdicts: FilterVerdict[] = [
    {
      trigger: triggerIndex,
      triggerType: 'schedule',
      filter: 'schedule',
      verdict: 'pass',
      detail: `the schedule fire is for ${JSON.stringify(scheduleFireName(workflowName, triggerIndex))} (${trigger.cron} ${trigger.timezone})`,
    },
  ];
  return toMatch(cw, triggerIndex, false, verdicts);
}

/** The regular-expression commit-message filters of the lock that the event would test (for `regexResults`). */
export function lockMessageRegexes(lock: Lock, event: NormalizedEvent): MessageRegex[] {
  return messageRegexesOf(compileLock(lock).workflows.flatMap((cw) => cw.triggers), event);
}

/** Whether any trigger of the lock filters on paths. */
export function lockUsesPathFilters(lock: Lock): boolean {
  return compileLock(lock).usesPathFilters;
}

/**
 * Workflows whose decision depends on changed files the event does not carry: a trigger with
 * path filters whose other filters do not already fail. Empty when the event (or the options)
 * already list the changed files. The orchestrator fetches changed files only when this is not
 * empty (spec, processing step 11), then calls `matchLock` with them.
 */
export function workflowsNeedChangedFiles(lock: Lock, event: NormalizedEvent, options: MatchOptions = {}): string[] {
  if ((options.changedFiles ?? event.changedFiles) != null) return [];
  const names: string[] = [];
  const scratch: FilterVerdict[] = [];
  for (const cw of compileLock(lock).workflows) {
    if (!cw.usesPathFilters) continue;
    for (const compiled of cw.triggers) {
      if (compiled.paths === null || compiled.paths.patterns.length === 0) continue;
      scratch.length = 0;
      if (evaluateTrigger(compiled, cw.workflow.name, event, options, scratch, 'probe').verdict !== 'fail') {
        names.push(cw.workflow.name);
        break;
      }
    }
  }
  return names;
}
