// One lock trigger against one normalized event: every filter gets a verdict in words a
// developer understands, and the trigger matches only when every verdict passes. A filter that
// cannot be decided (missing commit message, changed files that could not be fetched, an
// invalid pattern, a fact the caller did not supply) is `indeterminate`, which does not run the
// workflow either: it is reported, never guessed.
import type { NormalizedEvent } from '../../schemas/event.ts';
import type { LockTrigger, LockTriggerType } from '../../schemas/lock.ts';
import {
  compileCommitMessage,
  compilePatternList,
  describeSelection,
  quote,
  select,
  showList,
  type MessageMatcher,
  type MessageRegex,
  type PatternList,
} from './patterns.ts';
import type { FilterName, FilterVerdict, MatchOptions, Verdict } from './types.ts';

/** A trigger with its pattern lists compiled. */
export interface CompiledTrigger {
  readonly trigger: LockTrigger;
  readonly index: number;
  /** `null` for triggers that are not tied to a repository (webhook, custom and internal events, schedules). */
  readonly repositories: PatternList | null;
  readonly branches: PatternList | null;
  readonly tags: PatternList | null;
  readonly paths: PatternList | null;
  readonly contexts: PatternList | null;
  readonly commitMessage: MessageMatcher | null;
}

export interface TriggerEvaluation {
  readonly verdict: Verdict;
  readonly orgWide: boolean;
}

/**
 * `evaluate`: every filter. `probe`: as `evaluate` but path filters pass without files, to learn
 * whether changed files are worth fetching.
 */
export type EvaluationMode = 'evaluate' | 'probe';

/** Trigger families fed only by the orchestrator itself (provider `svc`). */
const INTERNAL_TYPES: ReadonlySet<LockTriggerType> = new Set([
  'schedule',
  'event',
  'workflow_complete',
  'job_complete',
  'lifecycle',
  'workflows_failed_batch',
]);

const EMPTY: readonly string[] = Object.freeze([]);

export function compileTrigger(trigger: LockTrigger, index: number): CompiledTrigger {
  const has = <K extends string>(key: K): readonly string[] | null =>
    key in trigger ? ((trigger as unknown as Record<K, readonly string[]>)[key] ?? null) : null;
  const list = (kind: 'ref' | 'path' | 'repository', key: string) => {
    const patterns = has(key);
    return patterns === null ? null : compilePatternList(kind, patterns);
  };
  // Dispatch has no repository patterns but is still bound to the lock's own repository.
  const repositories = trigger.type === 'dispatch' ? compilePatternList('repository', EMPTY) : list('repository', 'repositories');
  return {
    trigger,
    index,
    repositories,
    branches: list('ref', 'branches'),
    tags: list('ref', 'tags'),
    paths: list('path', 'paths'),
    contexts: list('ref', 'contexts'),
    commitMessage: 'commitMessage' in trigger && trigger.commitMessage ? compileCommitMessage(trigger.commitMessage) : null,
  };
}

/** Collects verdicts of one trigger and remembers the worst. */
class Verdicts {
  readonly out: FilterVerdict[];
  readonly trigger: number;
  readonly triggerType: LockTriggerType;
  failed = false;
  undecided = false;

  constructor(out: FilterVerdict[], trigger: number, triggerType: LockTriggerType) {
    this.out = out;
    this.trigger = trigger;
    this.triggerType = triggerType;
  }

  add(filter: FilterName, verdict: Verdict, detail: string): void {
    if (verdict === 'fail') this.failed = true;
    else if (verdict === 'indeterminate') this.undecided = true;
    this.out.push({ trigger: this.trigger, triggerType: this.triggerType, filter, verdict, detail });
  }

  /** A set-like filter (actions, states, …): empty means any value. */
  oneOf(filter: FilterName, label: string, allowed: readonly string[], value: string | null | undefined, missing: string): void {
    if (allowed.length === 0) {
      this.add(filter, 'pass', value == null ? `no ${filter} filter` : `no ${filter} filter (${label} ${quote(value)})`);
    } else if (value == null) {
      this.add(filter, 'indeterminate', `${missing}, so ${showList(allowed)} cannot be checked`);
    } else if (allowed.includes(value)) {
      this.add(filter, 'pass', `${label} ${quote(value)} is one of ${showList(allowed)}`);
    } else {
      this.add(filter, 'fail', `${label} ${quote(value)} is not one of ${showList(allowed)}`);
    }
  }

  /** A glob list filter (branches, tags, contexts). */
  patterns(filter: FilterName, label: string, list: PatternList | null, value: string | null, missing: { verdict: Verdict; detail: string }): void {
    if (list === null || list.patterns.length === 0) {
      this.add(filter, 'pass', `no ${filter} filter`);
    } else if (list.error !== null) {
      this.add(filter, 'indeterminate', list.error);
    } else if (value === null) {
      this.add(filter, missing.verdict, `${missing.detail}, so ${list.shown} cannot match`);
    } else {
      const selection = select(list, value);
      this.add(filter, selection.selected ? 'pass' : 'fail', describeSelection(label, value, list, selection));
    }
  }

  result(orgWide: boolean): TriggerEvaluation {
    return { verdict: this.failed ? 'fail' : this.undecided ? 'indeterminate' : 'pass', orgWide };
  }
}

function sameRepository(a: string, b: string): boolean {
  return a === b || a.toLowerCase() === b.toLowerCase();
}

/**
 * Repository scope. Without patterns a trigger matches only events of the lock's own
 * repository. With patterns the event's repository must be selected by them (the lock's own
 * repository included: it is not implicitly in the list); an event of ANOTHER repository is an
 * organization-wide match and needs both policy axes to allow it. Returns whether the match is
 * organization-wide.
 */
function repositoryVerdict(v: Verdicts, list: PatternList, event: NormalizedEvent, options: MatchOptions): boolean {
  const source = event.repository?.fullName ?? null;
  if (source === null) {
    v.add('repositories', 'fail', 'the event names no repository');
    return false;
  }
  const own = options.lockRepository ?? source;
  const isOwn = sameRepository(source, own);
  if (list.patterns.length === 0) {
    if (isOwn) v.add('repositories', 'pass', `repository ${quote(source)} is this workflow's own repository`);
    else v.add('repositories', 'fail', `repository ${quote(source)} is not this workflow's repository ${quote(own)} and the trigger lists no repository patterns`);
    return false;
  }
  if (list.error !== null) {
    v.add('repositories', 'indeterminate', list.error);
    return false;
  }
  const selection = select(list, source);
  if (!selection.selected || isOwn) {
    v.add('repositories', selection.selected ? 'pass' : 'fail', describeSelection('repository', source, list, selection));
    return false;
  }
  const policy = options.orgWidePolicy;
  if (!policy) {
    v.add('repositories', 'fail', `repository ${quote(source)} matches ${quote(selection.by ?? list.shown)}, but no organization-wide policy was given, so workflows of ${quote(own)} may not run for it`);
    return true;
  }
  let workflowAllowed: boolean;
  let sourceAllowed: boolean;
  try {
    workflowAllowed = policy.workflowRepositoryAllowed(own);
    sourceAllowed = policy.sourceRepositoryAllowed(source);
  } catch (cause) {
    v.add('repositories', 'indeterminate', `the organization-wide policy could not be evaluated: ${(cause as Error).message}`);
    return true;
  }
  if (!workflowAllowed) {
    v.add('repositories', 'fail', `workflow repository ${quote(own)} may not run organization-wide workflows (workflow repository axis of the policy)`);
  } else if (!sourceAllowed) {
    v.add('repositories', 'fail', `source repository ${quote(source)} may not trigger organization-wide workflows (source repository axis of the policy)`);
  } else {
    v.add('repositories', 'pass', `${describeSelection('repository', source, list, selection)} (organization-wide; both policy axes allow)`);
  }
  return true;
}

const MAX_FILES_SHOWN = 5;

function pathsVerdict(v: Verdicts, list: PatternList | null, event: NormalizedEvent, options: MatchOptions, mode: EvaluationMode): void {
  if (list === null || list.patterns.length === 0) {
    v.add('paths', 'pass', 'no paths filter');
    return;
  }
  if (list.error !== null) {
    v.add('paths', 'indeterminate', list.error);
    return;
  }
  const files = options.changedFiles ?? event.changedFiles;
  if (files == null && event.deleted) {
    // Nothing to fetch: a deleted ref has no commits, so no changed files.
    v.add('paths', 'fail', `the push deletes ${quote(event.ref ?? 'its ref')}, so it changes no files and none matches ${list.shown}`);
    return;
  }
  if (files == null) {
    if (mode === 'probe') v.add('paths', 'pass', `changed files are needed to check ${list.shown}`);
    else if (options.changedFilesUnavailable) {
      const reason = typeof options.changedFilesUnavailable === 'string' ? `: ${options.changedFilesUnavailable}` : '';
      v.add('paths', 'indeterminate', `the changed files are unavailable${reason}, so ${list.shown} cannot be checked`);
    } else {
      v.add('paths', 'indeterminate', `the changed files were not supplied (fetch them when workflowsNeedChangedFiles names this workflow), so ${list.shown} cannot be checked`);
    }
    return;
  }
  if (files.length === 0) {
    v.add('paths', 'fail', `the event changes no files, so none matches ${list.shown}`);
    return;
  }
  for (const file of files) {
    const selection = select(list, file);
    if (selection.selected) {
      const of = files.length === 1 ? 'the only changed file' : `one of ${files.length} changed files`;
      v.add('paths', 'pass', `${describeSelection('changed file', file, list, selection)} (${of})`);
      return;
    }
  }
  const shown = files.slice(0, MAX_FILES_SHOWN).map(quote).join(', ');
  const more = files.length > MAX_FILES_SHOWN ? `, … ${files.length - MAX_FILES_SHOWN} more` : '';
  const count = files.length === 1 ? 'the only changed file' : `none of the ${files.length} changed files`;
  v.add('paths', 'fail', `${count} (${shown}${more}) is selected by ${list.shown}`);
}

function firstLine(message: string): string {
  const line = message.split('\n', 1)[0] ?? '';
  return line.length > 72 ? `${line.slice(0, 71)}…` : line;
}

function commitMessageVerdict(v: Verdicts, matcher: MessageMatcher | null, event: NormalizedEvent, options: MatchOptions): void {
  if (matcher === null) {
    v.add('commitMessage', 'pass', 'no commitMessage filter');
    return;
  }
  if (!matcher.ok) {
    v.add('commitMessage', 'indeterminate', matcher.error);
    return;
  }
  const message = options.commitMessage !== undefined ? options.commitMessage : event.commitMessage;
  if (message === null) {
    const why = event.deleted ? `the push deletes ${quote(event.ref ?? 'its ref')}, so it carries no commit message` : 'the event carries no commit message';
    v.add('commitMessage', 'indeterminate', `${why} to test against ${matcher.shown}`);
    return;
  }
  const subject = `commit message ${quote(firstLine(message))}`;
  let ok: boolean;
  if (matcher.regex !== undefined && options.regexResults !== undefined) {
    const result = options.regexResults.get(matcher.regex.key) ?? { undecided: 'was not evaluated' };
    if (typeof result !== 'boolean') {
      // Like any undecided filter the workflow does not run; the detail says why.
      v.add('commitMessage', 'indeterminate', `regular expression ${matcher.shown} ${result.undecided} on ${subject}; treated as not matching`);
      return;
    }
    ok = result;
  } else {
    ok = matcher.test(message);
  }
  v.add('commitMessage', ok ? 'pass' : 'fail', `${subject} ${ok ? 'matches' : 'does not match'} ${matcher.shown}`);
}

/**
 * The regular-expression commit-message filters an event would test among these triggers (those
 * of its own trigger family), once each: what a caller evaluates for `regexResults`.
 */
export function messageRegexesOf(triggers: Iterable<CompiledTrigger>, event: NormalizedEvent): MessageRegex[] {
  const found = new Map<string, MessageRegex>();
  for (const compiled of triggers) {
    const matcher = compiled.commitMessage;
    if (compiled.trigger.type === event.type && matcher?.ok && matcher.regex) found.set(matcher.regex.key, matcher.regex);
  }
  return [...found.values()];
}

function refTypeOf(ref: string | null): 'branch' | 'tag' | null {
  if (ref === null) return null;
  if (ref.startsWith('refs/heads/')) return 'branch';
  if (ref.startsWith('refs/tags/')) return 'tag';
  return null;
}

/** The name a webhook trigger's `events` list is compared with (generic sources put it in the action). */
export function webhookEventName(event: NormalizedEvent): string {
  return event.customEventName ?? event.action ?? event.providerEvent;
}

const NO_BRANCH = { verdict: 'fail' as const, detail: 'the event is not on a branch' };
const NO_TAG = { verdict: 'fail' as const, detail: 'the event is not on a tag' };
const NO_BASE = { verdict: 'indeterminate' as const, detail: 'the event names no base branch' };

function typeVerdict(v: Verdicts, trigger: LockTrigger, event: NormalizedEvent): boolean {
  if (event.type === null) {
    v.add('type', 'fail', `${quote(event.eventName)} from ${quote(event.provider)} belongs to no trigger family`);
    return false;
  }
  if (event.type !== trigger.type) {
    v.add('type', 'fail', `event type ${quote(event.type)} is not ${quote(trigger.type)}`);
    return false;
  }
  if (INTERNAL_TYPES.has(trigger.type) && event.provider !== 'svc') {
    v.add('type', 'fail', `${quote(trigger.type)} triggers accept only internal events (provider "svc"); this one comes from ${quote(event.provider)}`);
    return false;
  }
  v.add('type', 'pass', `${quote(event.eventName)} is a ${quote(trigger.type)} event`);
  return true;
}

/**
 * Evaluate one trigger. Verdicts are appended to `out`; a type mismatch stops there (the other
 * filters would say nothing useful), otherwise every filter is evaluated so `--debug` shows
 * them all.
 */
export function evaluateTrigger(
  compiled: CompiledTrigger,
  workflow: string,
  event: NormalizedEvent,
  options: MatchOptions,
  out: FilterVerdict[],
  mode: EvaluationMode = 'evaluate',
): TriggerEvaluation {
  const { trigger } = compiled;
  const v = new Verdicts(out, compiled.index, trigger.type);
  if (!typeVerdict(v, trigger, event)) return v.result(false);
  if (options.targetWorkflow !== undefined) {
    const ok = options.targetWorkflow === workflow;
    v.add('target', ok ? 'pass' : 'fail', ok ? `the event targets workflow ${quote(workflow)}` : `the event targets workflow ${quote(options.targetWorkflow)}, not ${quote(workflow)}`);
  }
  const orgWide = compiled.repositories === null ? false : repositoryVerdict(v, compiled.repositories, event, options);
  const details = options.details ?? {};
  const internal = options.internal ?? {};
  const baseBranch = event.pullRequest?.baseRef || event.branch;

  switch (trigger.type) {
    case 'push':
      v.patterns('branches', 'branch', compiled.branches, event.branch, NO_BRANCH);
      pathsVerdict(v, compiled.paths, event, options, mode);
      commitMessageVerdict(v, compiled.commitMessage, event, options);
      break;
    case 'pr':
      v.oneOf('actions', 'pull request action', trigger.actions, event.action, 'the event has no action');
      v.patterns('branches', 'base branch', compiled.branches, baseBranch, NO_BASE);
      pathsVerdict(v, compiled.paths, event, options, mode);
      commitMessageVerdict(v, compiled.commitMessage, event, options);
      break;
    case 'comment':
    case 'star':
    case 'watch':
      v.oneOf('actions', `${trigger.type} action`, trigger.actions, event.action, 'the event has no action');
      break;
    case 'tag':
      v.patterns('tags', 'tag', compiled.tags, event.tag, NO_TAG);
      break;
    case 'release':
      v.oneOf('actions', 'release action', trigger.actions, event.action, 'the event has no action');
      v.patterns('tags', 'release tag', compiled.tags, event.tag, { verdict: 'indeterminate', detail: 'the release names no tag' });
      break;
    case 'review':
      v.oneOf('actions', 'review action', trigger.actions, event.action, 'the event has no action');
      v.oneOf('states', 'review state', trigger.states, details.reviewState, 'the review state was not supplied');
      v.patterns('branches', 'base branch', compiled.branches, baseBranch, NO_BASE);
      break;
    case 'review_comment':
      v.oneOf('actions', 'review comment action', trigger.actions, event.action, 'the event has no action');
      v.patterns('branches', 'base branch', compiled.branches, baseBranch, NO_BASE);
      break;
    case 'dispatch':
      v.patterns('branches', 'branch', compiled.branches, event.branch, NO_BRANCH);
      break;
    case 'create':
    case 'delete': {
      const refType = refTypeOf(event.ref);
      v.oneOf('refTypes', 'ref type', trigger.refTypes, refType, `the ref ${quote(event.ref ?? '')} is neither a branch nor a tag`);
      if (refType === 'branch') v.patterns('branches', 'branch', compiled.branches, event.branch, NO_BRANCH);
      if (refType === 'tag') v.patterns('tags', 'tag', compiled.tags, event.tag, NO_TAG);
      break;
    }
    case 'status':
      v.oneOf('states', 'status state', trigger.states, details.statusState, 'the status state was not supplied');
      v.patterns('contexts', 'status context', compiled.contexts, details.statusContext ?? null, {
        verdict: 'indeterminate',
        detail: 'the status context was not supplied',
      });
      break;
    case 'workflow_run': {
      const run = details.workflowRun;
      const missing = 'the workflow run details were not supplied';
      v.oneOf('workflows', 'workflow', trigger.workflows, run?.name, run ? 'the workflow run has no name' : missing);
      v.oneOf('actions', 'workflow run action', trigger.actions, event.action, 'the event has no action');
      if (run && run.conclusion === null && trigger.conclusions.length > 0) {
        v.add('conclusions', 'fail', `the workflow run has no conclusion yet, so it is not one of ${showList(trigger.conclusions)}`);
      } else {
        v.oneOf('conclusions', 'conclusion', trigger.conclusions, run?.conclusion, missing);
      }
      v.patterns('branches', 'head branch', compiled.branches, run?.headBranch ?? null, {
        verdict: 'indeterminate',
        detail: run ? 'the workflow run names no head branch' : missing,
      });
      break;
    }
    case 'fork':
      break;
    case 'schedule': {
      const own = `${workflow}#${compiled.index}`;
      const fire = event.customEventName;
      if (fire === own) v.add('schedule', 'pass', `the schedule fire is for ${quote(own)} (${trigger.cron} ${trigger.timezone})`);
      else v.add('schedule', 'fail', `the schedule fire ${quote(fire ?? '')} is for another trigger, not ${quote(own)}`);
      break;
    }
    case 'webhook':
      v.oneOf('events', 'webhook event', trigger.events, webhookEventName(event), 'the event has no name');
      break;
    case 'event': {
      const name = event.customEventName;
      if (name === trigger.name) v.add('name', 'pass', `event name ${quote(name)} is ${quote(trigger.name)}`);
      else v.add('name', 'fail', name === null ? `the event has no name, expected ${quote(trigger.name)}` : `event name ${quote(name)} is not ${quote(trigger.name)}`);
      break;
    }
    case 'workflow_complete':
      v.oneOf('workflows', 'workflow', trigger.workflows, internal.workflow, 'the completed workflow was not supplied');
      v.oneOf('statuses', 'status', trigger.statuses, internal.status, 'the completion status was not supplied');
      break;
    case 'job_complete':
      v.oneOf('workflows', 'workflow', trigger.workflows, internal.workflow, 'the completed job\'s workflow was not supplied');
      v.oneOf('jobs', 'job', trigger.jobs, internal.job, 'the completed job was not supplied');
      v.oneOf('statuses', 'status', trigger.statuses, internal.status, 'the completion status was not supplied');
      break;
    case 'lifecycle':
      v.oneOf('events', 'lifecycle event', trigger.events, event.customEventName, 'the event has no name');
      break;
    case 'workflows_failed_batch': {
      v.oneOf('workflows', 'failed workflow', trigger.workflows, internal.workflow, 'the failed workflow was not supplied');
      const window = `${trigger.windowSeconds} s`;
      if (!internal.countFailures) {
        v.add('threshold', 'indeterminate', `the failure count was not supplied, so "${trigger.threshold} failures in ${window}" cannot be checked`);
        break;
      }
      let count: number;
      try {
        count = internal.countFailures({ workflows: trigger.workflows, windowSeconds: trigger.windowSeconds });
      } catch (cause) {
        v.add('threshold', 'indeterminate', `the failure count could not be read: ${(cause as Error).message}`);
        break;
      }
      const reached = count >= trigger.threshold;
      v.add('threshold', reached ? 'pass' : 'fail', `${count} failure${count === 1 ? '' : 's'} in the last ${window}: the threshold of ${trigger.threshold} is ${reached ? 'reached' : 'not reached'}`);
      break;
    }
  }
  return v.result(orgWide);
}
