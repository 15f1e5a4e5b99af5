// `hashFiles`: extra files (glob patterns relative to the repository root) folded into a
// workflow's content hash as the asset digest. The repository listing and each file's digest
// are memoized in a RepoFileIndex so that many workflows sharing patterns cost one walk.
import type { Dirent } from 'node:fs';
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { InputError, messageOf } from '../../core/errors.ts';
import { HashErrorCode, type HashWarning } from './diagnostics.ts';
import { type ContentDigest, digestEntries, digestFile, sortEntries } from './encoding.ts';
import { errnoOf, isInside } from './repo-paths.ts';

/** Never listed, never matched, whatever the pattern. */
const EXCLUDED_DIR = '.git';
const MAX_LISTED_FILES = 200_000;
const GLOB_OPTIONS = { dot: true } as const;

interface ListedFile {
  path: string;
  abs: string;
  /** Why this entry cannot be hashed if a pattern selects it (a link escaping the root, a dangling link). */
  problem?: { code: HashErrorCode; message: string };
}

export interface ResolvedHashFiles {
  /** Repo-relative POSIX paths, sorted by byte order: the lock's `resolvedHashFiles`. */
  files: string[];
  /** Lowercase hex; over an empty set when nothing matched. */
  assetDigest: string;
  warnings: HashWarning[];
}

/** Files of a repository, listed lazily by base directory, with memoized content digests. */
export class RepoFileIndex {
  readonly rootAbs: string;
  readonly #rootReal: Promise<string>;
  readonly #listings = new Map<string, Promise<ListedFile[]>>();
  readonly #digests = new Map<string, Promise<ContentDigest>>();

  constructor(rootAbs: string) {
    this.rootAbs = rootAbs;
    this.#rootReal = realpath(rootAbs);
  }

  /** Every file under `base` (repo-relative, '' for the root), `.git/` excluded. */
  list(base: string): Promise<ListedFile[]> {
    let listing = this.#listings.get(base);
    if (listing === undefined) {
      listing = this.#walk(base);
      this.#listings.set(base, listing);
    }
    return listing;
  }

  digest(file: ListedFile): Promise<ContentDigest> {
    let digest = this.#digests.get(file.path);
    if (digest === undefined) {
      digest = digestFile(file.abs);
      this.#digests.set(file.path, digest);
    }
    return digest;
  }

  async #walk(base: string): Promise<ListedFile[]> {
    const rootReal = await this.#rootReal;
    const out: ListedFile[] = [];
    const baseAbs = path.join(this.rootAbs, base);
    let baseStat;
    try {
      baseStat = await lstat(baseAbs);
    } catch {
      return out;
    }
    if (baseStat.isSymbolicLink()) {
      out.push(await this.#classify(base, baseAbs, rootReal, false));
      return out;
    }
    const baseReal = await realpath(baseAbs);
    if (!isInside(rootReal, baseReal)) {
      // A parent of the base is a link leading out of the repository.
      throw new InputError(HashErrorCode.hashFilesOutsideRepo, `hashFiles reaches ${base}, which resolves to ${baseReal} outside the repository`, { details: { path: base } });
    }
    if (!baseStat.isDirectory()) {
      if (baseStat.isFile()) out.push({ path: base, abs: baseAbs });
      return out;
    }
    // Depth-first with an explicit stack; symlinked directories are not entered, so no loops.
    const stack: string[] = [base];
    while (stack.length > 0) {
      const rel = stack.pop()!;
      let entries: Dirent[];
      try {
        entries = await readdir(path.join(this.rootAbs, rel), { withFileTypes: true });
      } catch (error) {
        throw new InputError(HashErrorCode.readFailed, `cannot list ${rel || '.'} for hashFiles: ${messageOf(error)}`, { cause: error, details: { path: rel } });
      }
      for (const entry of entries) {
        if (entry.name === EXCLUDED_DIR) continue;
        const childRel = rel === '' ? entry.name : `${rel}/${entry.name}`;
        if (entry.isDirectory()) {
          stack.push(childRel);
        } else if (entry.isFile() || entry.isSymbolicLink()) {
          out.push(await this.#classify(childRel, path.join(this.rootAbs, childRel), rootReal, entry.isFile()));
          if (out.length > MAX_LISTED_FILES) {
            throw new InputError(HashErrorCode.tooManyFiles, `more than ${MAX_LISTED_FILES} files under ${base || 'the repository root'} for hashFiles: narrow the patterns`, {
              details: { limit: MAX_LISTED_FILES },
            });
          }
        }
      }
    }
    return out;
  }

  async #classify(rel: string, abs: string, rootReal: string, plainFile: boolean): Promise<ListedFile> {
    if (plainFile) return { path: rel, abs };
    try {
      const [target, real] = await Promise.all([stat(abs), realpath(abs)]);
      if (!isInside(rootReal, real)) {
        return { path: rel, abs, problem: { code: HashErrorCode.hashFilesOutsideRepo, message: `hashFiles selects ${rel}, a symlink to ${real} outside the repository` } };
      }
      if (!target.isFile()) {
        return { path: rel, abs, problem: { code: HashErrorCode.unsupportedFile, message: `hashFiles selects ${rel}, a symlink to something that is not a file (symlinked directories are not entered; name the real directory)` } };
      }
      return { path: rel, abs };
    } catch (error) {
      return { path: rel, abs, problem: { code: HashErrorCode.symlinkDangling, message: `hashFiles selects ${rel}, a symlink that does not resolve (${errnoOf(error) ?? messageOf(error)})` } };
    }
  }
}

interface ParsedPattern {
  pattern: string;
  negated: boolean;
  base: string;
}

/** Validate and normalize one pattern: relative, inside the root, POSIX separators. */
export function parseHashFilesPattern(raw: unknown): ParsedPattern {
  const refuse = (why: string): never => {
    throw new InputError(HashErrorCode.hashFilesPattern, `hashFiles pattern ${JSON.stringify(raw)} ${why}`, { details: { pattern: raw } });
  };
  if (typeof raw !== 'string' || raw.trim() === '') return refuse('must be a non-empty string');
  if (raw.includes('\0')) return refuse('contains a NUL byte');
  if (raw.includes('\\')) return refuse('contains a backslash: use / as the separator');
  const negated = raw.startsWith('!');
  let pattern = negated ? raw.slice(1) : raw;
  while (pattern.startsWith('./')) pattern = pattern.slice(2);
  if (pattern === '' || pattern.startsWith('/') || /^[A-Za-z]:/.test(pattern)) return refuse('must be relative to the repository root');
  if (pattern.split('/').some((segment) => segment === '..')) return refuse('must not contain `..`: hashFiles stay inside the repository');
  if (pattern.split('/').includes(EXCLUDED_DIR)) return refuse('names .git/, which is never hashed');
  const scan = picomatch.scan(pattern);
  return { pattern, negated, base: scan.isGlob ? scan.base : pattern };
}

/**
 * Resolve `patterns` against the repository and digest the matched files. A file is selected
 * when it matches a positive pattern and no `!`-pattern. A positive pattern that matches nothing
 * is a warning, not an error: the set is hashed as it is (possibly empty).
 */
export async function resolveHashFiles(index: RepoFileIndex, patterns: readonly string[]): Promise<ResolvedHashFiles> {
  const parsed = patterns.map(parseHashFilesPattern);
  const positive = parsed.filter((p) => !p.negated);
  const negative = parsed.filter((p) => p.negated);
  const isExcluded = negative.length === 0 ? () => false : picomatch(negative.map((p) => p.pattern), GLOB_OPTIONS);
  const selected = new Map<string, ListedFile>();
  const warnings: HashWarning[] = [];
  for (const p of positive) {
    const matches = picomatch(p.pattern, GLOB_OPTIONS);
    let count = 0;
    const listed = await index.list(p.base);
    const baseLink = listed.length === 1 && listed[0]!.path === p.base ? listed[0]!.problem : undefined;
    if (baseLink !== undefined && p.base !== p.pattern) {
      // The glob starts below a symlink that cannot be entered: say so rather than "no match".
      throw new InputError(baseLink.code, `hashFiles pattern ${JSON.stringify(p.pattern)}: ${baseLink.message}`, { details: { pattern: p.pattern } });
    }
    for (const file of listed) {
      if (!matches(file.path) || isExcluded(file.path)) continue;
      count++;
      selected.set(file.path, file);
    }
    if (count === 0) {
      warnings.push({ code: 'hashfiles-no-match', path: p.pattern, message: `hashFiles pattern ${JSON.stringify(p.pattern)} matches no file; it adds nothing to the content hash` });
    }
  }
  const ordered = sortEntries([...selected.values()]);
  const digests: { path: string; digest: Buffer }[] = [];
  for (const file of ordered) {
    if (file.problem !== undefined) throw new InputError(file.problem.code, file.problem.message, { details: { path: file.path } });
  }
  const results = await Promise.all(
    ordered.map((file) =>
      index.digest(file).catch((error: unknown) => new InputError(HashErrorCode.readFailed, `cannot read ${file.path} for hashFiles: ${messageOf(error)}`, { cause: error, details: { path: file.path } })),
    ),
  );
  for (const [i, file] of ordered.entries()) {
    const result = results[i]!;
    if (result instanceof InputError) throw result;
    digests.push({ path: file.path, digest: result.digest });
  }
  return { files: ordered.map((f) => f.path), assetDigest: digestEntries(digests), warnings };
}
