// `svc preview <event>`: the event argument → a synthetic provider event built from the local
// checkout. Provider events are built as GitHub-shaped payloads and go through the same
// normalizer the orchestrator uses, so preview and production agree on field meanings.
import { InputError } from '../../core/errors.ts';
import { githubEventDetails, type MatchOptions } from '../../workflow/matching/index.ts';
import { normalizeGithubPayload } from '../../plugins/providers/shared/github-payload.ts';
import type { NormalizedEvent } from '../../schemas/event.ts';
import { USAGE_ERROR_CODE } from '../../core/cli/error-text.ts';
import type { LocalGitState } from './local-git-state.ts';

/** The accepted forms, for help and usage errors. */
export const PREVIEW_EVENT_FORMS = [
  'push',
  'pr | pull_request[:<action>]',
  'tag:<name>',
  'release[:<action>]',
  'comment[:<action>]',
  'review[:<state>]',
  'review_comment[:<action>]',
  'dispatch',
  'create',
  'delete',
  'status[:<state>]',
  'fork',
  'star',
  'watch',
  'schedule',
  'event:<name>',
  'webhook:<name>',
  'workflow_run:<workflow>[:<conclusion>|:<action>]',
  'workflow_complete:<workflow>[:<status>]',
  'job_complete:<workflow>:<job>[:<status>]',
  'lifecycle:<event>',
] as const;

export type PreviewEventKind =
  | 'push' | 'pr' | 'tag' | 'release' | 'comment' | 'review' | 'review_comment' | 'dispatch' | 'create' | 'delete'
  | 'status' | 'fork' | 'star' | 'watch' | 'schedule' | 'event' | 'webhook'
  | 'workflow_run' | 'workflow_complete' | 'job_complete' | 'lifecycle';

export interface PreviewEventSpec {
  kind: PreviewEventKind;
  /** Action, state or name after the colon. */
  qualifier?: string;
}

const ALIASES: Record<string, PreviewEventKind> = {
  pull_request: 'pr',
  'review-comment': 'review_comment',
  reviewComment: 'review_comment',
  workflow_dispatch: 'dispatch',
  workflowRun: 'workflow_run',
  workflowComplete: 'workflow_complete',
  jobComplete: 'job_complete',
};
const KINDS = new Set<PreviewEventKind>([
  'push', 'pr', 'tag', 'release', 'comment', 'review', 'review_comment', 'dispatch', 'create', 'delete', 'status', 'fork', 'star', 'watch', 'schedule', 'event', 'webhook',
  'workflow_run', 'workflow_complete', 'job_complete', 'lifecycle',
]);
const NEEDS_NAME = new Set<PreviewEventKind>(['event', 'webhook', 'workflow_run', 'workflow_complete', 'job_complete', 'lifecycle']);
/** Kinds whose qualifier names workflows, which may hold spaces (not `:` or `@`). */
const NAMES_WORKFLOW = new Set<PreviewEventKind>(['workflow_run', 'workflow_complete', 'job_complete']);
// The values the orchestrator's completion and lifecycle events carry (kernel/orchestrator/events/).
const RUN_STATUSES = ['success', 'failed', 'cancelled'] as const;
const WORKFLOW_RUN_CONCLUSIONS = ['success', 'failure', 'cancelled', 'skipped', 'timed_out', 'neutral', 'action_required'] as const;
const LIFECYCLE_EVENTS = ['registration.updated', 'repository.created', 'repository.archived', 'repository.deleted', 'installation.created', 'installation.deleted'] as const;
const NO_QUALIFIER = new Set<PreviewEventKind>(['push', 'dispatch', 'create', 'delete', 'fork', 'star', 'watch', 'schedule']);

function usage(message: string): InputError {
  return new InputError(USAGE_ERROR_CODE, `${message}; events: ${PREVIEW_EVENT_FORMS.join(', ')}`);
}

export function parseEventSpec(text: string): PreviewEventSpec {
  const at = text.indexOf(':');
  const head = at < 0 ? text : text.slice(0, at);
  const qualifier = at < 0 ? undefined : text.slice(at + 1);
  const kind = ALIASES[head] ?? (KINDS.has(head as PreviewEventKind) ? (head as PreviewEventKind) : undefined);
  if (kind === undefined) throw usage(`unknown event ${JSON.stringify(text)}`);
  const bad = kind !== undefined && NAMES_WORKFLOW.has(kind) ? /[\0-\x1f]|^\s|::|:$/ : /[\s\0]/;
  if (qualifier !== undefined && (qualifier === '' || bad.test(qualifier))) throw usage(`${JSON.stringify(text)}: the part after ":" must be a non-empty word`);
  if (qualifier !== undefined && NO_QUALIFIER.has(kind)) throw usage(`${JSON.stringify(text)}: ${kind} takes nothing after ":"`);
  if (qualifier === undefined && NEEDS_NAME.has(kind)) throw usage(`${kind} needs a name: ${PREVIEW_EVENT_FORMS.find((form) => form.startsWith(`${kind}:`)) ?? `${kind}:<name>`}`);
  return qualifier === undefined ? { kind } : { kind, qualifier };
}

export interface PreviewEventOptions {
  /** `--branch`: the branch the event's branch filter sees (pushed branch, or a pull request's base). */
  branch?: string;
}

export interface BuiltPreviewEvent {
  event: NormalizedEvent;
  options: MatchOptions;
  /** Schedules fire per trigger: preview reports every schedule trigger as firing. */
  schedule: boolean;
  /** One line describing the event. */
  label: string;
}

const ZERO_SHA = '0'.repeat(40);

function repositoryPayload(state: LocalGitState): Record<string, unknown> {
  const [owner = 'local', name = 'repository'] = state.repository.split('/');
  return { full_name: state.repository, name, owner: { login: owner }, default_branch: state.defaultBranch ?? undefined };
}

function pullRequestPayload(state: LocalGitState, base: string | null): Record<string, unknown> {
  const repo = { full_name: state.repository };
  return {
    number: 1,
    title: state.commitMessage?.split('\n')[0] ?? '',
    draft: false,
    merged: false,
    head: { ref: state.branch ?? 'HEAD', sha: state.sha ?? '', repo },
    base: { ref: base ?? '', sha: '', repo },
  };
}

function internalEvent(state: LocalGitState, type: 'schedule' | 'event' | 'webhook', name: string | null): NormalizedEvent {
  const [owner = 'local', repoName = 'repository'] = state.repository.split('/');
  return {
    provider: type === 'webhook' ? 'generic' : 'svc',
    type,
    providerEvent: type,
    action: null,
    eventName: name === null ? type : `${type}:${name}`,
    repository: { fullName: state.repository, owner, name: repoName, id: null, cloneUrl: null, defaultBranch: state.defaultBranch },
    ref: state.branch === null ? null : `refs/heads/${state.branch}`,
    branch: state.branch,
    tag: null,
    sha: state.sha,
    beforeSha: null,
    deleted: false,
    sender: { login: state.user, id: null },
    commitMessage: null,
    changedFiles: null,
    pullRequest: null,
    comment: null,
    installationId: null,
    customEventName: name,
  };
}

/** One of `allowed`, or a usage error naming them. */
function oneOf<T extends string>(what: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw usage(`${what} ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
}

/**
 * `workflow_complete`, `job_complete` and `lifecycle` as the orchestrator stores and matches them
 * (kernel/orchestrator/events/completion.ts, normalize.ts): provider `svc`, the completion fields
 * in the payload and in the matcher's internal fields. The completed run is taken to be of HEAD.
 */
function completionEvent(spec: PreviewEventSpec & { kind: 'workflow_complete' | 'job_complete' | 'lifecycle' }, state: LocalGitState): BuiltPreviewEvent {
  const base = internalEvent(state, 'event', null);
  const parts = (spec.qualifier ?? '').split(':');
  if (spec.kind === 'lifecycle') {
    if (parts.length !== 1) throw usage(`lifecycle takes one event name: lifecycle:<event>`);
    const name = oneOf('lifecycle event', parts[0]!, LIFECYCLE_EVENTS);
    return { event: { ...base, type: 'lifecycle', providerEvent: name, eventName: name, customEventName: name, payload: {} }, options: { internal: {} }, schedule: false, label: '' };
  }
  const wantParts = spec.kind === 'job_complete' ? 2 : 1;
  if (parts.length < wantParts || parts.length > wantParts + 1) throw usage(`${spec.kind}: expected ${PREVIEW_EVENT_FORMS.find((form) => form.startsWith(`${spec.kind}:`))}`);
  const workflow = parts[0]!;
  const job = spec.kind === 'job_complete' ? parts[1]! : null;
  const status = oneOf('status', parts[wantParts] ?? 'success', RUN_STATUSES);
  const payload = { workflow, ...(job === null ? {} : { job }), status, repository: state.repository, sha: state.sha, ...(spec.kind === 'workflow_complete' ? { ref: base.ref } : {}) };
  return {
    event: { ...base, type: spec.kind, providerEvent: spec.kind, eventName: spec.kind, customEventName: null, payload },
    options: { internal: { workflow, job, status } },
    schedule: false,
    label: '',
  };
}

export function buildPreviewEvent(spec: PreviewEventSpec, state: LocalGitState, options: PreviewEventOptions = {}): BuiltPreviewEvent {
  const branch = options.branch ?? state.branch;
  const repository = repositoryPayload(state);
  const sender = { login: state.user };
  const changed: MatchOptions = state.changedFiles === null
    ? { changedFilesUnavailable: 'git diff could not list the changed files' }
    : { changedFiles: state.changedFiles };
  const github = (providerEvent: string, payload: Record<string, unknown>, extra: MatchOptions = {}): BuiltPreviewEvent => {
    const body = { repository, sender, ...payload };
    const event = normalizeGithubPayload('github', providerEvent, body);
    const details = githubEventDetails(providerEvent, body);
    return { event, options: { ...extra, details }, schedule: false, label: '' };
  };
  let built: BuiltPreviewEvent;
  switch (spec.kind) {
    case 'push':
    case 'tag': {
      const tagName = spec.kind === 'tag' ? (spec.qualifier ?? state.latestTag) : null;
      if (spec.kind === 'tag' && tagName === null) throw usage('tag needs a name (tag:<name>): this repository has no tag to default to');
      const ref = tagName !== null ? `refs/tags/${tagName}` : branch === null ? null : `refs/heads/${branch}`;
      built = github('push', {
        ref,
        after: state.sha ?? ZERO_SHA,
        before: state.parentSha ?? ZERO_SHA,
        head_commit: state.commitMessage === null ? null : { id: state.sha, message: state.commitMessage },
        commits: [],
      }, changed);
      break;
    }
    case 'pr':
      built = github('pull_request', { action: spec.qualifier ?? 'opened', pull_request: pullRequestPayload(state, options.branch ?? state.defaultBranch) }, {
        ...changed,
        commitMessage: state.commitMessage,
      });
      break;
    case 'review':
      built = github('pull_request_review', {
        action: 'submitted',
        review: spec.qualifier === undefined ? {} : { state: spec.qualifier },
        pull_request: pullRequestPayload(state, options.branch ?? state.defaultBranch),
      });
      break;
    case 'review_comment':
      built = github('pull_request_review_comment', {
        action: spec.qualifier ?? 'created',
        comment: { id: 1, body: '', user: sender },
        pull_request: pullRequestPayload(state, options.branch ?? state.defaultBranch),
      });
      break;
    case 'comment':
      built = github('issue_comment', { action: spec.qualifier ?? 'created', comment: { id: 1, body: '', user: sender }, issue: { number: 1 } });
      break;
    case 'release': {
      const tagName = state.latestTag;
      built = github('release', { action: spec.qualifier ?? 'published', release: tagName === null ? {} : { tag_name: tagName } });
      break;
    }
    case 'dispatch':
      built = github('workflow_dispatch', { ref: branch === null ? null : `refs/heads/${branch}`, inputs: {} });
      break;
    case 'create':
    case 'delete':
      built = github(spec.kind, { ref: branch, ref_type: 'branch' });
      break;
    case 'status':
      built = github('status', { sha: state.sha, state: spec.qualifier ?? null, context: null });
      break;
    case 'fork':
      built = github('fork', { forkee: { full_name: `${state.user || 'someone'}/${String(repository['name'])}` } });
      break;
    case 'star':
      built = github('star', { action: 'created' });
      break;
    case 'watch':
      built = github('watch', { action: 'started' });
      break;
    case 'schedule':
      built = { event: internalEvent(state, 'schedule', null), options: {}, schedule: true, label: '' };
      break;
    case 'event':
    case 'webhook':
      built = { event: internalEvent(state, spec.kind, spec.qualifier ?? null), options: {}, schedule: false, label: '' };
      break;
    case 'workflow_run': {
      // `workflow_run:<workflow>[:<conclusion>]` is a completed run (default success);
      // `workflow_run:<workflow>:requested|in_progress` a run with no conclusion yet.
      const [name = '', second, ...rest] = (spec.qualifier ?? '').split(':');
      if (rest.length > 0) throw usage(`workflow_run: expected ${PREVIEW_EVENT_FORMS.find((form) => form.startsWith('workflow_run:'))}`);
      const running = second === 'requested' || second === 'in_progress';
      const conclusion = running ? null : oneOf('workflow run conclusion (or requested, in_progress)', second ?? 'success', WORKFLOW_RUN_CONCLUSIONS);
      built = github('workflow_run', {
        action: running ? second : 'completed',
        workflow: { name },
        workflow_run: { name, conclusion, head_branch: branch, head_sha: state.sha },
      });
      break;
    }
    case 'workflow_complete':
    case 'job_complete':
    case 'lifecycle':
      built = completionEvent({ ...spec, kind: spec.kind }, state);
      break;
  }
  built.label = describeEvent(built.event, state);
  return built;
}

function describeEvent(event: NormalizedEvent, state: LocalGitState): string {
  if (event.type === 'workflow_complete' || event.type === 'job_complete') {
    const p = event.payload as { workflow: string; job?: string; status: string };
    return `${event.eventName} of ${p.job === undefined ? `workflow ${p.workflow}` : `job ${p.workflow}/${p.job}`} (${p.status}) in ${state.repository}`;
  }
  if (event.type === 'lifecycle') return `lifecycle ${event.eventName} in ${state.repository}`;
  const where = event.tag !== null ? `tag ${event.tag}` : event.pullRequest !== null ? `${event.pullRequest.headRef} → ${event.pullRequest.baseRef || '(unknown base)'}` : event.branch !== null ? `branch ${event.branch}` : 'no branch';
  const sha = state.sha === null ? 'no commit' : state.sha.slice(0, 7);
  return `${event.eventName} on ${where} (${sha}) in ${state.repository}`;
}
