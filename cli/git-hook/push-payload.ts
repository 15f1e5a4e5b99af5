// One pushed ref → a GitHub-shaped `push` webhook body, read from the bare repository with git.
// Field names follow GitHub's push event so the shared normalizer reads it unchanged.
import type { HookConfig } from './config.ts';
import type { HookGit } from './git.ts';

export const ZERO_SHA = '0'.repeat(40);
/** GitHub lists at most 20 commits; the normalizer then fetches changed files itself. */
export const MAX_COMMITS = 20;

export interface RefUpdate {
  before: string;
  after: string;
  ref: string;
}

const SHA = /^[0-9a-f]{40}$/;
const REF = /^refs\/[^\s\x00-\x1f\x7f~^:?*[\\]+$/;

export type ParsedUpdates = { updates: RefUpdate[]; problems: string[] };

/** `<old> <new> <ref>` lines as git gives a post-receive hook; bad lines are reported, not sent. */
export function parseRefUpdates(text: string): ParsedUpdates {
  const updates: RefUpdate[] = [];
  const problems: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.replace(/\r$/, '');
    if (trimmed.trim() === '') continue;
    const [before = '', after = '', ref = '', ...rest] = trimmed.split(' ');
    if (rest.length > 0 || !SHA.test(before) || !SHA.test(after) || !REF.test(ref) || ref.includes('..') || ref.includes('@{')) {
      problems.push(`ignored a line that is not "<old-sha> <new-sha> <ref>": ${JSON.stringify(trimmed.slice(0, 120))}`);
      continue;
    }
    updates.push({ before, after, ref });
  }
  return { updates, problems };
}

export interface PushIdentity {
  login: string;
}

/** Who pushed: GIT_PUSHER, GL_USER (gitolite), svc.pusher, then the account running the hook. */
export function pusherOf(env: NodeJS.ProcessEnv, config: Pick<HookConfig, 'pusher'>): PushIdentity {
  const raw = env['GIT_PUSHER'] || env['GL_USER'] || config.pusher || env['USER'] || env['LOGNAME'] || 'unknown';
  const login = raw.replace(/[^\w.@+-]/g, '-').slice(0, 100) || 'unknown';
  return { login };
}

interface CommitInfo {
  id: string;
  tree_id: string;
  message: string;
  timestamp: string;
  url: string;
  author: { name: string; email: string };
  committer: { name: string; email: string };
  added: string[];
  removed: string[];
  modified: string[];
}

async function commitInfo(git: HookGit, sha: string): Promise<CommitInfo> {
  const raw = await git.run(['show', '-s', '--format=%H%x00%T%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%B', sha]);
  const [id = sha, tree = '', an = '', ae = '', at = '', cn = '', ce = '', ...message] = raw.split('\0');
  const changes = await git.run(['diff-tree', '-r', '-z', '--no-commit-id', '--name-status', '--no-renames', '--root', '--diff-merges=first-parent', sha]);
  const added: string[] = [];
  const removed: string[] = [];
  const modified: string[] = [];
  const fields = changes.split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const status = fields[i]!;
    const path = fields[i + 1]!;
    if (status === '' || path === '') continue;
    if (status.startsWith('A')) added.push(path);
    else if (status.startsWith('D')) removed.push(path);
    else modified.push(path);
  }
  return {
    id,
    tree_id: tree,
    message: message.join('\0').replace(/\n+$/, ''),
    timestamp: at,
    url: '',
    author: { name: an, email: ae },
    committer: { name: cn, email: ce },
    added,
    removed,
    modified,
  };
}

/** Commits the push brought in, oldest first, newest 20 (GitHub's limit). */
async function pushedCommits(git: HookGit, update: RefUpdate): Promise<string[]> {
  let input = '';
  if (update.before === ZERO_SHA) {
    // A new branch: commits no other ref already had.
    const refs = await git.run(['for-each-ref', '--format=%(objectname) %(refname)']);
    for (const line of refs.split('\n')) {
      const [sha, name] = line.split(' ');
      if (sha && name && name !== update.ref && SHA.test(sha)) input += `^${sha}\n`;
    }
  } else {
    input = `^${update.before}\n`;
  }
  const listed = await git.tryRun(['rev-list', `--max-count=${MAX_COMMITS}`, update.after, '--stdin'], { input });
  if (!listed.ok) return [];
  return listed.stdout.split('\n').filter((s) => SHA.test(s)).reverse();
}

/** Peel a tag (or any object) to the commit it names, or null. */
async function commitOf(git: HookGit, sha: string): Promise<string | null> {
  const peeled = await git.tryRun(['rev-parse', '--verify', '--quiet', `${sha}^{commit}`]);
  const value = peeled.stdout.trim();
  return peeled.ok && SHA.test(value) ? value : null;
}

export async function buildPushPayload(git: HookGit, config: HookConfig, update: RefUpdate, env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const deleted = update.after === ZERO_SHA;
  const created = update.before === ZERO_SHA;
  const isTag = update.ref.startsWith('refs/tags/');
  const [owner = 'local', name = 'repo'] = config.repository.split('/');
  const pusher = pusherOf(env, config);

  let headCommit: CommitInfo | null = null;
  let commits: CommitInfo[] = [];
  let forced = false;
  if (!deleted) {
    const head = await commitOf(git, update.after);
    if (head) headCommit = await commitInfo(git, head);
    if (!isTag && head) {
      for (const sha of await pushedCommits(git, { ...update, after: head })) commits.push(sha === head && headCommit ? headCommit : await commitInfo(git, sha));
      if (!created) forced = !(await git.tryRun(['merge-base', '--is-ancestor', update.before, head])).ok;
    }
  }
  if (commits.length > MAX_COMMITS) commits = commits.slice(-MAX_COMMITS);

  return {
    ref: update.ref,
    before: update.before,
    after: update.after,
    created,
    deleted,
    forced,
    base_ref: null,
    compare: '',
    commits,
    head_commit: headCommit,
    repository: {
      name,
      full_name: config.repository,
      owner: { login: owner, name: owner },
      clone_url: config.remoteUrl,
      default_branch: config.defaultBranch,
      master_branch: config.defaultBranch,
    },
    pusher: { name: pusher.login, email: null },
    sender: { login: pusher.login },
    installation: null,
  };
}
