// One bare mirror per source under the cache directory; every read first makes sure the commit
// is present (fetching the pushed ref when the event named one, else branches and tags, then the
// sha itself), and all work on one mirror is serialized so concurrent deliveries never run two
// fetches into the same repository. Objects are read through one long-lived `git cat-file` per
// mirror (cat-file.ts), so a lock read of a new commit spawns one git process, the fetch; a
// remote on this machine is read in place (#localObjects), with no fetch at all.
import { createHash } from 'node:crypto';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { NotFoundError, SvcError, UnavailableError, type ErrorCode } from '../../../core/errors.ts';
import { checkRepositoryPath, MAX_READ_FILE_BYTES } from '../github/repository-path.ts';
import { CatFilePool } from './cat-file.ts';
import { firstLine, runGit } from './git-command.ts';
import { findTreeEntry, firstParent } from './objects.ts';
import { checkSha, fetchableRef, ZERO_SHA, type GitProviderConfig, type GitSource } from './settings.ts';

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
  readonly #objects: CatFilePool;
  /** A local remote's object directory the mirror's readers also read, by mirror (found at preparation). */
  readonly #borrowed = new Map<string, string | undefined>();

  constructor(options: { config: GitProviderConfig; logger: Logger }) {
    this.#config = options.config;
    this.#logger = options.logger;
    this.#objects = new CatFilePool({
      gitBinary: options.config.gitBinary,
      maxProcesses: options.config.catFileProcesses,
      idleMs: options.config.catFileIdleMs,
      timeoutMs: options.config.readTimeoutMs,
      logger: options.logger,
    });
  }

  /** Stops the mirrors' cat-file processes (the plugin's close). */
  close(): Promise<void> {
    return this.#objects.close();
  }

  /** Process ids of the open cat-file processes. */
  catFilePids(): number[] {
    return this.#objects.pids();
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

  #git(dir: string, source: GitSource, timeoutMs: number, options: { borrow?: boolean } = {}) {
    const config: Array<readonly [string, string]> = [];
    if (source.token !== undefined && /^https?:\/\//.test(source.remoteUrl)) {
      const basic = Buffer.from(`${source.username ?? 'git'}:${source.token}`).toString('base64');
      config.push(['http.extraHeader', `Authorization: Basic ${basic}`]);
    }
    const alternates = options.borrow === true ? this.#borrowed.get(dir) : undefined;
    const base = { gitBinary: this.#config.gitBinary, gitDir: dir, timeoutMs, config, ...(alternates === undefined ? {} : { alternates }) };
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
      // A cat-file still open on a mirror removed by hand would read the old directory.
      this.#objects.forget(dir);
      await mkdir(dir, { recursive: true });
      const init = await git.text(['init', '--bare', '--quiet']);
      if (init.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_MIRROR', `could not create the git mirror for source ${source.id}: ${firstLine(init.stderr)}`);
    }
    // The URL is validated (never starts with "-") and is set on every use, so a changed
    // setting takes effect without touching the cache by hand.
    const set = await git.text(['config', 'remote.origin.url', source.remoteUrl]);
    if (set.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_MIRROR', `could not configure the git mirror for source ${source.id}: ${firstLine(set.stderr)}`);
    const borrowed = await this.#localObjects(source);
    this.#borrowed.set(dir, borrowed);
    this.#objects.borrow(dir, borrowed);
    this.#prepared.add(dir);
  }

  /**
   * The object directory of a remote on this machine (a bare repository, or a work tree's
   * `.git`), which the mirror's readers read in place: a pushed commit is there as soon as the
   * push ends, so its lock is read without a fetch (the fetch was most of a webhook's answer).
   * Nothing is copied: such a remote is where agents check out from as well. Only through the
   * readers' environment (GIT_ALTERNATE_OBJECT_DIRECTORIES), never the mirror's own files, so a
   * fetch still copies what it fetches. Off with `borrowLocalObjects: false`.
   */
  async #localObjects(source: GitSource): Promise<string | undefined> {
    if (!this.#config.borrowLocalObjects) return undefined;
    let root: string;
    try {
      if (source.remoteUrl.startsWith('file://')) root = fileURLToPath(source.remoteUrl);
      else if (source.remoteUrl.startsWith('/')) root = source.remoteUrl;
      else return undefined;
    } catch {
      return undefined;
    }
    for (const gitDir of [root, join(root, '.git')]) {
      const objects = join(gitDir, 'objects');
      // The variable is a ':'-separated list and a leading '"' quotes: such a path is not borrowed.
      if (objects.includes(':') || objects.startsWith('"')) return undefined;
      const [head, dir] = await Promise.all([stat(join(gitDir, 'HEAD')).catch(() => null), stat(objects).catch(() => null)]);
      if (head?.isFile() === true && dir?.isDirectory() === true) return objects;
    }
    return undefined;
  }

  /** The commit `sha` names (an annotated tag peels to it), or null when the mirror lacks it. */
  async #commit(dir: string, sha: string): Promise<string | null> {
    const answer = await this.#objects.info(dir, `${sha}^{commit}`);
    return answer.found ? answer.oid : null;
  }

  async #missing(dir: string, shas: readonly string[]): Promise<string[]> {
    const missing: string[] = [];
    for (const sha of shas) if ((await this.#commit(dir, sha)) === null) missing.push(sha);
    return missing;
  }

  /**
   * Make `shas` present in the mirror: the pushed ref alone when the event named one (a force-push
   * or a ref moved since falls through), else branches and tags, then each missing sha by id.
   */
  async #ensureCommits(dir: string, source: GitSource, shas: readonly string[], refHint?: string | null): Promise<void> {
    await this.#ensureMirror(dir, source);
    let missing = await this.#missing(dir, shas);
    if (missing.length === 0) return;
    const fetchGit = this.#git(dir, source, this.#config.fetchTimeoutMs);
    const started = Date.now();
    const ref = fetchableRef(refHint);
    if (ref !== null) {
      const one = await fetchGit.text(['fetch', '--quiet', '--no-tags', 'origin', `+${ref}:${ref}`]);
      if (one.exitCode === 0) missing = await this.#missing(dir, missing);
      else this.#logger.debug({ source: source.id, ref, stderr: firstLine(one.stderr) }, 'fetch of the pushed ref failed; fetching every branch and tag');
      this.#logger.debug({ source: source.id, ref, ms: Date.now() - started, missing: missing.length }, 'git mirror fetched the pushed ref');
      if (missing.length === 0) return;
    } else if (refHint !== undefined && refHint !== null) {
      this.#logger.debug({ source: source.id }, 'the pushed ref is not a plain branch or tag name; fetching every branch and tag');
    }
    const all = await fetchGit.text(['fetch', '--quiet', '--prune', '--no-tags', 'origin', '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*']);
    if (all.exitCode !== 0) {
      throw new UnavailableError(
        'SVC_ERR_GIT_FETCH',
        `git fetch from the remote of source ${source.id} failed${all.timedOut ? ` (no answer within ${this.#config.fetchTimeoutMs} ms)` : ''}: ${firstLine(all.stderr)}`,
      );
    }
    this.#logger.debug({ source: source.id, ms: Date.now() - started }, 'git mirror fetched');
    missing = await this.#missing(dir, missing);
    for (const sha of missing) {
      // A commit no branch or tag reaches (a deleted branch, a pull request head): servers that
      // allow it serve it by id; the sha is validated hex, so it cannot be read as an option.
      const one = await fetchGit.text(['fetch', '--quiet', '--no-tags', 'origin', sha]);
      if (one.exitCode !== 0) this.#logger.debug({ source: source.id, sha, stderr: firstLine(one.stderr) }, 'fetch by sha refused');
      if ((await this.#commit(dir, sha)) === null) {
        throw new NotFoundError('SVC_ERR_GIT_UNKNOWN_SHA', `commit ${sha} is not in the remote of source ${source.id} (fetched all branches and tags, then by id)`);
      }
    }
  }

  /**
   * The lock file's bytes at `sha`, or null when that commit has none. `ref`, the ref the event
   * says was pushed to `sha`, is a hint: only it is fetched when the commit is new.
   */
  async readLockFile(source: GitSource, shaInput: string, ref?: string | null): Promise<Uint8Array | null> {
    return this.#readBlob(source, shaInput, LOCK_FILE_PATH, this.#config.maxLockFileBytes, 'SVC_ERR_GIT_LOCK_TOO_LARGE', ref);
  }

  /** A file's bytes at `sha` (content requirements); null when no regular file is at `path`. */
  async readFile(source: GitSource, shaInput: string, pathInput: string): Promise<Uint8Array | null> {
    const path = checkRepositoryPath(pathInput);
    return this.#readBlob(source, shaInput, path, MAX_READ_FILE_BYTES, 'SVC_ERR_GIT_FILE_TOO_LARGE');
  }

  /**
   * `path` at `sha`, walked through the trees segment by segment (names compared as bytes): a
   * directory, symlink or submodule there is "no file", and the size is checked before the bytes
   * are read.
   */
  async #readBlob(source: GitSource, shaInput: string, path: string, maxBytes: number, tooLargeCode: ErrorCode, ref?: string | null): Promise<Uint8Array | null> {
    const sha = checkSha(shaInput, 'sha');
    const dir = this.mirrorDir(source);
    return this.#exclusive(dir, async () => {
      await this.#ensureCommits(dir, source, [sha], ref);
      const entry = await this.#entryAt(dir, sha, path);
      if (entry === null) return null;
      if (entry.mode !== '100644' && entry.mode !== '100755') {
        this.#logger.warn({ source: source.id, sha, mode: entry.mode }, `${path} is not a regular file`);
        return null;
      }
      const info = await this.#objects.info(dir, entry.oid);
      if (!info.found || info.type !== 'blob') throw new SvcError('SVC_ERR_GIT_READ', `${path} at ${sha} names blob ${entry.oid}, which the mirror of source ${source.id} ${info.found ? `holds as a ${info.type}` : 'lacks'}`);
      if (info.size > maxBytes) throw new SvcError(tooLargeCode, `${path} at ${sha} is ${info.size} bytes, over the ${maxBytes}-byte limit`);
      const blob = await this.#objects.contents(dir, entry.oid);
      if (!blob.found || blob.data === undefined) throw new SvcError('SVC_ERR_GIT_READ', `blob ${entry.oid} (${path} at ${sha}) could not be read from the mirror of source ${source.id}`);
      return new Uint8Array(blob.data);
    });
  }

  /** The tree entry at `path` in commit `sha`, or null when a segment is missing or not a directory. */
  async #entryAt(dir: string, sha: string, path: string): Promise<{ mode: string; oid: string } | null> {
    const root = await this.#objects.info(dir, `${sha}^{tree}`);
    if (!root.found) throw new SvcError('SVC_ERR_GIT_READ', `commit ${sha} has no readable tree in the mirror`);
    let tree = root.oid;
    const segments = path.split('/');
    for (const [i, segment] of segments.entries()) {
      const object = await this.#objects.contents(dir, tree);
      if (!object.found || object.type !== 'tree' || object.data === undefined) throw new SvcError('SVC_ERR_GIT_READ', `tree ${tree} (at ${sha}) is not in the mirror`);
      const entry = findTreeEntry(object.data, tree, segment);
      if (entry === null || i === segments.length - 1) return entry;
      if (entry.mode !== '40000') return null;
      tree = entry.oid;
    }
    return null;
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
      const git = this.#git(dir, source, this.#config.readTimeoutMs, { borrow: true });
      let from = base;
      if (base === ZERO_SHA) {
        const commit = await this.#objects.contents(dir, `${head}^{commit}`);
        if (!commit.found || commit.data === undefined) throw new SvcError('SVC_ERR_GIT_READ', `commit ${head} could not be read from the mirror of source ${source.id}`);
        from = firstParent(commit.data, commit.oid) ?? EMPTY_TREE;
      }
      const diff = await git.text(['diff', '--name-only', '-z', '--no-renames', '--no-relative', '--no-ext-diff', from, head, '--']);
      if (diff.exitCode !== 0) throw new SvcError('SVC_ERR_GIT_READ', `git diff ${from} ${head} failed: ${firstLine(diff.stderr)}`);
      return [...new Set(diff.stdout.split('\0').filter((p) => p !== ''))].sort();
    });
  }
}
