// Trigger builders. Each returns plain data (no closures): the compiler normalizes it into a
// lock trigger and the orchestrator matches events against that, never against workflow code.
import { TRIGGER_TYPES as SCHEMA_TRIGGER_TYPES } from '../schemas/event.ts';

/** A glob; a leading `!` negates it. Order matters: later patterns override earlier ones. */
export type Pattern = string;

/** Content requirement read at the event ref before a run is created (`requires`). */
export interface ContentRequirement {
  /** Repository-relative file path. */
  readonly file: string;
  /** `false` requires the file to be absent. Default `true`. */
  readonly exists?: boolean;
  /** The file must contain this text. Implies `exists`. */
  readonly contains?: string;
}

/** Filters shared by provider triggers that act on a repository. */
export interface RepositoryFilter {
  /** `owner/repo` patterns; any entry makes the workflow organization-wide. */
  readonly repositories?: readonly Pattern[];
}

export interface RequiresFilter {
  readonly requires?: readonly ContentRequirement[];
}

/**
 * A glob over the whole message, or a regular expression (an unanchored search). The
 * orchestrator gives an expression at most 100 ms on a commit message, off its event loop: one
 * that takes longer (catastrophic backtracking such as `/(a+)+$/`) is treated as not matching,
 * the workflow does not run and the delivery record says why.
 */
export type CommitMessageFilter = string | RegExp;

export interface PushOptions extends RepositoryFilter, RequiresFilter {
  readonly branches?: readonly Pattern[];
  readonly paths?: readonly Pattern[];
  readonly commitMessage?: CommitMessageFilter;
}

export type PullRequestAction =
  | 'opened'
  | 'synchronize'
  | 'reopened'
  | 'closed'
  | 'edited'
  | 'labeled'
  | 'unlabeled'
  | 'assigned'
  | 'unassigned'
  | 'ready_for_review'
  | 'converted_to_draft'
  | 'review_requested'
  | 'review_request_removed';

export interface PullRequestOptions extends RepositoryFilter, RequiresFilter {
  /** Default: opened, reopened, synchronize. */
  readonly actions?: readonly PullRequestAction[];
  /** Base-branch patterns. */
  readonly branches?: readonly Pattern[];
  readonly paths?: readonly Pattern[];
  readonly commitMessage?: CommitMessageFilter;
}

export type CommentAction = 'created' | 'edited' | 'deleted';
export interface CommentOptions extends RepositoryFilter {
  /** Default: created. */
  readonly actions?: readonly CommentAction[];
}

export interface TagOptions extends RepositoryFilter, RequiresFilter {
  readonly tags?: readonly Pattern[];
}

export type ReleaseAction = 'published' | 'unpublished' | 'created' | 'edited' | 'deleted' | 'prereleased' | 'released';
export interface ReleaseOptions extends RepositoryFilter {
  /** Default: published. */
  readonly actions?: readonly ReleaseAction[];
  readonly tags?: readonly Pattern[];
}

export type ReviewAction = 'submitted' | 'edited' | 'dismissed';
export type ReviewState = 'approved' | 'changes_requested' | 'commented';
export interface ReviewOptions extends RepositoryFilter {
  /** Default: submitted. */
  readonly actions?: readonly ReviewAction[];
  readonly states?: readonly ReviewState[];
  readonly branches?: readonly Pattern[];
}

export interface ReviewCommentOptions extends RepositoryFilter {
  /** Default: created. */
  readonly actions?: readonly CommentAction[];
  readonly branches?: readonly Pattern[];
}

export type DispatchInput =
  | { readonly type: 'string'; readonly description?: string; readonly required?: boolean; readonly default?: string }
  | { readonly type: 'number'; readonly description?: string; readonly required?: boolean; readonly default?: number }
  | { readonly type: 'boolean'; readonly description?: string; readonly required?: boolean; readonly default?: boolean }
  | {
      readonly type: 'choice';
      readonly options: readonly string[];
      readonly description?: string;
      readonly required?: boolean;
      readonly default?: string;
    };

export interface DispatchOptions {
  readonly inputs?: Readonly<Record<string, DispatchInput>>;
  readonly branches?: readonly Pattern[];
}

export type RefType = 'branch' | 'tag';
export interface RefEventOptions extends RepositoryFilter {
  /** Default: branch and tag. */
  readonly refTypes?: readonly RefType[];
  readonly branches?: readonly Pattern[];
  readonly tags?: readonly Pattern[];
}

export type CommitState = 'pending' | 'success' | 'failure' | 'error';
export interface StatusOptions extends RepositoryFilter {
  readonly states?: readonly CommitState[];
  /** Status context name patterns. */
  readonly contexts?: readonly Pattern[];
}

export type WorkflowRunAction = 'requested' | 'in_progress' | 'completed';
export type WorkflowRunConclusion = 'success' | 'failure' | 'cancelled' | 'skipped' | 'timed_out' | 'neutral' | 'action_required';
export interface WorkflowRunOptions extends RepositoryFilter {
  readonly workflows: readonly string[];
  /** Default: completed. */
  readonly actions?: readonly WorkflowRunAction[];
  readonly conclusions?: readonly WorkflowRunConclusion[];
  readonly branches?: readonly Pattern[];
}

export interface StarOptions extends RepositoryFilter {
  /** Default: created. */
  readonly actions?: readonly ('created' | 'deleted')[];
}

export interface ScheduleOptions {
  /** IANA time zone the cron expression is read in. Default UTC. */
  readonly timezone?: string;
  /** Branch whose workflow definition runs. Default: the default branch. */
  readonly branch?: string;
}

export interface WebhookOptions {
  /** Generic-source event names. */
  readonly events: readonly string[];
}

export type RunStatus = 'success' | 'failed' | 'cancelled';
export interface WorkflowCompleteOptions {
  readonly workflows?: readonly string[];
  readonly statuses?: readonly RunStatus[];
}
export interface JobCompleteOptions {
  readonly workflows?: readonly string[];
  readonly jobs?: readonly string[];
  readonly statuses?: readonly RunStatus[];
}

export type LifecycleEvent =
  | 'registration.updated'
  | 'repository.created'
  | 'repository.archived'
  | 'repository.deleted'
  | 'installation.created'
  | 'installation.deleted';
export interface LifecycleOptions {
  readonly events?: readonly LifecycleEvent[];
}

export interface WorkflowsFailedBatchOptions {
  readonly workflows?: readonly string[];
  /** Failures inside the window that fire the trigger. Default 1. */
  readonly threshold?: number;
  /** Window length in seconds. Default 3600. */
  readonly windowSeconds?: number;
}

/** Options of each trigger type, keyed by the lock's `type`. */
export interface TriggerOptionsByType {
  push: PushOptions;
  pr: PullRequestOptions;
  comment: CommentOptions;
  tag: TagOptions;
  release: ReleaseOptions;
  review: ReviewOptions;
  review_comment: ReviewCommentOptions;
  dispatch: DispatchOptions;
  create: RefEventOptions;
  delete: RefEventOptions;
  status: StatusOptions;
  workflow_run: WorkflowRunOptions;
  fork: RepositoryFilter;
  star: StarOptions;
  watch: StarOptions;
  schedule: ScheduleOptions & { readonly cron: string };
  webhook: WebhookOptions;
  event: { readonly name: string };
  workflow_complete: WorkflowCompleteOptions;
  job_complete: JobCompleteOptions;
  lifecycle: LifecycleOptions;
  workflows_failed_batch: WorkflowsFailedBatchOptions;
}

export type TriggerType = keyof TriggerOptionsByType;

// One list, shared with the lock schema and the compiler (order is the lock's trigger order).
export const TRIGGER_TYPES: readonly TriggerType[] = SCHEMA_TRIGGER_TYPES;

export interface TriggerOf<T extends TriggerType> {
  readonly kind: 'svc.trigger';
  readonly type: T;
  readonly options: TriggerOptionsByType[T];
}

/** Any trigger function result. */
export type Trigger = { [T in TriggerType]: TriggerOf<T> }[TriggerType];

function make<T extends TriggerType>(type: T, options: TriggerOptionsByType[T]): TriggerOf<T> {
  return Object.freeze({ kind: 'svc.trigger', type, options: Object.freeze({ ...options }) as TriggerOptionsByType[T] });
}

export const push = (options: PushOptions = {}): TriggerOf<'push'> => make('push', options);
export const pr = (options: PullRequestOptions = {}): TriggerOf<'pr'> => make('pr', options);
export const comment = (options: CommentOptions = {}): TriggerOf<'comment'> => make('comment', options);
export const tag = (options: TagOptions = {}): TriggerOf<'tag'> => make('tag', options);
export const release = (options: ReleaseOptions = {}): TriggerOf<'release'> => make('release', options);
export const review = (options: ReviewOptions = {}): TriggerOf<'review'> => make('review', options);
export const review_comment = (options: ReviewCommentOptions = {}): TriggerOf<'review_comment'> =>
  make('review_comment', options);
export const reviewComment = review_comment;
export const dispatch = (options: DispatchOptions = {}): TriggerOf<'dispatch'> => make('dispatch', options);
export const create = (options: RefEventOptions = {}): TriggerOf<'create'> => make('create', options);
/** `delete` is a reserved word: import it as `deleteRef` (also exported as `delete`). */
export const deleteRef = (options: RefEventOptions = {}): TriggerOf<'delete'> => make('delete', options);
export const status = (options: StatusOptions = {}): TriggerOf<'status'> => make('status', options);
export const workflow_run = (options: WorkflowRunOptions): TriggerOf<'workflow_run'> => make('workflow_run', options);
export const workflowRun = workflow_run;
export const fork = (options: RepositoryFilter = {}): TriggerOf<'fork'> => make('fork', options);
export const star = (options: StarOptions = {}): TriggerOf<'star'> => make('star', options);
export const watch = (options: StarOptions = {}): TriggerOf<'watch'> => make('watch', options);
export const schedule = (cron: string, options: ScheduleOptions = {}): TriggerOf<'schedule'> =>
  make('schedule', { ...options, cron });
export const webhook = (options: WebhookOptions): TriggerOf<'webhook'> => make('webhook', options);
/** A custom event emitted by a step with `ctx.emit(name, payload)`. */
export const event = (name: string): TriggerOf<'event'> => make('event', { name });
export const workflowComplete = (options: WorkflowCompleteOptions = {}): TriggerOf<'workflow_complete'> =>
  make('workflow_complete', options);
export const jobComplete = (options: JobCompleteOptions = {}): TriggerOf<'job_complete'> =>
  make('job_complete', options);
export const lifecycle = (options: LifecycleOptions = {}): TriggerOf<'lifecycle'> => make('lifecycle', options);
export const workflows_failed_batch = (options: WorkflowsFailedBatchOptions = {}): TriggerOf<'workflows_failed_batch'> =>
  make('workflows_failed_batch', options);
export const workflowsFailedBatch = workflows_failed_batch;

export function isTrigger(value: unknown): value is Trigger {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'svc.trigger' &&
    (TRIGGER_TYPES as readonly unknown[]).includes((value as { type?: unknown }).type)
  );
}
