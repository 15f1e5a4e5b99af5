// The repository files a local job gets, staged in a scratch directory: what a real agent's
// checkout of the run's commit holds, `.svc/` aside (the bundle of the working tree's `.svc/`
// replaces it, as it replaces a checkout's on an agent).
// - committed (default): the tree of HEAD, written by `git checkout-index` from a scratch index
//   (the user's index and work tree are never touched), so file modes, symlinks and checkout
//   filters are git's own;
// - uncommitted (`--uncommitted`): the working tree's files git knows or would add — tracked
//   files as they are on disk (deleted ones absent) and untracked files it does not ignore;
// - no git repository, or no commit yet: the working tree, without what `.gitignore` files,
//   `.git/info/exclude` and the root `.svcignore` exclude, and never `.git/`.
// Symlinks whose target is absolute or leaves the tree are left out (an agent refuses them in a
// source tarball) and reported.
import { copyFile, lstat, mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, sep } from 'node:path';
import { execa } from 'execa';
import ignore, { type Ignore } from 'ignore';
import { SvcError, messageOf } from '../../../core/errors.ts';

export type RepoFilesOrigin = 'head' | 'head+uncommitted' | 'working-tree';

export interface RepoFilesOptions {
  /** The project root (the directory holding `.svc/`). */
  root: string;
  /** The git work tree and its HEAD commit; `null` outside a git repository. */
  git: { top: string; sha: string | null } | null;
  /** Add the working tree's uncommitted changes to HEAD's tree. */
  uncommitted: boolean;
  /** An empty scratch directory the files are written to. */
  into: string;
  signal?: AbortSignal;
}

export interface RepoFiles {
  dir: string;
  origin: RepoFilesOrigin;
  /** Files and symlinks staged (`.svc/` not counted). */
  files: number;
  /** Repo-relative paths of symlinks left out (absolute target, or one outside the tree). */
  skippedLinks: string[];
}

const FILES_FAILED = 'SVC_ERR_LOCAL_RUN_FILES';

async function gitIn(cwd: string, args: readonly string[], options: { env?: Record<string, string>; signal?: AbortSignal } = {}): Promise<string> {
  const result = await execa('git', [...args], {
    cwd,
    env: { GIT_TERMINAL_PROMPT: '0', ...options.env },
    reject: false,
    stripFinalNewline: false,
    maxBuffer: 512 * 1024 * 1024,
    ...(options.signal === undefined ? {} : { cancelSignal: options.signal }),
  });
  if (result.exitCode !== 0) {
    const detail = String(result.stderr).trim().split('\n')[0] || result.shortMessage;
    throw new SvcError(FILES_FAILED, `cannot gather the repository files for the jobs: git ${args.join(' ')} failed: ${detail}`);
  }
  return String(result.stdout);
}

const nulList = (text: string): string[] => text.split('\0').filter((p) => p !== '');
const isSvc = (rel: string): boolean => rel === '.svc' || rel.startsWith('.svc/');

/** HEAD's tree (under `prefix`, the root's place in the work tree) through a scratch index. */
async function checkoutHead(top: string, sha: string, prefix: string, into: string, signal?: AbortSignal): Promise<void> {
  // `<commit>:<dir>` names the directory's tree; a project directory HEAD does not have yet has no committed files.
  const treeish = prefix === '' ? `${sha}^{tree}` : `${sha}:${prefix}`;
  const tree = await gitIn(top, ['rev-parse', '--verify', '--quiet', treeish]).catch(() => undefined);
  if (tree === undefined) return;
  const scratch = await mkdtemp(join(tmpdir(), 'svc-local-index-'));
  try {
    const env = { GIT_INDEX_FILE: join(scratch, 'index') };
    await gitIn(top, ['read-tree', tree.trim()], { env, ...(signal === undefined ? {} : { signal }) });
    await gitIn(top, ['checkout-index', '--all', '--force', `--prefix=${into}${sep}`], { env, ...(signal === undefined ? {} : { signal }) });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Copies `rel` from `from` to `to`: a file with its mode, a symlink as a symlink; anything else (a submodule's directory, a socket) is not copied. */
async function copyEntry(from: string, to: string, rel: string): Promise<void> {
  const src = join(from, rel);
  const info = await lstat(src).catch(() => undefined);
  if (info === undefined || !(info.isFile() || info.isSymbolicLink())) return;
  const dest = join(to, rel);
  await mkdir(dirname(dest), { recursive: true });
  if (info.isSymbolicLink()) await symlink(await readlink(src), dest);
  else await copyFile(src, dest);
}

async function copyAll(from: string, to: string, paths: readonly string[]): Promise<void> {
  const queue = [...paths];
  const worker = async () => {
    for (let rel = queue.shift(); rel !== undefined; rel = queue.shift()) await copyEntry(from, to, rel);
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

interface Rules {
  /** Directory the rules are relative to ('' for the root). */
  base: string;
  rules: Ignore;
}

const ignoredBy = (levels: readonly Rules[], rel: string, dir: boolean): boolean =>
  levels.some(({ base, rules }) => {
    const sub = base === '' ? rel : rel.slice(base.length + 1);
    return rules.ignores(dir ? `${sub}/` : sub);
  });

/** The working tree's files minus ignored ones (`.gitignore` at every level, `.git/info/exclude`, the root `.svcignore`), never `.git/`. */
export async function listWorkingTree(root: string): Promise<string[]> {
  const out: string[] = [];
  const text = async (file: string) => readFile(join(root, file), 'utf8').catch(() => '');
  const top = ignore().add(await text('.gitignore')).add(await text('.git/info/exclude')).add(await text('.svcignore'));
  const visit = async (relDir: string, levels: readonly Rules[]): Promise<void> => {
    const abs = relDir === '' ? root : join(root, relDir);
    let own = levels;
    if (relDir !== '') {
      const nested = await readFile(join(abs, '.gitignore'), 'utf8').catch(() => null);
      if (nested !== null) own = [...levels, { base: relDir, rules: ignore().add(nested) }];
    }
    for (const entry of await readdir(abs, { withFileTypes: true })) {
      if (entry.name === '.git') continue;
      const rel = relDir === '' ? entry.name : `${relDir}/${entry.name}`;
      const dir = entry.isDirectory();
      if (ignoredBy(own, rel, dir)) continue;
      if (dir) await visit(rel, own);
      else if (entry.isFile() || entry.isSymbolicLink()) out.push(rel);
    }
  };
  await visit('', [{ base: '', rules: top }]);
  return out.sort();
}

/** Removes links an agent would refuse to extract; counts what stays. */
async function settle(dir: string): Promise<{ files: number; skippedLinks: string[] }> {
  let files = 0;
  const skippedLinks: string[] = [];
  const visit = async (relDir: string): Promise<void> => {
    for (const entry of await readdir(relDir === '' ? dir : join(dir, relDir), { withFileTypes: true })) {
      const rel = relDir === '' ? entry.name : `${relDir}/${entry.name}`;
      if (entry.isDirectory()) await visit(rel);
      else if (entry.isSymbolicLink()) {
        const target = await readlink(join(dir, rel));
        const resolved = posix.normalize(posix.join(posix.dirname(rel), target));
        if (posix.isAbsolute(target) || resolved === '..' || resolved.startsWith('../')) {
          await rm(join(dir, rel));
          skippedLinks.push(rel);
        } else files++;
      } else files++;
    }
  };
  await visit('');
  return { files, skippedLinks: skippedLinks.sort() };
}

export async function stageRepoFiles(options: RepoFilesOptions): Promise<RepoFiles> {
  const { into, git, signal } = options;
  await mkdir(into, { recursive: true });
  let origin: RepoFilesOrigin;
  try {
    if (git !== null && git.sha !== null) {
      const [top, root] = await Promise.all([realpath(git.top), realpath(options.root)]);
      const prefix = relative(top, root).split(sep).join('/');
      if (options.uncommitted) {
        origin = 'head+uncommitted';
        // Paths relative to the root (ls-files lists the current directory's subtree).
        const known = nulList(await gitIn(root, ['ls-files', '-z', '--cached', '--others', '--exclude-standard']));
        const deleted = new Set(nulList(await gitIn(root, ['ls-files', '-z', '--deleted'])));
        await copyAll(root, into, [...new Set(known)].filter((p) => !deleted.has(p) && !isSvc(p)));
      } else {
        origin = 'head';
        await checkoutHead(top, git.sha, prefix, into, signal);
      }
    } else {
      origin = 'working-tree';
      await copyAll(options.root, into, (await listWorkingTree(options.root)).filter((p) => !isSvc(p)));
    }
    // The bundle of the working tree's `.svc/` takes its place.
    await rm(join(into, '.svc'), { recursive: true, force: true });
    return { dir: into, origin, ...(await settle(into)) };
  } catch (error) {
    if (error instanceof SvcError) throw error;
    throw new SvcError(FILES_FAILED, `cannot gather the repository files for the jobs: ${messageOf(error)}`, { cause: error });
  }
}
