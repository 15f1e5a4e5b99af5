// One bare mirror per source under the cache directory; every read first makes sure the commit
// is present (fetching branches and tags, then the sha itself), and all work on one mirror is
// serialized so concurrent deliveries never run two fetches into the same repository.
import { createHash } from 'node:crypto';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { NotFoundError, SvcError, UnavailableError, type ErrorCode } from '../../../core/errors.ts';
import { checkRepositoryPath, MAX_READ_FILE_BYTES } from '../github/repository-path.ts';
import { firstLine, runGit } from './git-command.ts';
import { checkSha, ZERO_SHA, type GitProviderConfig, type GitSource } from './settings.ts';

export const LOCK_FILE_PATH = '.svc/svc.lock.json';
/** git's empty tree (SHA-1). */
const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

export class GitMirrors {
  readonly #config: GitProviderConfig;
  readonly #logger: Logger;
  /** Tail of the work queue per mirror directory. */
  readonly #queues = new Map<string, Promise<unknown>>();
  /**
   * Mirror directories this process has configured. Each read ran `git config` again: one git
   * process of the ~7 a lock read of a new commit costs. The `stat` of HEAD stays, so a mirror
   * removed by hand is made and configured again by the next read.
   */
  readonly #prepared = new Set<string>();

  constructor(options: { config: GitProviderConfig; logger: Logger }) {
    this.#config = options.config;
    this.#logger = options.logger;
  }

  /** Mirror directory of a source: a new remote URL gets a new mirror, so objects never mix. */
  mirrorDir(source: GitSource): string {
    const key = createHash('sha256').update(`${source.id}\0${source.remoteUrl}`).digest('hex').slice(0, 32);
    return join(this.#config.cacheDir, `${key}.git`);
  }

  /** Run `work` alone on this source's mirror. */
  async #exclusive<T>(dir: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(dir) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    this.#queues.set(dir, tail);
    try {
      return await run;
    } finally {
      if (this.#queues.get(dir) === tail) this.#queues.delete(dir);
    }
  }

  #git(dir: string, source: GitSource, timeoutMs: number) {
    const config: Array<readonly [string, string]> = [];
    if (source.token !== undefined && /^https?:\/\//.test(source.remoteUrl)) {
      const basic = Buffer.from(`${source.username ?? 'git'}:${source.token}`).toString('base64');
      config.push(['http.extraHeader', `Authorization: Basic ${basic}`]);
    }
    const base = { gitBinary: this.#config.gitBinary, gitDir: dir, timeoutMs, config };
    return {
      text: (args: readonly string[]) => runGit(args, { ...base, binary: false }),
      bytes: (args: readonly string[], maxBuffer?: number) => runGit(args, { ...base, binary: true, ...(maxBuffer ? { maxBuffer } : {}) }),
    };
  }

  async #ensureMirror(dir: string, source: GitSource): Promise<void> {
    const git = this.#git(dir, source, this.#config.readTimeoutMs);
    const exists = await stat(join(dir, 'HEAD')).then(() => true, () => false);
    // mirrorDir() hashes the remote URL, so a configured directory's URL cannot have changed.
    if (exists && this.#prepared.has(dir)) return;
    this.#prepared.delete(dir);
    if (!exists) {
      await mkdir(dir, { recursive: true });
      const init = await git.text(['init', '--bare', '--quiet']);
      if (init.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_MIRROR', `could not create the git mirror for source ${source.id}: ${firstLine(init.stderr)}`);
    }
    // The URL is validated (never starts with "-") and is set on every use, so a changed
    // setting takes effect without touching the cache by hand.
    const set = await git.text(['config', 'remote.origin.url', source.remoteUrl]);
    if (set.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_MIRROR', `could not configure the git mirror for source ${source.id}: ${firstLine(set.stderr)}`);
    this.#prepared.add(dir);
  }

  async #hasCommit(dir: string, source: GitSource, sha: string): Promise<boolean> {
    const r = await this.#git(dir, source, this.#config.readTimeoutMs).text(['cat-file', '-e', `${sha}^{commit}`]);
    return r.exitCode === 0;
  }

  /** Make `shas` present in the mirror: fetch branches and tags, then each missing sha by id. */
  async #ensureCommits(dir: string, source: GitSource, shas: readonly string[]): Promise<void> {
    await this.#ensureMirror(dir, source);
    let missing: string[] = [];
    for (const sha of shas) if (!(await this.#hasCommit(dir, source, sha))) missing.push(sha);
    if (missing.length === 0) return;
    const fetchGit = this.#git(dir, source, this.#config.fetchTimeoutMs);
    const started = Date.now();
    const all = await fetchGit.text(['fetch', '--quiet', '--prune', '--no-tags', 'origin', '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*']);
    if (all.exitCode !== 0) {
      throw new UnavailableError(
        'SVC_ERR_GIT_FETCH',
        `git fetch from the remote of source ${source.id} failed${all.timedOut ? ` (no answer within ${this.#config.fetchTimeoutMs} ms)` : ''}: ${firstLine(all.stderr)}`,
      );
    }
    this.#logger.debug({ source: source.id, ms: Date.now() - started }, 'git mirror fetched');
    const stillMissing: string[] = [];
    for (const sha of missing) if (!(await this.#hasCommit(dir, source, sha))) stillMissing.push(sha);
    missing = stillMissing;
    for (const sha of missing) {
      // A commit no branch or tag reaches (a deleted branch, a pull request head): servers that
      // allow it serve it by id; the sha is validated hex, so it cannot be read as an option.
      const one = await fetchGit.text(['fetch', '--quiet', '--no-tags', 'origin', sha]);
      if (one.exitCode !== 0) this.#logger.debug({ source: source.id, sha, stderr: firstLine(one.stderr) }, 'fetch by sha refused');
      if (!(await this.#hasCommit(dir, source, sha))) {
        throw new NotFoundError('SVC_ERR_GIT_UNKNOWN_SHA', `commit ${sha} is not in the remote of source ${source.id} (fetched all branches and tags, then by id)`);
      }
    }
  }

  /** The lock file's bytes at `sha`, or null when that commit has none. */
  async readLockFile(source: GitSource, shaInput: string): Promise<Uint8Array | null> {
    return this.#readBlob(source, shaInput, LOCK_FILE_PATH, this.#config.maxLockFileBytes, 'SVC_ERR_GIT_LOCK_TOO_LARGE');
  }

  /** A file's bytes at `sha` (content requirements); null when no regular file is at `path`. */
  async readFile(source: GitSource, shaInput: string, pathInput: string): Promise<Uint8Array | null> {
    const path = checkRepositoryPath(pathInput);
    return this.#readBlob(source, shaInput, path, MAX_READ_FILE_BYTES, 'SVC_ERR_GIT_FILE_TOO_LARGE');
  }

  /**
   * `path` at `sha` through `ls-tree` (its paths match literally, after `--`) then `cat-file` on
   * the blob id: a directory, symlink or submodule there is "no file", and the size is checked
   * before the bytes are read.
   */
  async #readBlob(source: GitSource, shaInput: string, path: string, maxBytes: number, tooLargeCode: ErrorCode): Promise<Uint8Array | null> {
    const sha = checkSha(shaInput, 'sha');
    const dir = this.mirrorDir(source);
    return this.#exclusive(dir, async () => {
      await this.#ensureCommits(dir, source, [sha]);
      const git = this.#git(dir, source, this.#config.readTimeoutMs);
      // `-l` adds each blob's size, so the limit is checked without a `cat-file -s` process.
      const listing = await git.text(['ls-tree', '-l', '-z', '--full-tree', sha, '--', path]);
      if (listing.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_READ', `git ls-tree at ${sha} failed: ${firstLine(listing.stderr)}`);
      const entry = listing.stdout.split('\0').find((e) => e.endsWith(`\t${path}`));
      if (!entry) return null;
      const [mode = '', type = '', object = '', size = ''] = entry.slice(0, entry.indexOf('\t')).split(/ +/);
      if (type !== 'blob' || (mode !== '100644' && mode !== '100755') || !/^[0-9a-f]{40}$/.test(object)) {
        this.#logger.warn({ source: source.id, sha, mode, type }, `${path} is not a regular file`);
        return null;
      }
      const bytes = Number(size);
      if (size === '' || !Number.isSafeInteger(bytes)) throw new SvcError('SVC_ERR_GIT_READ', `git ls-tree -l at ${sha} gave no size for ${path}`);
      if (bytes > maxBytes) throw new SvcError(tooLargeCode, `${path} at ${sha} is ${bytes} bytes, over the ${maxBytes}-byte limit`);
      const blob = await git.bytes(['cat-file', 'blob', object], maxBytes + 1024);
      if (blob.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_READ', `git cat-file blob ${object} failed: ${firstLine(blob.stderr)}`);
      return new Uint8Array(blob.stdout);
    });
  }

  /**
   * Paths changed between `base` and `head`; renames count as both paths. A zero `base` (a new
   * branch) gives the files the head commit changed against its first parent (all files of a
   * root commit).
   */
  async changedFiles(source: GitSource, baseInput: string, headInput: string): Promise<string[]> {
    const base = checkSha(baseInput, 'base');
    const head = checkSha(headInput, 'head');
    const dir = this.mirrorDir(source);
    return this.#exclusive(dir, async () => {
      await this.#ensureCommits(dir, source, base === ZERO_SHA ? [head] : [base, head]);
      const git = this.#git(dir, source, this.#config.readTimeoutMs);
      let from = base;
      if (base === ZERO_SHA) {
        const parents = await git.text(['rev-list', '--parents', '--max-count=1', head]);
        if (parents.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_READ', `git rev-list ${head} failed: ${firstLine(parents.stderr)}`);
        from = parents.stdout.trim().split(' ')[1] ?? EMPTY_TREE;
      }
      const diff = await git.text(['diff', '--name-only', '-z', '--no-renames', '--no-relative', '--no-ext-diff', from, head, '--']);
      if (diff.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_READ', `git diff ${from} ${head} failed: ${firstLine(diff.stderr)}`);
      return [...new Set(diff.stdout.split('\0').filter((p) => p !== ''))].sort();
    });
  }
}
