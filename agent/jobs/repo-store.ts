// Repository object stores kept between jobs, so a job's checkout fetches only what is new and
// writes its tree from local objects instead of cloning (docs/agent.md "Repository stores").
//
// - One bare repository per clone URL under `<work dir>/git/<url hash>-<generation>/`. A fetch
//   takes only the job's commit, at depth 1, into a ref `refs/svc/c/<sha>` (refs let a later
//   fetch tell the server what the store already has, and keep the objects reachable for
//   compaction); a commit already present is not fetched at all.
// - A job's `.git` is its own (HEAD detached at the commit, `shallow` = the commit, its own
//   index and config) and borrows the store's objects through `objects/info/alternates`; the
//   tree is written by one `git reset --hard`. The job may run any git command; new objects go
//   to its own `.git`, the store is only read (read-only under bwrap and in containers).
// - One agent process owns its work dir, so a store is guarded by an in-process mutex: fetches,
//   compaction, checks and tree writes of the same repository run one at a time.
// - Never trusted blindly: a store found on disk is verified with `git fsck` on its first use by
//   this process; then a stat manifest of its objects (as the tree caches keep) is recorded after
//   every write by the agent and checked before every use, so a store changed by anything else is
//   rebuilt. A failed tree write is retried once from a rebuilt store; a failed fetch is retried
//   once into a fresh store, which replaces the old one only when that fetch succeeds.
// - A rebuilt store gets a new generation directory; the old one is deleted once no job that
//   borrowed its objects is still running. Bounds: `maxStores` and `maxBytes` (least recently
//   used idle stores evicted), `maxIdleMs` (idle stores unused that long are deleted), and more
//   than `maxPacks` packs (one per fetch) are repacked into one.
// - Submodules (`checkout.submodules`) are written from stores of their own, keyed by the job's
//   repository URL and the submodule's URL together: a store never serves one repository's
//   submodule objects to a job of another. The superproject's store is the same with or without
//   them. LFS content is downloaded into the job's own `.git`, never into a store (submodules.ts).
import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { appendFile, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import type { SourceAuth } from '../../schemas/wire/agent.ts';
import { messageOf } from '../../core/errors.ts';
import { JobFailure } from './failure.ts';
import { gitEnv, validateCheckout } from './checkout.ts';
import { checkoutExtras } from './submodules.ts';
import { manifestEntries, statManifest } from './tree-cache.ts';

export interface RepoStoreLimits {
  maxStores: number;
  maxBytes: number;
  maxIdleMs: number;
  maxPacks: number;
}

export interface StoreCheckoutOptions {
  dir: string;
  auth: Static<typeof SourceAuth>;
  sha: string;
  home: string;
  path: string;
  /** The proxy and CA variables the agent passes to jobs (SVC_AGENT_PASS_ENV): git reads them too. */
  passedEnv?: Readonly<Record<string, string>> | undefined;
  signal: AbortSignal;
  log(text: string): void;
  /** `checkout.submodules` and `checkout.lfs` (submodules.ts). */
  submodules?: boolean;
  lfs?: boolean;
  /** Called as each phase ends: `storeWait`, `fetch`, `materialise`. */
  phase?(name: 'storeWait' | 'fetch' | 'materialise'): void;
}

export interface StoreLease {
  release(): void;
}

interface Generation {
  dir: string;
  /** Jobs whose `.git` borrows these objects. */
  leases: number;
  retired: boolean;
  /** Objects manifest recorded after the agent's last write; undefined: not verified yet. */
  manifest: string | undefined;
  bytes: number;
  /**
   * Commits present (only while the manifest holds). Every commit the store holds came with its
   * own ref `refs/svc/c/<sha>`, so once loaded from those refs (or for a store this process made)
   * the set is complete: a commit not in it is fetched without asking git first.
   */
  commits: Set<string>;
}

const newGeneration = (dir: string): Generation => ({ dir, leases: 0, retired: false, manifest: undefined, bytes: 0, commits: new Set() });

interface Store {
  key: string;
  current: Generation;
  /** Checkouts under way (not evicted while any is). */
  users: number;
  lastUsed: number;
  /** Tail of the store's mutex chain. */
  lock: Promise<void>;
}

class GitError extends Error {}

/**
 * One git command. `execFile`, not execa: on the job's hot path every git process counts, and
 * execa's stream plumbing cost about 10 ms more per call than the process itself on a busy
 * 2-core machine (measured: median 22.6 against 12.4 ms for one `git cat-file`).
 */
function git(cwd: string, args: string[], env: Record<string, string>, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, env, signal, timeout: 10 * 60_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (signal.aborted) return reject(signal.reason as Error);
      if (error === null) return resolve(stdout);
      const how = error.signal ?? (typeof error.code === 'number' ? `exit ${String(error.code)}` : String(error.code ?? error.message));
      const output = `${stdout}\n${stderr}`.trim().split('\n').slice(-5).join(' | ');
      reject(new GitError(`git ${args.find((a) => !a.startsWith('-')) ?? args[0]} failed (${how}): ${output}`));
    });
  });
}

export const storeKey = (url: string): string => createHash('sha256').update(url).digest('hex').slice(0, 24);

/**
 * The environment for git writing into a store: `core.fsync=none` on top of `env`'s own
 * `GIT_CONFIG_*` entries (the credential header may be one). By default git fsyncs every pack and
 * index a fetch writes (three flushes per fetch), on the job's path. A store is a cache: one
 * found on disk after a crash is `git fsck`ed before use and rebuilt when anything is torn.
 */
export function storeWriteEnv(env: Record<string, string>): Record<string, string> {
  const n = Number(env['GIT_CONFIG_COUNT'] ?? '0');
  return { ...env, GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: 'core.fsync', [`GIT_CONFIG_VALUE_${n}`]: 'none' };
}

export class RepoStores {
  readonly #root: string;
  readonly #limits: RepoStoreLimits;
  readonly #logger: Logger;
  readonly #stores = new Map<string, Store>();
  #scanned: Promise<Map<string, string>> | undefined;

  constructor(options: { root: string; logger: Logger } & RepoStoreLimits) {
    this.#root = options.root;
    this.#limits = options;
    this.#logger = options.logger;
  }

  get root(): string {
    return this.#root;
  }

  /** Write the commit's tree (with a `.git` borrowing the store's objects) into `options.dir`. */
  async checkout(options: StoreCheckoutOptions): Promise<StoreLease> {
    const lease = await this.#checkoutOne(options, storeKey(options.auth.cloneUrl));
    if (options.submodules !== true && options.lfs !== true) return lease;
    const leases = [lease];
    const release = () => leases.forEach((l) => l.release());
    try {
      await checkoutExtras({
        ...options,
        submodules: options.submodules === true,
        lfs: options.lfs === true,
        envFor: (auth) => gitEnv(auth, options.home, options.path, options.passedEnv),
        checkoutSub: async (sub) => {
          const { phase: _phase, ...rest } = options;
          const key = storeKey(`${options.auth.cloneUrl}\n${sub.auth.cloneUrl}`);
          leases.push(await this.#checkoutOne({ ...rest, ...sub }, key));
        },
      });
    } catch (error) {
      release();
      throw error;
    }
    return { release };
  }

  async #checkoutOne(options: StoreCheckoutOptions & { protocol?: string }, key: string): Promise<StoreLease> {
    validateCheckout(options.sha, options.auth.cloneUrl);
    options.log(`checking out ${options.sha} (from the agent's repository store)`);
    const store = await this.#store(key);
    store.lastUsed = Date.now();
    let gen: Generation | undefined;
    const unlock = await this.#lock(store);
    try {
      options.phase?.('storeWait');
      const env = gitEnv(options.auth, options.home, options.path, options.passedEnv);
      // A submodule's fetch may use only the transport its checked URL names.
      if (options.protocol !== undefined) env['GIT_ALLOW_PROTOCOL'] = options.protocol;
      await this.#verify(store, env, options);
      await this.#ensureCommit(store, env, options);
      options.phase?.('fetch');
      try {
        await this.#materialise(store.current, options, env);
      } catch (error) {
        if (!(error instanceof GitError)) throw error;
        options.log(`writing the tree from the repository store failed (${error.message}); rebuilding the store`);
        this.#retire(store, await this.#fresh(store.key, env, options));
        await this.#materialise(store.current, options, env);
      }
      options.phase?.('materialise');
      gen = store.current;
      gen.leases++;
    } catch (error) {
      if (error instanceof GitError) throw new JobFailure('SVC_ERR_AGENT_CHECKOUT', error.message);
      throw error;
    } finally {
      unlock();
      store.users--;
    }
    this.#evict();
    let released = false;
    const held = gen;
    return {
      release: () => {
        if (released) return;
        released = true;
        held.leases--;
        if (held.retired && held.leases === 0) this.#remove(held.dir);
      },
    };
  }

  /** Existing store directories by key (one per key; older generations are deleted). */
  #scan(): Promise<Map<string, string>> {
    this.#scanned ??= (async () => {
      await mkdir(this.#root, { recursive: true });
      const found = new Map<string, string>();
      for (const name of (await readdir(this.#root)).sort()) {
        const key = name.split('-')[0]!;
        // One directory per key is kept (it is fsck'd before use); others are left-over generations.
        if (!/^[0-9a-f]{24}-[0-9a-f]{8}$/.test(name) || found.has(key)) await rm(join(this.#root, name), { recursive: true, force: true });
        else found.set(key, join(this.#root, name));
      }
      return found;
    })();
    return this.#scanned;
  }

  async #store(key: string): Promise<Store> {
    const found = await this.#scan();
    let store = this.#stores.get(key);
    if (store === undefined) {
      const dir = found.get(key) ?? join(this.#root, `${key}-${randomBytes(4).toString('hex')}`);
      found.delete(key);
      store = { key, current: newGeneration(dir), users: 0, lastUsed: Date.now(), lock: Promise.resolve() };
      this.#stores.set(key, store);
    }
    // In the same synchronous stretch as the lookup: eviction never takes a store being used.
    store.users++;
    return store;
  }

  async #lock(store: Store): Promise<() => void> {
    let unlock!: () => void;
    const previous = store.lock;
    store.lock = new Promise((resolve) => (unlock = resolve));
    await previous;
    return unlock;
  }

  /** `objects/` (packs, one per fetch: a small tree, walked synchronously once its size is known) and `shallow`. */
  async #manifest(gen: Generation): Promise<{ manifest: string; bytes: number }> {
    const dir = gen.dir;
    const objects = await statManifest(join(dir, 'objects'), gen.manifest === undefined ? undefined : manifestEntries(gen.manifest) - 1);
    // Synchronous, as the small manifest walk is: one stat, cheaper than a thread-pool round trip.
    const shallow = statSync(join(dir, 'shallow'), { bigint: true, throwIfNoEntry: false });
    const line = shallow === undefined ? 'shallow\0none' : `shallow\0${shallow.size}\0${shallow.mtimeNs}\0${shallow.ctimeNs}\0${shallow.ino}`;
    return { manifest: `${objects.manifest}\n${line}`, bytes: objects.bytes };
  }

  async #record(gen: Generation): Promise<void> {
    const { manifest, bytes } = await this.#manifest(gen);
    gen.manifest = manifest;
    gen.bytes = bytes;
  }

  /** A usable, trusted store: created, fsck'd on first use, or rebuilt when changed behind our back. */
  async #verify(store: Store, env: Record<string, string>, options: StoreCheckoutOptions): Promise<void> {
    const gen = store.current;
    const exists = existsSync(join(gen.dir, 'objects'));
    if (!exists) {
      await this.#init(gen, env, options.signal);
      return;
    }
    if (gen.manifest === undefined) {
      // Left by an earlier agent process: verify every object before trusting it.
      try {
        await git(gen.dir, ['fsck', '--no-dangling', '--no-progress'], env, options.signal);
        const refs = await git(gen.dir, ['for-each-ref', '--format=%(objectname)', 'refs/svc/c/'], env, options.signal);
        gen.commits = new Set(refs.split('\n').filter((line) => line !== ''));
        await this.#record(gen);
        return;
      } catch (error) {
        if (!(error instanceof GitError)) throw error;
        options.log(`the repository store failed its check (${error.message}); rebuilding it`);
      }
    } else {
      const now = await this.#manifest(gen).catch(() => undefined);
      if (now?.manifest === gen.manifest) return;
      options.log('the repository store was changed outside the agent; rebuilding it');
    }
    const next = newGeneration(join(this.#root, `${store.key}-${randomBytes(4).toString('hex')}`));
    await this.#init(next, env, options.signal);
    this.#retire(store, next);
  }

  async #init(gen: Generation, env: Record<string, string>, signal: AbortSignal): Promise<void> {
    await rm(gen.dir, { recursive: true, force: true });
    await mkdir(gen.dir, { recursive: true });
    await git(gen.dir, ['init', '-q', '--bare'], env, signal);
    // No automatic gc (it would prune what running jobs borrow); one pack per fetch, compacted
    // here. Appended as text: three `git config` processes cost more than the rest of the set-up.
    await appendFile(join(gen.dir, 'config'), '[gc]\n\tauto = 0\n[fetch]\n\tunpackLimit = 1\n[core]\n\tlogAllRefUpdates = false\n');
    gen.commits.clear();
    await this.#record(gen);
  }

  #retire(store: Store, next: Generation): void {
    const old = store.current;
    store.current = next;
    old.retired = true;
    if (old.leases === 0) this.#remove(old.dir);
  }

  async #fetch(gen: Generation, env: Record<string, string>, options: StoreCheckoutOptions): Promise<void> {
    // Fewer processes: no maintenance run (gc is ours), no FETCH_HEAD, no submodule pass. The
    // explicit refspec makes the fetch fail unless the commit arrived (the ref needs the object).
    const flags = ['-q', '--no-tags', '--depth=1', '--no-auto-maintenance', '--no-write-fetch-head', '--no-recurse-submodules'];
    const writeEnv = storeWriteEnv(env);
    await git(gen.dir, ['fetch', ...flags, '--', options.auth.cloneUrl, `+${options.sha}:refs/svc/c/${options.sha}`], writeEnv, options.signal);
    gen.commits.add(options.sha);
    await this.#record(gen);
    // The manifest lists objects/: its pack files are the packs (one per fetch).
    const packs = gen.manifest!.split('\n').filter((line) => /^pack\/[^/\0]+\.pack\0/.test(line)).length;
    if (packs > this.#limits.maxPacks) {
      await git(gen.dir, ['repack', '-a', '-d', '-q'], writeEnv, options.signal);
      await git(gen.dir, ['pack-refs', '--all'], writeEnv, options.signal);
      await this.#record(gen);
    }
  }

  /** A new generation holding just this commit (the old one is left alone until it replaces it). */
  async #fresh(key: string, env: Record<string, string>, options: StoreCheckoutOptions): Promise<Generation> {
    const gen = newGeneration(join(this.#root, `${key}-${randomBytes(4).toString('hex')}`));
    try {
      await this.#init(gen, env, options.signal);
      await this.#fetch(gen, env, options);
      return gen;
    } catch (error) {
      await rm(gen.dir, { recursive: true, force: true });
      throw error;
    }
  }

  async #ensureCommit(store: Store, env: Record<string, string>, options: StoreCheckoutOptions): Promise<void> {
    const gen = store.current;
    // The set is complete (see Generation.commits): no `git cat-file` process to ask first.
    if (gen.commits.has(options.sha)) return;
    options.log(`fetching ${options.sha} into the repository store`);
    try {
      await this.#fetch(gen, env, options);
    } catch (error) {
      if (!(error instanceof GitError)) throw error;
      // The store itself may be what fails: try once into a fresh one, kept only if it works.
      this.#logger.warn({ err: error.message, store: gen.dir }, 'fetch into the repository store failed; trying a fresh store');
      this.#retire(store, await this.#fresh(store.key, env, options));
    }
  }

  /** The job's own `.git` borrowing the store's objects, then the commit's tree written by git. */
  async #materialise(gen: Generation, options: StoreCheckoutOptions, env: Record<string, string>): Promise<void> {
    // The directory itself stays (a spare runner's sandbox may have bound it); only its content goes.
    mkdirSync(options.dir, { recursive: true });
    const left = readdirSync(options.dir);
    if (left.length > 0) await Promise.all(left.map((name) => rm(join(options.dir, name), { recursive: true, force: true })));
    // Seven small writes, synchronously: cheaper than seven thread-pool round trips on a busy machine.
    const dotGit = join(options.dir, '.git');
    for (const sub of ['objects/info', 'refs/heads', 'refs/tags']) mkdirSync(join(dotGit, sub), { recursive: true });
    writeFileSync(join(dotGit, 'objects', 'info', 'alternates'), `${join(gen.dir, 'objects')}\n`);
    // Depth 1, as a fresh `git fetch --depth=1` leaves it: the commit's parents are not part of the job's history.
    writeFileSync(join(dotGit, 'shallow'), `${options.sha}\n`);
    writeFileSync(join(dotGit, 'HEAD'), `${options.sha}\n`);
    writeFileSync(join(dotGit, 'config'), '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n');
    await git(options.dir, ['reset', '-q', '--hard', options.sha], env, options.signal);
  }

  #remove(dir: string): void {
    void rm(dir, { recursive: true, force: true }).catch((error: unknown) => this.#logger.warn({ err: messageOf(error), dir }, 'repository store removal failed'));
  }

  /** Delete idle stores past their age, then the least recently used idle ones over the bounds. */
  #evict(): void {
    const now = Date.now();
    const idle = (s: Store) => s.users === 0 && s.current.leases === 0;
    // Synchronous from the check to the removal from the map: nothing can start using it between.
    const drop = (store: Store) => {
      this.#stores.delete(store.key);
      store.current.retired = true;
      this.#remove(store.current.dir);
    };
    for (const store of [...this.#stores.values()]) if (idle(store) && now - store.lastUsed > this.#limits.maxIdleMs) drop(store);
    const byAge = [...this.#stores.values()].sort((a, b) => a.lastUsed - b.lastUsed);
    let bytes = byAge.reduce((sum, s) => sum + s.current.bytes, 0);
    let count = byAge.length;
    for (const store of byAge) {
      if (count <= this.#limits.maxStores && bytes <= this.#limits.maxBytes) break;
      if (!idle(store)) continue;
      drop(store);
      count--;
      bytes -= store.current.bytes;
    }
  }
}
