// Unpack a tarball (source, dependencies, user cache) into a directory, refusing hostile
// archives before a single byte is written: absolute paths, `..` segments, links whose target
// leaves the destination, and entry types other than files, directories and links. node-tar
// would strip or skip such entries with a warning; a CI agent must not quietly run a tree that
// differs from what was cached, so any of them fails the whole extraction.
import { mkdir } from 'node:fs/promises';
import { posix } from 'node:path';
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

/** Throws HostileArchiveError for the first entry that would escape `dir`. */
export async function scanArchive(file: string): Promise<number> {
  let count = 0;
  let failure: Error | undefined;
  await tar.t({
    file,
    onReadEntry(entry) {
      if (failure !== undefined) return;
      try {
        count++;
        if (count > MAX_TAR_ENTRIES) throw new HostileArchiveError(entry.path, `more than ${MAX_TAR_ENTRIES} entries`);
        checkPath(entry.path);
        if (!ALLOWED_TYPES.has(entry.type)) throw new HostileArchiveError(entry.path, `entry type ${entry.type} is not allowed`);
        if (entry.type === 'SymbolicLink' || entry.type === 'Link') {
          const target = entry.linkpath ?? '';
          if (target === '') throw new HostileArchiveError(entry.path, 'a link without a target');
          if (posix.isAbsolute(target)) throw new HostileArchiveError(entry.path, `link target ${JSON.stringify(target)} is absolute`);
          // Symlink targets are relative to the link's directory; hard link targets to the root.
          const resolved = entry.type === 'SymbolicLink' ? posix.join(posix.dirname(entry.path), target) : target;
          if (!insideRoot(resolved)) throw new HostileArchiveError(entry.path, `link target ${JSON.stringify(target)} points outside the destination`);
        }
      } catch (error) {
        failure = error as Error;
      }
      entry.resume();
    },
  });
  if (failure !== undefined) throw failure;
  return count;
}

/** Scan, then extract with node-tar's own protections on and every warning fatal. */
export async function extractArchive(file: string, dir: string): Promise<number> {
  const entries = await scanArchive(file);
  await mkdir(dir, { recursive: true });
  await tar.x({ file, cwd: dir, strict: true, preservePaths: false, preserveOwner: false, noChmod: false });
  return entries;
}
