// Source and dependency restores through the agent's tree caches (tree-cache.ts). The digest
// rules are restore.ts's: a cache entry is only ever filled from a download whose sha256 matched
// the dispatch, and an entry that changed since (the stat manifest) is never used.
import { createHash } from 'node:crypto';
import { chmodSync, constants, copyFileSync, lstatSync, mkdirSync, readdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { chmod, copyFile, lstat, mkdir, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describeUrl, normalizeDigest } from './download.ts';
import { JobFailure } from './failure.ts';
import { fetchDeps, inlineInstall, restoreDeps, restoreSource, type DepsOutcome, type SetupLog } from './restore.ts';
import type { JobInstall } from './private-install.ts';
import { SMALL_TREE_ENTRIES, type CacheLease, type TreeCache } from './tree-cache.ts';

/**
 * The cache key: the digest AND the object's address without its signature (scheme, host,
 * path). An entry answers only the same request for the same bytes: a dispatch naming another
 * object (or a broken address) still downloads it, with restore.ts's failure rules.
 */
export function treeCacheKey(digest: string, url: string): string {
  return createHash('sha256').update(`${digest}\0${describeUrl(url)}`).digest('hex');
}

/**
 * `from` (a cache entry: directories, files, symlinks) copied to `to`, over what is there. The
 * entries of a directory are copied together: `fs.cp` checks each path's parents and both sides
 * one await at a time, which on a busy machine is most of a small tree's set-up. Whatever is
 * in the way at a path (a file where a directory goes, a symlink a checkout left) is removed
 * first, never written through; symlinks are copied as links (targets unchanged, as `cp`'s
 * `verbatimSymlinks`); files and created directories keep their mode (`copyFile` sets the file's).
 * `entries`: the tree's size when known (a cache entry's); a small tree is copied synchronously.
 */
export async function copyTree(from: string, to: string, entries?: number): Promise<void> {
  // A tree known to be small is copied with synchronous calls (tree-cache.ts SMALL_TREE_ENTRIES).
  if (entries !== undefined && entries <= SMALL_TREE_ENTRIES) return copyEntrySync(from, to, kindOf(lstatSync(from)));
  await copyEntry(from, to, kindOf(await lstat(from)));
}

type EntryKind = 'dir' | 'file' | 'link' | 'other';
const kindOf = (e: { isDirectory(): boolean; isSymbolicLink(): boolean; isFile(): boolean }): EntryKind =>
  e.isDirectory() ? 'dir' : e.isSymbolicLink() ? 'link' : e.isFile() ? 'file' : 'other';
const notCopyable = (from: string) =>
  // Extraction refuses every other entry type, so this is a cache someone else wrote into.
  new Error(`the agent's cached tree holds ${from}, which is neither a file, a directory nor a symlink`);

function copyEntrySync(from: string, to: string, kind: EntryKind): void {
  if (kind === 'dir') {
    let existing: ReturnType<typeof lstatSync> | undefined;
    try {
      existing = lstatSync(to);
    } catch {
      existing = undefined;
    }
    if (existing !== undefined && !existing.isDirectory()) rmSync(to, { recursive: true, force: true });
    if (existing?.isDirectory() !== true) {
      mkdirSync(to);
      chmodSync(to, lstatSync(from).mode & 0o7777);
    }
    for (const e of readdirSync(from, { withFileTypes: true })) copyEntrySync(join(from, e.name), join(to, e.name), kindOf(e));
    return;
  }
  const place = (): void => {
    if (kind === 'link') symlinkSync(readlinkSync(from), to);
    else if (kind === 'file') copyFileSync(from, to, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
    else throw notCopyable(from);
  };
  try {
    place();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    rmSync(to, { recursive: true, force: true });
    place();
  }
}

async function copyEntry(from: string, to: string, kind: EntryKind): Promise<void> {
  if (kind === 'dir') {
    const existing = await lstat(to).catch(() => undefined);
    if (existing !== undefined && !existing.isDirectory()) await rm(to, { recursive: true, force: true });
    if (existing?.isDirectory() !== true) {
      await mkdir(to);
      // Created here: the entry's mode (mkdir's is masked by the umask). A directory already there keeps its own.
      await chmod(to, (await lstat(from)).mode & 0o7777);
    }
    const entries = await readdir(from, { withFileTypes: true });
    await Promise.all(entries.map((e) => copyEntry(join(from, e.name), join(to, e.name), kindOf(e))));
    return;
  }
  const place = async (): Promise<void> => {
    if (kind === 'link') await symlink(await readlink(from), to);
    else if (kind === 'file') await copyFile(from, to, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
    else throw notCopyable(from);
  };
  try {
    await place();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    await rm(to, { recursive: true, force: true });
    await place();
  }
}

/** The dependency download failed: the job installs inline (nothing is cached). */
class DepsUnavailable extends Error {}

/**
 * The source tarball's tree copied into `srcDir` (over what is there: a checkout's files). The
 * lease is returned (the caller releases it) so facts proven on this tree, like a verified
 * content hash, can be remembered on the entry.
 */
export async function restoreSourceCached(options: { cache: TreeCache; url: string; digest: string | null; jobRoot: string; srcDir: string; log: SetupLog; signal: AbortSignal }, retry = true): Promise<CacheLease | undefined> {
  const digest = options.digest === null ? null : normalizeDigest(options.digest);
  if (digest === null) {
    await restoreSource(options);
    return undefined;
  }
  const key = treeCacheKey(digest, options.url);
  const lease = await options.cache.lease(key, (dir) => restoreSource({ ...options, srcDir: dir }));
  if (!lease.filled && !(await lease.intact())) {
    lease.evict();
    lease.release();
    options.log(`the agent's cached source tree for sha256 ${digest} changed since it was stored; dropped it, restoring from the download`);
    // Once: the fresh entry is filled from the download by this job.
    if (retry) return restoreSourceCached(options, false);
    await restoreSource(options);
    return undefined;
  }
  if (!lease.filled) options.log(`restoring source from ${describeUrl(options.url)}: held in the agent's tree cache (sha256 ${digest}), not downloaded again`);
  try {
    await copyTree(lease.dir, options.srcDir, lease.entries);
    // A write into the entry while it was copied: the copy may hold changed bytes.
    if (!(await lease.intact())) {
      lease.evict();
      throw new JobFailure('SVC_ERR_AGENT_SOURCE_CACHE', `the agent's cached source tree for sha256 ${digest} changed while it was copied (dropped from the cache); dispatch the job again`);
    }
  } catch (error) {
    lease.release();
    throw error;
  }
  return lease;
}

/**
 * Dependencies into `.svc/`: from the dependency cache (filled from the verified download) with
 * `node_modules` as a symlink into the entry, other top-level entries copied. The lease must be
 * held until the job ends (the entry is not evicted while linked). Without a usable tarball:
 * restore.ts's behaviour (inline install).
 */
export async function restoreDepsCached(options: {
  cache: TreeCache;
  url: string | null;
  hash: string | null;
  jobRoot: string;
  srcDir: string;
  log: SetupLog;
  signal: AbortSignal;
  installEnv: Record<string, string>;
  install?: JobInstall | undefined;
}): Promise<{ outcome: DepsOutcome; lease?: CacheLease }> {
  const digest = options.url === null || options.hash === null ? null : normalizeDigest(options.hash);
  if (options.url === null || digest === null) return { outcome: await restoreDeps(options) };
  const url = options.url;
  const key = treeCacheKey(digest, url);
  const svcDir = join(options.srcDir, '.svc');
  let lease: CacheLease;
  try {
    lease = await options.cache.lease(key, async (dir) => {
      const fetched = await fetchDeps({ url, expected: digest, file: join(options.jobRoot, 'deps.tar.gz'), into: dir, log: options.log, signal: options.signal });
      if (fetched === 'unavailable') throw new DepsUnavailable();
    });
  } catch (error) {
    if (error instanceof DepsUnavailable) return { outcome: await inlineInstall(svcDir, options.log, options.installEnv, options.signal, options.install) };
    throw error;
  }
  if (!lease.filled && !(await lease.intact())) {
    lease.evict();
    lease.release();
    options.log(`the agent's cached dependency tree for sha256 ${digest} changed since it was stored; dropped it, restoring from the download`);
    return { outcome: await restoreDeps(options) };
  }
  try {
    for (const entry of await readdir(lease.dir, { withFileTypes: true })) {
      const target = join(svcDir, entry.name);
      await rm(target, { recursive: true, force: true });
      if (entry.name === 'node_modules' && entry.isDirectory()) await symlink(join(lease.dir, entry.name), target, 'dir');
      else await copyTree(join(lease.dir, entry.name), target);
    }
  } catch (error) {
    lease.release();
    throw error;
  }
  options.log(`dependencies restored from cache (sha256 ${digest}; node_modules linked from the agent's dependency cache)`);
  return { outcome: 'restored', lease };
}

/**
 * Every entry of `from` moved into `to` (same file system): directories present in both are
 * merged, anything else in `to` is replaced. `from` is left empty. Renames, not copies: the
 * staged tree was copied once already.
 */
export async function moveTreeInto(from: string, to: string): Promise<void> {
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory()) {
      const existing = await lstat(target).catch(() => undefined);
      if (existing?.isDirectory() === true) {
        await moveTreeInto(source, target);
        continue;
      }
    }
    await rm(target, { recursive: true, force: true });
    await rename(source, target);
  }
}
