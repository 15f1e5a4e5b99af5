// Unpack a tarball (source, dependencies, user cache) into a directory, refusing hostile
// archives before a single byte is written: absolute paths, `..` segments, links whose target
// leaves the destination, and entry types other than files, directories and links. node-tar
// would strip or skip such entries with a warning; a CI agent must not quietly run a tree that
// differs from what was cached, so any of them fails the whole extraction.
import { mkdir, realpath, rm, symlink } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import * as tar from 'tar';
import { InputError } from '../../core/errors.ts';

export const MAX_TAR_ENTRIES = 500_000;

export class HostileArchiveError extends InputError {
  constructor(entry: string, why: string) {
    super('SVC_ERR_AGENT_ARCHIVE_HOSTILE', `refused archive entry ${JSON.stringify(entry.slice(0, 300))}: ${why}; nothing was extracted`, {
      details: { entry: entry.slice(0, 300) },
    });
  }
}

const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);

function insideRoot(relative: string): boolean {
  const normal = posix.normalize(relative);
  return normal !== '..' && !normal.startsWith('../') && !posix.isAbsolute(normal);
}

function checkPath(path: string): void {
  if (path.includes('\0')) throw new HostileArchiveError(path, 'the path contains a NUL byte');
  if (posix.isAbsolute(path) || /^[a-zA-Z]:[\\/]/.test(path) || path.startsWith('\\')) throw new HostileArchiveError(path, 'absolute paths are not allowed');
  const segments = path.split(/[\\/]+/);
  if (segments.includes('..')) throw new HostileArchiveError(path, '".." path segments are not allowed');
}

/**
 * Each path of the archive is one kind: a directory (named, or implied by an entry below it) or a
 * file or link. An entry below a file or link would be written through a symlink or into a file
 * (`tar -c` never makes such archives), and node-tar 7 never settles on some of them (a hard link
 * below a file: found by test/fuzz/archives), so the whole archive is refused.
 */
class PathKinds {
  readonly #kinds = new Map<string, 'dir' | 'file' | 'symlink'>();

  static #parts(path: string): string[] {
    return posix.normalize(path).split('/').filter((p) => p !== '' && p !== '.');
  }

  check(path: string, type: string, linkpath: string | undefined): void {
    // A trailing slash names a directory; node-tar 7 never settles on some symlinks named so.
    if (type !== 'Directory' && path.endsWith('/')) throw new HostileArchiveError(path, 'a path ending in "/" names a directory, not a file or link');
    const parts = PathKinds.#parts(path);
    for (let i = 1; i < parts.length; i++) {
      const ancestor = parts.slice(0, i).join('/');
      const kind = this.#kinds.get(ancestor);
      if (kind !== undefined && kind !== 'dir') throw new HostileArchiveError(path, `it lies below ${JSON.stringify(ancestor)}, a file or link earlier in the archive`);
      this.#kinds.set(ancestor, 'dir');
    }
    if (parts.length === 0) return;
    // A hard link names a file member stored before it (that is how tar writes them); a hard
    // link to a directory, or to nothing yet, also never settles in node-tar 7.
    if (type === 'Link' && this.#kinds.get(PathKinds.#parts(linkpath ?? '').join('/')) !== 'file') {
      throw new HostileArchiveError(path, `a hard link must name a file stored earlier in the archive, not ${JSON.stringify(linkpath ?? '')}`);
    }
    const own = type === 'Directory' ? 'dir' : type === 'SymbolicLink' ? 'symlink' : 'file';
    const key = parts.join('/');
    const before = this.#kinds.get(key);
    if (before !== undefined && before !== own) throw new HostileArchiveError(path, 'the archive uses this path as two kinds of entry (directory, file, link)');
    this.#kinds.set(key, own);
  }
}

interface Scan {
  entries: number;
  /** Symbolic links by path (a later entry of the same path wins, as in tar), created after the rest. */
  symlinks: Map<string, string>;
}

/** Throws HostileArchiveError for the first entry that would escape `dir`. */
export async function scanArchive(file: string): Promise<number> {
  return (await scan(file)).entries;
}

async function scan(file: string): Promise<Scan> {
  const symlinks = new Map<string, string>();
  let count = 0;
  let failure: Error | undefined;
  const kinds = new PathKinds();
  await tar.t({
    file,
    onReadEntry(entry) {
      if (failure !== undefined) return;
      try {
        count++;
        if (count > MAX_TAR_ENTRIES) throw new HostileArchiveError(entry.path, `more than ${MAX_TAR_ENTRIES} entries`);
        checkPath(entry.path);
        if (!ALLOWED_TYPES.has(entry.type)) throw new HostileArchiveError(entry.path, `entry type ${entry.type} is not allowed`);
        // Only a directory may name the destination itself ("./" in `tar -C dir .` archives). A
        // link or file there is never a real tree, and node-tar 7 never settles on some such
        // archives (a hard link "." followed by a symlink below it: found by test/fuzz/archives).
        if (entry.type !== 'Directory' && ['.', ''].includes(posix.normalize(entry.path.replace(/\/+$/, '') || '.'))) {
          throw new HostileArchiveError(entry.path, 'only a directory may name the destination itself');
        }
        if (entry.type === 'SymbolicLink' || entry.type === 'Link') {
          const target = entry.linkpath ?? '';
          if (target === '') throw new HostileArchiveError(entry.path, 'a link without a target');
          if (posix.isAbsolute(target)) throw new HostileArchiveError(entry.path, `link target ${JSON.stringify(target)} is absolute`);
          // Symlink targets are relative to the link's directory — of the path it is made at, the
          // normalised one ("a/b/." is made at "a/b", whose directory is "a": found by the
          // archive fuzzer) — and hard link targets to the root.
          const resolved = entry.type === 'SymbolicLink' ? posix.join(posix.dirname(posix.normalize(entry.path)), target) : target;
          if (!insideRoot(resolved)) throw new HostileArchiveError(entry.path, `link target ${JSON.stringify(target)} points outside the destination`);
        }
        kinds.check(entry.path, entry.type, entry.linkpath);
        if (entry.type === 'SymbolicLink') symlinks.set(posix.normalize(entry.path), entry.linkpath ?? '');
      } catch (error) {
        failure = error as Error;
      }
      entry.resume();
    },
  });
  if (failure !== undefined) throw failure;
  return { entries: count, symlinks };
}

/**
 * Scan, then extract with node-tar's own protections on and every warning fatal. Symbolic links
 * are made here, after node-tar wrote everything else: node-tar 7 reserves a symlink's target as
 * if it were relative to the destination, so a link whose target names one of its own ancestor
 * directories (`x/y/link -> x`, a legal relative link) waits on itself forever (found by
 * test/fuzz/archives). The scan already refused every link that leaves the destination and every
 * entry below a link, so no entry is ever written through a link made here.
 */
export async function extractArchive(file: string, dir: string): Promise<number> {
  const { entries, symlinks } = await scan(file);
  await mkdir(dir, { recursive: true });
  await tar.x({
    file,
    cwd: dir,
    strict: true,
    preservePaths: false,
    preserveOwner: false,
    noChmod: false,
    filter: (_path, entry) => !('type' in entry && entry.type === 'SymbolicLink'),
  });
  const root = await realpath(dir);
  for (const [path, target] of symlinks) {
    const at = join(dir, path);
    await mkdir(dirname(at), { recursive: true });
    // The destination may hold links of its own (a restore into an existing checkout): a link is
    // only made where its directory really is inside the destination.
    const parent = await realpath(dirname(at));
    if (parent !== root && !parent.startsWith(`${root}/`)) throw new HostileArchiveError(path, 'its directory in the destination is a link that leads outside it');
    // Like tar, a later entry replaces what is there.
    await rm(at, { recursive: true, force: true });
    await symlink(target, at);
  }
  return entries;
}
