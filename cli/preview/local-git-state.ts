// What `svc preview` knows about the local checkout: branch, HEAD commit and message, the default
// branch, changed files and the repository name. Every fact may be unknown (empty repository,
// detached HEAD, no remote); the event builder turns unknowns into nulls so matching reports
// the filters that need them as indeterminate instead of guessing.
import path from 'node:path';
import { tryGit } from './local-git.ts';

/** git's well-known empty tree: diffing against it lists every tracked file. */
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

export interface LocalGitState {
  /** Work tree top directory. */
  top: string;
  /** Current branch; `null` on a detached HEAD. */
  branch: string | null;
  /** HEAD commit; `null` in a repository without commits. */
  sha: string | null;
  parentSha: string | null;
  /** Full HEAD commit message (trailing newline removed). */
  commitMessage: string | null;
  /** `origin/HEAD`'s branch, else `main` or `master` when they exist, else the current branch. */
  defaultBranch: string | null;
  /** What changed files were diffed against (`merge-base with main`, `HEAD~1`, `empty tree`). */
  changedFilesBase: string;
  /** Tracked files differing between the base and the working tree, sorted. */
  changedFiles: string[] | null;
  /** `owner/repo` from the origin URL, else `local/<directory name>`. */
  repository: string;
  /** `git config user.name`, or empty. */
  user: string;
  /** Newest tag reachable from HEAD, if any. */
  latestTag: string | null;
}

/** `owner/repo` from a remote URL (https, ssh, scp-like or a path); `undefined` when it has no two segments. */
export function repositoryFromRemote(url: string): string | undefined {
  let p = url.trim();
  const scp = /^[^/@:]+@[^/:]+:(.+)$/.exec(p);
  if (scp) p = scp[1]!;
  else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(p)) {
    try {
      p = new URL(p).pathname;
    } catch {
      return undefined;
    }
  }
  const parts = p.replace(/\\/g, '/').replace(/\/+$/, '').replace(/\.git$/, '').split('/').filter((s) => s !== '' && s !== '.');
  if (parts.length < 2) return undefined;
  return `${parts[parts.length - 2]}/${parts[parts.length - 1]}`;
}

async function defaultBranchOf(top: string, current: string | null): Promise<{ name: string | null; ref: string | null }> {
  const originHead = await tryGit(top, ['symbolic-ref', '--quiet', '--short', 'refs/remotes/origin/HEAD']);
  if (originHead !== undefined && originHead.startsWith('origin/')) return { name: originHead.slice('origin/'.length), ref: originHead };
  for (const name of ['main', 'master']) {
    if ((await tryGit(top, ['rev-parse', '--verify', '--quiet', `refs/heads/${name}`])) !== undefined) return { name, ref: `refs/heads/${name}` };
    if ((await tryGit(top, ['rev-parse', '--verify', '--quiet', `refs/remotes/origin/${name}`])) !== undefined) return { name, ref: `refs/remotes/origin/${name}` };
  }
  return { name: current, ref: null };
}

function lines(text: string | undefined): string[] | null {
  if (text === undefined) return null;
  return text.split('\n').filter((l) => l !== '').sort();
}

export async function readLocalGitState(cwd: string): Promise<LocalGitState | undefined> {
  const top = await tryGit(cwd, ['rev-parse', '--show-toplevel']);
  if (top === undefined) return undefined;
  const [branch, sha, parentSha, commitMessage, remote, user, latestTag] = await Promise.all([
    tryGit(top, ['symbolic-ref', '--quiet', '--short', 'HEAD']),
    tryGit(top, ['rev-parse', '--verify', '--quiet', 'HEAD']),
    tryGit(top, ['rev-parse', '--verify', '--quiet', 'HEAD~1']),
    tryGit(top, ['log', '-1', '--format=%B']),
    tryGit(top, ['remote', 'get-url', 'origin']),
    tryGit(top, ['config', 'user.name']),
    tryGit(top, ['describe', '--tags', '--abbrev=0']),
  ]);
  const current = branch ?? null;
  const def = await defaultBranchOf(top, current);
  // Base for changed files: the merge base with the default branch when on another branch,
  // otherwise the previous commit; a first commit is compared with the empty tree.
  let base: string | undefined;
  let baseLabel = 'HEAD~1';
  if (sha !== undefined && def.ref !== null && def.name !== current) {
    const mergeBase = await tryGit(top, ['merge-base', 'HEAD', def.ref]);
    if (mergeBase !== undefined && mergeBase !== sha) {
      base = mergeBase;
      baseLabel = `merge base with ${def.name}`;
    }
  }
  if (base === undefined && parentSha !== undefined) base = parentSha;
  if (base === undefined) {
    base = EMPTY_TREE;
    baseLabel = sha === undefined ? 'empty tree (no commits yet)' : 'empty tree (first commit)';
  }
  const changed = lines(await tryGit(top, ['diff', '--name-only', '--no-renames', base]));
  return {
    top,
    branch: current,
    sha: sha ?? null,
    parentSha: parentSha ?? null,
    commitMessage: commitMessage === undefined ? null : commitMessage.replace(/\n+$/, ''),
    defaultBranch: def.name,
    changedFilesBase: baseLabel,
    changedFiles: changed,
    repository: (remote === undefined ? undefined : repositoryFromRemote(remote)) ?? `local/${path.basename(top)}`,
    user: user ?? '',
    latestTag: latestTag ?? null,
  };
}
