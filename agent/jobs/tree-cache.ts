// Extracted trees kept between jobs: source trees per `sourceTarDigest`, dependency trees per
// `depsHash`, under `<work dir>/cache/<kind>/`. A job copies the source tree (it may change its
// workspace; the cache must not change) and links the dependency tree's node_modules.
//
// - Filled once per key (concurrent jobs wait for the same fill): extracted into a temp dir,
//   then renamed into place, so a half-written entry is never used.
// - Bounded by entries and bytes; least recently used entries not in use by a job are evicted.
// - Tamper check: at fill time every file's (size, mode, mtime, ctime, inode) is recorded; a job
//   re-checks it after copying. Any write to an entry changes its ctime, which no process can set
//   back, so an entry changed by a job (the process sandbox without bwrap can write anywhere the
//   agent can) is evicted and the job restores from the download instead.
// - The index lives in memory: the agent wipes the cache directory when it starts.
import { randomBytes } from 'node:crypto';
import { lstatSync, readdirSync, type BigIntStats } from 'node:fs';
import { lstat, mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

export interface TreeCacheOptions {
  root: string;
  maxEntries: number;
  maxBytes: number;
}

interface Entry {
  key: string;
  dir: string;
  bytes: number;
  manifest: string;
  /** Paths in the tree (the manifest's lines). */
  entries: number;
  refs: number;
  lastUsed: number;
  /** Facts proven on an intact copy of this tree (e.g. content hashes verified). */
  readonly facts: Set<string>;
}

export interface CacheLease {
  /** The cached tree (read it, never write it). */
  readonly dir: string;
  /** Whether the entry was filled by this call. */
  readonly filled: boolean;
  /** Paths in the tree (as filled). */
  readonly entries: number;
  /** True when the entry is byte-for-byte as it was filled (stat manifest unchanged). */
  intact(): Promise<boolean>;
  /** Remember/ask something proven about this exact tree (only while it stays intact). */
  hasFact(fact: string): boolean;
  addFact(fact: string): void;
  /** Drop the entry (it failed a check); the lease stays valid until released. */
  evict(): void;
  release(): void;
}

/**
 * Trees known to hold at most this many entries are walked (and copied, cached-restore.ts) with
 * synchronous calls: a few hundred lstat calls take well under a millisecond, while each awaited
 * thread-pool call waits for the event loop to get the CPU back, which on a busy 2-core machine is
 * most of a small tree's set-up time.
 */
export const SMALL_TREE_ENTRIES = 256;

const manifestLine = (path: string, s: BigIntStats): string => `${path}\0${s.mode}\0${s.size}\0${s.mtimeNs}\0${s.ctimeNs}\0${s.ino}`;

/** statManifest's listing, synchronously; undefined past `limit` entries (the tree grew: walk it the async way). */
function statManifestSync(dir: string, limit: number): { manifest: string; bytes: number } | undefined {
  const lines: string[] = [];
  let bytes = 0;
  const walk = (rel: string): boolean => {
    for (const name of readdirSync(rel === '' ? dir : join(dir, rel)).sort()) {
      const path = rel === '' ? name : `${rel}/${name}`;
      const s = lstatSync(join(dir, path), { bigint: true });
      lines.push(manifestLine(path, s));
      bytes += Number(s.size);
      if (lines.length > limit) return false;
      if (s.isDirectory() && !walk(path)) return false;
    }
    return true;
  };
  return walk('') ? { manifest: lines.join('\n'), bytes } : undefined;
}

/**
 * A listing of every path under `dir` with the stat fields a write would change, and the total
 * size. The entries of a directory are stat'ed together (one thread-pool round trip per level, not
 * one per path: on a busy machine each await waits for the CPU); the listing's order is fixed.
 * `recorded`: how many entries the tree had when last listed; a small tree is walked synchronously.
 */
export async function statManifest(dir: string, recorded?: number): Promise<{ manifest: string; bytes: number }> {
  const small = recorded !== undefined && recorded <= SMALL_TREE_ENTRIES ? statManifestSync(dir, recorded * 2 + 16) : undefined;
  if (small !== undefined) return small;
  let bytes = 0;
  const walk = async (rel: string): Promise<string[]> => {
    const names = (await readdir(rel === '' ? dir : join(dir, rel))).sort();
    const parts = await Promise.all(
      names.map(async (name) => {
        const path = rel === '' ? name : `${rel}/${name}`;
        const s = await lstat(join(dir, path), { bigint: true });
        bytes += Number(s.size);
        const line = manifestLine(path, s);
        return s.isDirectory() ? [line, ...(await walk(path))] : [line];
      }),
    );
    return parts.flat();
  };
  return { manifest: (await walk('')).join('\n'), bytes };
}

/** Paths a manifest lists. */
export const manifestEntries = (manifest: string): number => (manifest === '' ? 0 : manifest.split('\n').length);

export class TreeCache {
  readonly #options: TreeCacheOptions;
  readonly #entries = new Map<string, Entry>();
  readonly #filling = new Map<string, Promise<Entry>>();
  #ready: Promise<void> | undefined;

  constructor(options: TreeCacheOptions) {
    this.#options = options;
  }

  /** Entries held now (tests, metrics). */
  get size(): number {
    return this.#entries.size;
  }

  /** The tree for `key`, filling it with `fill(dir)` (an empty temp dir) on a miss. */
  async lease(key: string, fill: (dir: string) => Promise<void>): Promise<CacheLease> {
    if (!/^[0-9a-f]{64}$/.test(key)) throw new Error(`cache key must be a sha256 hex digest, got ${JSON.stringify(key.slice(0, 80))}`);
    // An earlier process's entries have no manifest here: start empty.
    this.#ready ??= rm(this.#options.root, { recursive: true, force: true }).then(() => mkdir(this.#options.root, { recursive: true })).then(() => undefined);
    await this.#ready;
    let filled = false;
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      const shared = this.#filling.get(key);
      // Another job's fill can fail for its own reasons (its cancel): then fill it ourselves.
      entry = shared === undefined ? undefined : await shared.catch(() => undefined);
      if (entry === undefined) {
        filled = true;
        const own = this.#fill(key, fill).finally(() => {
          if (this.#filling.get(key) === own) this.#filling.delete(key);
        });
        this.#filling.set(key, own);
        entry = await own;
      }
    }
    entry.refs++;
    entry.lastUsed = performance.now();
    const held = entry;
    let released = false;
    return {
      dir: held.dir,
      filled,
      entries: held.entries,
      intact: async () => {
        try {
          return (await statManifest(held.dir, held.entries)).manifest === held.manifest;
        } catch {
          return false;
        }
      },
      hasFact: (fact) => held.facts.has(fact),
      addFact: (fact) => void held.facts.add(fact),
      evict: () => {
        if (this.#entries.get(key) === held) this.#entries.delete(key);
        held.facts.clear();
      },
      release: () => {
        if (released) return;
        released = true;
        held.refs--;
        if (held.refs === 0 && this.#entries.get(key) !== held) void rm(held.dir, { recursive: true, force: true }).catch(() => undefined);
        void this.#evict();
      },
    };
  }

  async #fill(key: string, fill: (dir: string) => Promise<void>): Promise<Entry> {
    const tmp = join(this.#options.root, `.tmp-${key.slice(0, 16)}-${randomBytes(4).toString('hex')}`);
    const dir = join(this.#options.root, `${key}-${randomBytes(4).toString('hex')}`);
    try {
      await mkdir(tmp, { recursive: true });
      await fill(tmp);
      await rename(tmp, dir);
    } catch (error) {
      await rm(tmp, { recursive: true, force: true }).catch(() => undefined);
      throw error;
    }
    const { manifest, bytes } = await statManifest(dir);
    const entry: Entry = { key, dir, bytes, manifest, entries: manifestEntries(manifest), refs: 0, lastUsed: performance.now(), facts: new Set() };
    this.#entries.set(key, entry);
    return entry;
  }

  /** Least recently used entries not in use go until both bounds hold. */
  async #evict(): Promise<void> {
    const total = () => [...this.#entries.values()].reduce((sum, e) => sum + e.bytes, 0);
    const idle = [...this.#entries.values()].filter((e) => e.refs === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const entry of idle) {
      if (this.#entries.size <= this.#options.maxEntries && total() <= this.#options.maxBytes) break;
      this.#entries.delete(entry.key);
      await rm(entry.dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}
