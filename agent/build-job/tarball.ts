// Deterministic tar.gz: the same tree gives the same bytes, so the sha256 of a tarball names its
// content (the source cache's `sourceTarDigest`, the dependency cache's `depsHash`). Entries are
// sorted by byte order, modes normalized (0755 when any execute bit is set, else 0644;
// directories 0755), owners and access times dropped (node-tar `portable`) and every mtime
// fixed. The tree passed in must be a scratch copy the caller owns: modes are normalized in place.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import * as tar from 'tar';
import { InputError } from '../../core/errors.ts';

/** Every entry's mtime (a fixed date: tarballs of the same tree are byte-identical). */
export const FIXED_MTIME = new Date('2000-01-01T00:00:00.000Z');
export const MAX_BUNDLE_ENTRIES = 500_000;

export interface TarballResult {
  file: string;
  /** Lowercase hex sha256 of the tarball bytes. */
  sha256: string;
  bytes: number;
  entries: number;
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * Lists `roots` (paths relative to `cwd`) and everything under them, without following
 * symlinks, normalizing modes on the way; returns the sorted entry list for `tar.c`.
 */
export async function listTree(cwd: string, roots: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  const visit = async (rel: string): Promise<void> => {
    const abs = join(cwd, rel);
    const info = await lstat(abs);
    if (info.isSymbolicLink()) {
      out.push(rel);
    } else if (info.isDirectory()) {
      out.push(rel);
      await chmod(abs, 0o755);
      for (const name of await readdir(abs)) await visit(`${rel}/${name}`);
    } else if (info.isFile()) {
      out.push(rel);
      await chmod(abs, (info.mode & 0o111) !== 0 ? 0o755 : 0o644);
    }
    // Sockets, FIFOs and devices are never bundled.
    if (out.length > MAX_BUNDLE_ENTRIES) {
      throw new InputError('SVC_ERR_BUILD_TOO_MANY_FILES', `more than ${MAX_BUNDLE_ENTRIES} entries under ${roots.join(', ')}; refusing to bundle`);
    }
  };
  for (const root of roots) await visit(root);
  return out.sort(byteOrder);
}

/** Writes `entries` (relative to `cwd`, in the given order, no recursion) as a gzip tarball. */
export async function writeTarball(cwd: string, entries: readonly string[], file: string): Promise<TarballResult> {
  const sorted = [...entries].sort(byteOrder);
  // Level 1: a cache is written on every job that changed it and read back on the same network, so
  // packing time counts more than bytes. On bench/big-cache.ts's 1 GiB tree level 6 (zlib's
  // default) made packing twice the plain copy (docs/benchmarks.md "Big caches").
  await tar.c({ gzip: { level: 1 }, file, cwd, portable: true, mtime: FIXED_MTIME, noDirRecurse: true, follow: false, strict: true }, sorted);
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return { file, sha256: hash.digest('hex'), bytes: (await stat(file)).size, entries: sorted.length };
}
