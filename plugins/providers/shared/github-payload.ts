// GitHub-shaped webhook payloads → the normalized event. Shared by the `github` provider, the
// `git` provider (its post-receive hook sends GitHub-shaped pushes) and `svc preview`.
// Payloads come from outside: every field is read defensively and a wrong type reads as absent.
import type { NormalizedEvent, TriggerType } from '../../../schemas/event.ts';
import { InputError } from '../../../core/errors.ts';

type Json = Record<string, unknown>;

function obj(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
}
function str(value: unknown): string | null {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null;
}
function at(root: unknown, ...path: string[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    const o = obj(cur);
    if (!o) return undefined;
    cur = o[key];
  }
  return cur;
}

const EVENT_TYPES: Record<string, TriggerType> = {
  push: 'push',
  pull_request: 'pr',
  pull_request_target: 'pr',
  issue_comment: 'comment',
  release: 'release',
  pull_request_review: 'review',
  pull_request_review_comment: 'review_comment',
  workflow_dispatch: 'dispatch',
  repository_dispatch: 'dispatch',
  create: 'create',
  delete: 'delete',
  status: 'status',
  workflow_run: 'workflow_run',
  fork: 'fork',
  star: 'star',
  watch: 'watch',
};

const ZERO_SHA = /^0+$/;

function repositoryOf(payload: Json): NormalizedEvent['repository'] {
  const repo = obj(payload['repository']);
  if (!repo) return null;
  const fullName = str(repo['full_name']);
  if (!fullName || !fullName.includes('/')) return null;
  const [owner = '', name = ''] = fullName.split('/');
  return {
    fullName,
    owner: str(at(repo, 'owner', 'login')) ?? str(at(repo, 'owner', 'name')) ?? owner,
    name: str(repo['name']) ?? name,
    id: str(repo['id']),
    cloneUrl: str(repo['clone_url']),
    defaultBranch: str(repo['default_branch']) ?? str(repo['master_branch']),
  };
}

function pullRequestOf(pr: Json | null, baseRepo: string | null): NormalizedEvent['pullRequest'] {
  if (!pr) return null;
  const headRepository = str(at(pr, 'head', 'repo', 'full_name')) ?? '';
  const base = str(at(pr, 'base', 'repo', 'full_name')) ?? baseRepo ?? '';
  return {
    number: Number(pr['number'] ?? 0) || 0,
    headRef: str(at(pr, 'head', 'ref')) ?? '',
    headSha: str(at(pr, 'head', 'sha')) ?? '',
    headRepository,
    baseRef: str(at(pr, 'base', 'ref')) ?? '',
    baseSha: str(at(pr, 'base', 'sha')) ?? '',
    // A missing head repository (deleted fork) cannot be proven same-repository: treat as fork.
    isFork: headRepository === '' || headRepository.toLowerCase() !== base.toLowerCase(),
    draft: pr['draft'] === true,
    merged: pr['merged'] === true,
    title: str(pr['title']) ?? '',
  };
}

function changedFilesOfPush(payload: Json): string[] | null {
  const commits = payload['commits'];
  if (!Array.isArray(commits) || commits.length === 0) return null;
  // GitHub truncates `commits` at 20 entries and file lists per commit; past that, fetch.
  if (commits.length >= 20) return null;
  const files = new Set<string>();
  for (const commit of commits) {
    for (const field of ['added', 'removed', 'modified']) {
      const list = at(commit, field);
      if (!Array.isArray(list)) return null;
      for (const f of list) if (typeof f === 'string') files.add(f);
    }
  }
  return [...files].sort();
}

function refParts(ref: string | null): { branch: string | null; tag: string | null } {
  if (!ref) return { branch: null, tag: null };
  if (ref.startsWith('refs/heads/')) return { branch: ref.slice('refs/heads/'.length), tag: null };
  if (ref.startsWith('refs/tags/')) return { branch: null, tag: ref.slice('refs/tags/'.length) };
  return { branch: null, tag: null };
}

export function normalizeGithubPayload(provider: string, providerEvent: string, payload: unknown): NormalizedEvent {
  const body = obj(payload);
  if (!body) throw new InputError('SVC_ERR_EVENT_INVALID_PAYLOAD', `${providerEvent} payload must be a JSON object`);
  const repository = repositoryOf(body);
  const action = str(body['action']);
  let type: TriggerType | null = EVENT_TYPES[providerEvent] ?? null;
  let ref: string | null = null;
  let sha: string | null = null;
  let beforeSha: string | null = null;
  let deleted = false;
  let commitMessage: string | null = null;
  let changedFiles: string[] | null = null;
  let pullRequest: NormalizedEvent['pullRequest'] = null;
  let comment: NormalizedEvent['comment'] = null;
  let customEventName: string | null = null;

  switch (providerEvent) {
    case 'push': {
      ref = str(body['ref']);
      const after = str(body['after']);
      deleted = body['deleted'] === true || (after !== null && ZERO_SHA.test(after));
      sha = deleted ? null : after;
      beforeSha = str(body['before']);
      if (ref?.startsWith('refs/tags/')) type = 'tag';
      commitMessage = deleted ? null : str(at(body, 'head_commit', 'message'));
      changedFiles = deleted ? null : changedFilesOfPush(body);
      break;
    }
    case 'pull_request':
    case 'pull_request_target':
    case 'pull_request_review':
    case 'pull_request_review_comment': {
      pullRequest = pullRequestOf(obj(body['pull_request']), repository?.fullName ?? null);
      if (pullRequest) {
        ref = `refs/heads/${pullRequest.baseRef}`;
        sha = pullRequest.headSha || null;
      }
      if (providerEvent === 'pull_request_review_comment') {
        const c = obj(body['comment']);
        if (c) comment = { id: str(c['id']) ?? '', body: str(c['body']) ?? '', author: str(at(c, 'user', 'login')) ?? '' };
      }
      break;
    }
    case 'issue_comment': {
      const c = obj(body['comment']);
      if (c) comment = { id: str(c['id']) ?? '', body: str(c['body']) ?? '', author: str(at(c, 'user', 'login')) ?? '' };
      break;
    }
    case 'create':
    case 'delete': {
      const refType = str(body['ref_type']);
      const name = str(body['ref']);
      if (name) ref = refType === 'tag' ? `refs/tags/${name}` : `refs/heads/${name}`;
      break;
    }
    case 'release': {
      const tagName = str(at(body, 'release', 'tag_name'));
      if (tagName) ref = `refs/tags/${tagName}`;
      break;
    }
    case 'workflow_dispatch': {
      ref = str(body['ref']);
      break;
    }
    case 'repository_dispatch': {
      customEventName = action;
      ref = repository?.defaultBranch ? `refs/heads/${repository.defaultBranch}` : null;
      break;
    }
    case 'status': {
      sha = str(body['sha']);
      break;
    }
    default:
      break;
  }

  const { branch, tag } = refParts(ref);
  if (ref === null && repository?.defaultBranch && (type === 'star' || type === 'watch' || type === 'fork')) {
    ref = `refs/heads/${repository.defaultBranch}`;
  }
  const parts = refParts(ref);
  const eventName = action && (type === 'pr' || type === 'review' || type === 'review_comment') ? `${providerEvent}:${action}` : providerEvent;
  return {
    provider,
    type,
    providerEvent,
    action,
    eventName,
    repository,
    ref,
    branch: branch ?? parts.branch,
    tag: tag ?? parts.tag,
    sha,
    beforeSha,
    deleted,
    sender: { login: str(at(body, 'sender', 'login')) ?? str(at(body, 'pusher', 'name')) ?? '', id: str(at(body, 'sender', 'id')) },
    commitMessage,
    changedFiles,
    pullRequest,
    comment,
    installationId: str(at(body, 'installation', 'id')),
    customEventName,
  };
}
