// Shapes trigger matching returns and reads. Matching is pure: everything that needs I/O
// (changed files, review state, policy look-ups, file reads for `requires`) reaches it through
// these options, already fetched or as functions passed in.
import type { LockRequirement, LockTrigger, LockTriggerType } from '../../schemas/lock.ts';

export type Verdict = 'pass' | 'fail' | 'indeterminate';

/** The filter a verdict is about; `type` is the trigger family itself. */
export type FilterName =
  | 'type'
  | 'target'
  | 'repositories'
  | 'actions'
  | 'branches'
  | 'tags'
  | 'paths'
  | 'commitMessage'
  | 'states'
  | 'contexts'
  | 'refTypes'
  | 'workflows'
  | 'conclusions'
  | 'events'
  | 'name'
  | 'jobs'
  | 'statuses'
  | 'schedule'
  | 'threshold';

/** One filter of one trigger, in words a developer understands. */
export interface FilterVerdict {
  /** Index of the trigger in the workflow's `triggers`. */
  readonly trigger: number;
  readonly triggerType: LockTriggerType;
  readonly filter: FilterName;
  readonly verdict: Verdict;
  readonly detail: string;
}

export interface WorkflowMatch {
  readonly workflow: string;
  /** The first trigger that matched. */
  readonly trigger: LockTrigger;
  readonly triggerIndex: number;
  /** Static job names, in lock order. */
  readonly jobs: string[];
  /** Jobs flagged `dynamic` (generators evaluated on an agent): their real jobs are not known yet. */
  readonly dynamicJobs: string[];
  /** The matched trigger filters on paths, so the run was selected by changed files. */
  readonly needsChangedFiles: boolean;
  /** Content requirements still to evaluate at the event ref (`evaluateRequirements`). */
  readonly requires: LockRequirement[];
  /** Matched through repository patterns for an event of another repository. */
  readonly orgWide: boolean;
  /** Every filter verdict evaluated: the triggers before the matching one, then its own. */
  readonly verdicts: FilterVerdict[];
}

export interface WorkflowNonMatch {
  readonly workflow: string;
  /** `indeterminate` when at least one trigger could not be decided (and none matched): it did not run. */
  readonly verdict: 'no_match' | 'indeterminate';
  readonly reasons: FilterVerdict[];
}

export interface LockMatchResult {
  readonly matched: WorkflowMatch[];
  readonly unmatched: WorkflowNonMatch[];
}

/** Two-axis allow policy for organization-wide workflows; both axes must allow. */
export interface OrgWidePolicy {
  /** May workflows of this repository fire for other repositories' events? */
  workflowRepositoryAllowed(repository: string): boolean;
  /** May this repository's events fire other repositories' workflows? */
  sourceRepositoryAllowed(repository: string): boolean;
}

/**
 * Event facts the normalized event does not carry (they stay in the raw payload). Fill them
 * with `githubEventDetails` or from the provider's own payload; a filter that needs a missing
 * fact is `indeterminate`.
 */
export interface EventDetails {
  /** `approved`, `changes_requested`, `commented` (lower case). */
  readonly reviewState?: string | null;
  /** Commit status `state`: `pending`, `success`, `failure`, `error`. */
  readonly statusState?: string | null;
  /** Commit status `context`, e.g. `ci/lint`. */
  readonly statusContext?: string | null;
  readonly workflowRun?: {
    readonly name: string | null;
    /** `null` while the run has no conclusion yet. */
    readonly conclusion: string | null;
    readonly headBranch: string | null;
  } | null;
}

/** Payload fields of internal events (`workflow_complete`, `job_complete`, …). */
export interface InternalEventFields {
  readonly workflow?: string | null;
  readonly job?: string | null;
  /** `success`, `failed`, `cancelled`. */
  readonly status?: string | null;
  /**
   * Failures of the named workflows inside the window, counted by the caller (the orchestrator
   * keeps the failure history). Without it a `workflows_failed_batch` trigger is indeterminate.
   */
  readonly countFailures?: (query: { readonly workflows: readonly string[]; readonly windowSeconds: number }) => number;
}

export interface MatchOptions {
  /**
   * `owner/repo` of the repository the lock file belongs to. Triggers without repository
   * patterns match only its events. When omitted, the event's repository is taken as the lock's
   * own (the developer CLI previewing its own checkout).
   */
  readonly lockRepository?: string;
  /** Changed files fetched by the caller; overrides `event.changedFiles`. */
  readonly changedFiles?: readonly string[] | null;
  /**
   * Set (to a reason, or `true`) when the caller tried and could not get the changed files: path
   * filters are then `indeterminate` naming that reason.
   */
  readonly changedFilesUnavailable?: string | boolean;
  /** The head commit message fetched by the caller; overrides `event.commitMessage` (pull requests carry none). */
  readonly commitMessage?: string | null;
  /** Required for an organization-wide match; without it such a match fails closed. */
  readonly orgWidePolicy?: OrgWidePolicy;
  readonly details?: EventDetails;
  readonly internal?: InternalEventFields;
  /** Only this workflow may match (a dispatch or re-run naming one workflow). */
  readonly targetWorkflow?: string;
  /**
   * Outcomes of regular-expression commit-message filters the caller evaluated off its event
   * loop under a time bound, by `MessageRegex.key` (`lockMessageRegexes`, `registrationMessageRegexes`),
   * against the message this match uses. When given, no regular expression runs here: a key
   * that is missing, or an outcome that names why it was not decided (`took longer than
   * 100 ms`), makes its filter `indeterminate`. Without it expressions run synchronously.
   */
  readonly regexResults?: ReadonlyMap<string, RegexResult>;
}

/** Whether the expression matched, or why that is not known. */
export type RegexResult = boolean | { readonly undecided: string };
