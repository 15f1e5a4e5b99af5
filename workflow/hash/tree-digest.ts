// The tree digest: every file under `.svc/` not excluded by `.svcignore`, each hashed once
// (CRLF normalized unless binary), combined with the length-prefixed encoding of encoding.ts.
// Symlinks are followed (a link to a directory is walked as one) with loop protection.
import type { Dirent } from 'node:fs';
import { readdir, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { InputError, messageOf } from '../../core/errors.ts';
import { HashErrorCode, type HashWarning } from './diagnostics.ts';
import { digestEntries, digestFile, sortEntries } from './encoding.ts';
import { mapBounded } from './map-bounded.ts';
import { errnoOf, isInside, realDirectory } from './repo-paths.ts';
import { loadSvcignore, type SvcignoreMatcher } from './svcignore.ts';

/** A tree larger than this is almost certainly a missing `node_modules/` line. */
export const MAX_TREE_FILES = 100_000;
const READ_CONCURRENCY = 32;

export interface TreeFile {
  /** POSIX path relative to `.svc/`. */
  path: string;
  /** Lowercase hex SHA-256 of the normalized content. */
  sha256: string;
  /** Size on disk before normalization. */
  bytes: number;
  binary: boolean;
  /** Set when the file was reached through a symlink (the file itself or a parent directory). */
  viaSymlink?: true;
}

export interface TreeDigestResult {
  /** Lowercase hex SHA-256 over the sorted entries. */
  treeDigest: string;
  /** Covered files in digest order (for `svc compile --verbose`). */
  files: TreeFile[];
  /** Paths (relative to `.svc/`) of the symlinks that were followed, sorted. */
  symlinks: string[];
  warnings: HashWarning[];
  svcignore: SvcignoreMatcher['source'];
}

interface Found {
  path: string;
  abs: string;
  viaSymlink: boolean;
}

interface WalkState {
  matcher: SvcignoreMatcher;
  /** Real path of the directory holding `.svc/`; link targets outside it are warned about. */
  parentReal: string;
  found: Found[];
  symlinks: string[];
  warnings: HashWarning[];
  /** Real paths of the directories being walked, root first: re-entering one is a loop. */
  ancestors: Set<string>;
}

/** Hash the tree under `svcDirAbs` (an absolute path to an existing `.svc/` directory). */
export async function computeTreeDigest(svcDirAbs: string): Promise<TreeDigestResult> {
  const rootReal = await realDirectory(svcDirAbs, 'the .svc directory');
  const matcher = await loadSvcignore(svcDirAbs);
  const state: WalkState = {
    matcher,
    parentReal: path.dirname(rootReal),
    found: [],
    symlinks: [],
    warnings: [...matcher.warnings],
    ancestors: new Set([rootReal]),
  };
  await walkDirectory(svcDirAbs, '', rootReal, false, state);

  const ordered = sortEntries(state.found);
  const digests = await mapBounded(ordered, READ_CONCURRENCY, async (file) => {
    try {
      return await digestFile(file.abs);
    } catch (error) {
      return new InputError(HashErrorCode.readFailed, `cannot read .svc/${file.path}: ${messageOf(error)}`, {
        cause: error,
        details: { path: file.path },
      });
    }
  });
  const files: TreeFile[] = [];
  for (const [index, file] of ordered.entries()) {
    const result = digests[index]!;
    // Reads run concurrently; report the first failure in path order so the error is stable.
    if (result instanceof InputError) throw result;
    const entry: TreeFile = { path: file.path, sha256: result.digest.toString('hex'), bytes: result.bytes, binary: result.binary };
    if (file.viaSymlink) entry.viaSymlink = true;
    files.push(entry);
  }
  const treeDigest = digestEntries(ordered.map((file, index) => ({ path: file.path, digest: (digests[index] as { digest: Buffer }).digest })));
  return { treeDigest, files, symlinks: sortEntries(state.symlinks.map((p) => ({ path: p }))).map((e) => e.path), warnings: state.warnings, svcignore: matcher.source };
}

async function walkDirectory(abs: string, rel: string, real: string, viaSymlink: boolean, state: WalkState): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(abs, { withFileTypes: true });
  } catch (error) {
    throw new InputError(HashErrorCode.readFailed, `cannot list .svc/${rel}: ${messageOf(error)}`, { cause: error, details: { path: rel } });
  }
  for (const entry of entries) {
    const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
    const childAbs = path.join(abs, entry.name);
    if (entry.isDirectory()) {
      if (state.matcher.ignores(`${childRel}/`)) continue;
      const childReal = path.join(real, entry.name);
      state.ancestors.add(childReal);
      await walkDirectory(childAbs, childRel, childReal, viaSymlink, state);
      state.ancestors.delete(childReal);
    } else if (entry.isFile()) {
      if (state.matcher.ignores(childRel)) continue;
      addFile(state, { path: childRel, abs: childAbs, viaSymlink });
    } else if (entry.isSymbolicLink()) {
      await followSymlink(childAbs, childRel, state);
    } else {
      if (state.matcher.ignores(childRel)) continue;
      throw new InputError(
        HashErrorCode.unsupportedFile,
        `.svc/${childRel} is neither a file, a directory nor a symlink (a socket, FIFO or device): remove it or list it in .svc/.svcignore`,
        { details: { path: childRel } },
      );
    }
  }
}

async function followSymlink(abs: string, rel: string, state: WalkState): Promise<void> {
  let target: Awaited<ReturnType<typeof stat>>;
  try {
    target = await stat(abs);
  } catch (error) {
    // An excluded link is never followed, so a dangling or looping one there is harmless.
    if (state.matcher.ignores(rel) || state.matcher.ignores(`${rel}/`)) return;
    const linkText = await readlink(abs).catch(() => '?');
    if (errnoOf(error) === 'ELOOP') {
      throw new InputError(HashErrorCode.symlinkLoop, `symlink .svc/${rel} -> ${linkText} never resolves (a loop of links): fix or remove it`, {
        cause: error,
        details: { path: rel, target: linkText },
      });
    }
    throw new InputError(
      HashErrorCode.symlinkDangling,
      `symlink .svc/${rel} -> ${linkText} points to nothing: fix the link, remove it or list it in .svc/.svcignore`,
      { cause: error, details: { path: rel, target: linkText } },
    );
  }
  const isDirectory = target.isDirectory();
  if (state.matcher.ignores(isDirectory ? `${rel}/` : rel)) return;

  const linkText = await readlink(abs);
  const real = await realpath(abs);
  state.symlinks.push(rel);
  if (path.isAbsolute(linkText)) {
    state.warnings.push({
      code: 'symlink-absolute-target',
      path: rel,
      message: `symlink .svc/${rel} has an absolute target (${linkText}); it will not resolve in other checkouts`,
    });
  }
  if (!isInside(state.parentReal, real)) {
    state.warnings.push({
      code: 'symlink-outside-parent',
      path: rel,
      message: `symlink .svc/${rel} points outside the directory holding .svc/ (${real}); that content is hashed but may not exist where the workflow runs`,
    });
  }

  if (isDirectory) {
    if (state.ancestors.has(real)) {
      throw new InputError(HashErrorCode.symlinkLoop, `symlink .svc/${rel} -> ${linkText} points back into a directory that contains it (a loop): fix or remove it`, {
        details: { path: rel, target: linkText },
      });
    }
    state.ancestors.add(real);
    try {
      await walkDirectory(abs, rel, real, true, state);
    } finally {
      state.ancestors.delete(real);
    }
  } else if (target.isFile()) {
    addFile(state, { path: rel, abs, viaSymlink: true });
  } else {
    throw new InputError(HashErrorCode.unsupportedFile, `symlink .svc/${rel} points to something that is neither a file nor a directory: remove it or list it in .svc/.svcignore`, {
      details: { path: rel, target: linkText },
    });
  }
}

function addFile(state: WalkState, file: Found): void {
  if (state.found.length >= MAX_TREE_FILES) {
    throw new InputError(HashErrorCode.tooManyFiles, `more than ${MAX_TREE_FILES} files under .svc/: list generated or vendored folders (node_modules/, dist/) in .svc/.svcignore`, {
      details: { limit: MAX_TREE_FILES },
    });
  }
  state.found.push(file);
}
