// git for `svc dev`: the developer's repository (find it, add the `svc` remote, keep the data dir
// out of `git status`), the bare repository svc dev serves, and the quickstart work copy.
// Argument arrays only; no shell.
import { appendFile, cp, mkdir, readFile, stat } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { execa } from 'execa';
import { InputError, SvcError } from '../../core/errors.ts';

/** Fallback identity for the work copy's first commit when git has none configured. */
const DEV_IDENTITY = { name: 'svc dev', email: 'svc-dev@localhost' };

export interface GitResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

export async function tryGit(cwd: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<GitResult> {
  const result = await execa('git', [...args], {
    cwd,
    env: { LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0', ...env },
    reject: false,
    stdin: 'ignore',
    timeout: 120_000,
  });
  return { ok: result.exitCode === 0, stdout: String(result.stdout ?? '').trim(), stderr: String(result.stderr ?? '').trim() };
}

export async function git(cwd: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const result = await tryGit(cwd, args, env);
  if (!result.ok) {
    const reason = result.stderr.split('\n').find((l) => l.trim() !== '') ?? 'failed';
    throw new SvcError('SVC_ERR_DEV_GIT', `git ${args.join(' ')} failed in ${cwd}: ${reason.trim().slice(0, 300)}`);
  }
  return result.stdout;
}

/** The top of the git working tree that holds `dir`; a clear error when it is not in one. */
export async function repositoryRoot(dir: string): Promise<string> {
  const exists = await stat(dir).catch(() => null);
  if (exists === null || !exists.isDirectory()) throw new InputError('SVC_ERR_DEV_REPO', `--repo ${dir} is not a directory`);
  const top = await tryGit(dir, ['rev-parse', '--show-toplevel']);
  if (!top.ok) {
    throw new InputError('SVC_ERR_DEV_REPO', `${dir} is not inside a git repository: run \`git init\` there and commit your .svc/ directory, or pass --repo <path>`);
  }
  return resolve(top.stdout);
}

/** Keeps `<repo>/<path>` out of `git status` through `.git/info/exclude` (never a tracked file). */
export async function excludeFromGit(repo: string, path: string): Promise<boolean> {
  const rel = relative(repo, path);
  if (rel === '' || rel.startsWith('..') || rel.startsWith(sep)) return false;
  const ignored = await tryGit(repo, ['check-ignore', '-q', rel]);
  if (ignored.ok) return false;
  const excludeFile = resolve(repo, await git(repo, ['rev-parse', '--git-path', 'info/exclude']));
  await mkdir(join(excludeFile, '..'), { recursive: true });
  const existing = await readFile(excludeFile, 'utf8').catch(() => '');
  const line = `/${rel.split(sep).join('/')}/`;
  await appendFile(excludeFile, `${existing === '' || existing.endsWith('\n') ? '' : '\n'}# svc dev state\n${line}\n`);
  return true;
}

/** A bare repository at `path` (created once, default branch main). */
export async function ensureBareRepository(path: string): Promise<boolean> {
  const head = await stat(join(path, 'HEAD')).catch(() => null);
  if (head !== null) {
    const bare = await tryGit(path, ['rev-parse', '--is-bare-repository']);
    if (bare.ok && bare.stdout === 'true') return false;
    throw new InputError('SVC_ERR_DEV_BARE_REPO', `${path} exists but is not a bare git repository; move it aside`);
  }
  await mkdir(path, { recursive: true });
  await git(path, ['init', '--quiet', '--bare', '--initial-branch=main']);
  return true;
}

/** Points remote `name` of `repo` at `url`; returns what it did. */
export async function ensureRemote(repo: string, name: string, url: string): Promise<'added' | 'updated' | 'unchanged'> {
  const current = await tryGit(repo, ['remote', 'get-url', name]);
  if (!current.ok) {
    await git(repo, ['remote', 'add', name, url]);
    return 'added';
  }
  if (current.stdout === url) return 'unchanged';
  await git(repo, ['remote', 'set-url', name, url]);
  return 'updated';
}

async function identityEnv(repo: string): Promise<NodeJS.ProcessEnv> {
  const email = await tryGit(repo, ['config', 'user.email']);
  if (email.ok && email.stdout !== '') return {};
  return {
    GIT_AUTHOR_NAME: DEV_IDENTITY.name,
    GIT_AUTHOR_EMAIL: DEV_IDENTITY.email,
    GIT_COMMITTER_NAME: DEV_IDENTITY.name,
    GIT_COMMITTER_EMAIL: DEV_IDENTITY.email,
  };
}

/** Commits everything in `repo` (the work copy only: never the developer's own repository). */
export async function commitAll(repo: string, message: string): Promise<string> {
  await git(repo, ['add', '--all']);
  await git(repo, ['commit', '--quiet', '--allow-empty', '-m', message], await identityEnv(repo));
  return git(repo, ['rev-parse', 'HEAD']);
}

/**
 * Copies an example directory to `target` as a fresh git repository with one commit, once; an
 * existing work copy is kept as it is (the developer may have committed to it since).
 */
export async function ensureWorkCopy(example: string, target: string, prepare: (dir: string) => Promise<void>): Promise<{ created: boolean; dir: string }> {
  const existing = await stat(join(target, '.git')).catch(() => null);
  if (existing !== null) return { created: false, dir: target };
  const source = await stat(join(example, '.svc')).catch(() => null);
  if (source === null || !source.isDirectory()) throw new InputError('SVC_ERR_DEV_EXAMPLE', `${example} has no .svc/ directory: --example names a directory with workflows`);
  await mkdir(target, { recursive: true });
  await cp(example, target, {
    recursive: true,
    // The example's own state and machine-local files stay behind.
    filter: (src) => !/(^|[\\/])(\.svc-data|node_modules|\.git)([\\/]|$)/.test(relative(example, src)),
  });
  await git(target, ['init', '--quiet', '--initial-branch=main']);
  await prepare(target);
  await commitAll(target, `${basename(example)}: start from the svc example`);
  return { created: true, dir: target };
}

export async function headSha(repo: string): Promise<string | null> {
  const head = await tryGit(repo, ['rev-parse', '--verify', '--quiet', 'HEAD']);
  return head.ok ? head.stdout : null;
}

export async function currentBranch(repo: string): Promise<string | null> {
  const branch = await tryGit(repo, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
  return branch.ok ? branch.stdout : null;
}
