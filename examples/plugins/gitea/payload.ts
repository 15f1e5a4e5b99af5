// Gitea and Forgejo webhook payloads → the kernel's normalized event, with the same meaning the
// built-in GitHub provider gives its events: branch or tag, event type and action, sender, head
// commit, changed files when the payload lists them all, fork detection for pull requests.
// Payloads come from outside: every field is read defensively and a wrong type reads as absent.
import { pluginError, type NormalizedEvent } from 'svc/plugin';

type Json = Record<string, unknown>;

function obj(value: unknown): Json | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
}
function str(value: unknown): string | null {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null;
}
function at(root: unknown, ...path: string[]): unknown {
  let cur: unknown = root;
  for (const key of path) cur = obj(cur)?.[key];
  return cur;
}

const ZERO_SHA = /^0+$/;

/** Gitea's PR actions where they differ from the spec's names (GitHub's). */
const PR_ACTIONS: Record<string, string> = { synchronized: 'synchronize' };

function repositoryOf(payload: Json): NormalizedEvent['repository'] {
  const repo = obj(payload['repository']);
  const fullName = str(repo?.['full_name']);
  if (!repo || !fullName || !fullName.includes('/')) return null;
  const [owner = '', name = ''] = fullName.split('/');
  return {
    fullName,
    // Gitea's users carry both `login` and `username`; older Gogs-style payloads only the latter.
    owner: str(at(repo, 'owner', 'login')) ?? str(at(repo, 'owner', 'username')) ?? owner,
    name: str(repo['name']) ?? name,
    id: str(repo['id']),
    cloneUrl: str(repo['clone_url']),
    defaultBranch: str(repo['default_branch']),
  };
}

function senderOf(payload: Json): NormalizedEvent['sender'] {
  const login = str(at(payload, 'sender', 'login')) ?? str(at(payload, 'sender', 'username')) ?? str(at(payload, 'pusher', 'login'));
  return { login: login ?? '', id: str(at(payload, 'sender', 'id')) };
}

function refParts(ref: string | null): { branch: string | null; tag: string | null } {
  if (ref?.startsWith('refs/heads/')) return { branch: ref.slice('refs/heads/'.length), tag: null };
  if (ref?.startsWith('refs/tags/')) return { branch: null, tag: ref.slice('refs/tags/'.length) };
  return { branch: null, tag: null };
}

/**
 * Files the pushed commits touched, or null when the payload cannot be trusted to list them
 * all: Gitea caps `commits` (`total_commits` says how many there were) and a commit without
 * file lists says nothing. Null makes the kernel ask `changedFiles` instead of guessing.
 */
function changedFilesOfPush(payload: Json): string[] | null {
  const commits = payload['commits'];
  if (!Array.isArray(commits) || commits.length === 0) return null;
  const total = payload['total_commits'];
  if (typeof total === 'number' && total > commits.length) return null;
  const files = new Set<string>();
  for (const commit of commits) {
    for (const field of ['added', 'removed', 'modified']) {
      const list = at(commit, field);
      if (!Array.isArray(list)) return null;
      for (const file of list) if (typeof file === 'string') files.add(file);
    }
  }
  return [...files].sort();
}

/** The head commit's message: `head_commit`, else the listed commit whose id is `after`. */
function headMessage(payload: Json, after: string | null): string | null {
  const head = str(at(payload, 'head_commit', 'message'));
  if (head !== null) return head;
  const commits = Array.isArray(payload['commits']) ? payload['commits'] : [];
  return str(at(commits.find((c) => str(at(c, 'id')) === after), 'message'));
}

function pushEvent(body: Json): Partial<NormalizedEvent> {
  const ref = str(body['ref']);
  const after = str(body['after']);
  // Gitea sends no `deleted` flag: a branch or tag deletion is a push whose `after` is zeros.
  const deleted = after !== null && ZERO_SHA.test(after);
  return {
    type: ref?.startsWith('refs/tags/') ? 'tag' : 'push',
    ref,
    sha: deleted ? null : after,
    beforeSha: str(body['before']),
    deleted,
    commitMessage: deleted ? null : headMessage(body, after),
    changedFiles: deleted ? null : changedFilesOfPush(body),
  };
}

function pullRequestEvent(body: Json, baseRepository: string | null): Partial<NormalizedEvent> {
  const pr = obj(body['pull_request']);
  if (!pr) return { type: 'pr' };
  const headRepository = str(at(pr, 'head', 'repo', 'full_name')) ?? '';
  const base = str(at(pr, 'base', 'repo', 'full_name')) ?? baseRepository ?? '';
  const pullRequest: NonNullable<NormalizedEvent['pullRequest']> = {
    number: Number(pr['number'] ?? body['number'] ?? 0) || 0,
    headRef: str(at(pr, 'head', 'ref')) ?? '',
    headSha: str(at(pr, 'head', 'sha')) ?? '',
    headRepository,
    baseRef: str(at(pr, 'base', 'ref')) ?? '',
    baseSha: str(at(pr, 'base', 'sha')) ?? '',
    // A head repository that is gone (deleted fork) cannot be proven the same: a fork.
    isFork: headRepository === '' || headRepository.toLowerCase() !== base.toLowerCase(),
    draft: pr['draft'] === true,
    merged: pr['merged'] === true,
    title: str(pr['title']) ?? '',
  };
  return { type: 'pr', pullRequest, ref: `refs/heads/${pullRequest.baseRef}`, sha: pullRequest.headSha || null };
}

/**
 * `push` and `pull_request` become push, tag and pr events. Any other Gitea event is kept with
 * its repository and sender but no trigger type, so the kernel records it and matches nothing.
 */
export function normalizeGiteaPayload(provider: string, providerEvent: string, payload: unknown): NormalizedEvent {
  const body = obj(payload);
  if (!body) throw pluginError('input', 'SVC_ERR_GITEA_PAYLOAD', `${providerEvent} payload must be a JSON object`);
  const repository = repositoryOf(body);
  const rawAction = str(body['action']);
  const action = rawAction === null ? null : (PR_ACTIONS[rawAction] ?? rawAction);
  const specific =
    providerEvent === 'push' ? pushEvent(body) : providerEvent === 'pull_request' ? pullRequestEvent(body, repository?.fullName ?? null) : {};
  const ref = specific.ref ?? null;
  const type = specific.type ?? null;
  return {
    provider,
    type,
    providerEvent,
    action,
    eventName: type === 'pr' && action ? `${providerEvent}:${action}` : providerEvent,
    repository,
    ref,
    ...refParts(ref),
    sha: specific.sha ?? null,
    beforeSha: specific.beforeSha ?? null,
    deleted: specific.deleted ?? false,
    sender: senderOf(body),
    commitMessage: specific.commitMessage ?? null,
    changedFiles: specific.changedFiles ?? null,
    pullRequest: specific.pullRequest ?? null,
    comment: null,
    installationId: null,
    customEventName: null,
  };
}
