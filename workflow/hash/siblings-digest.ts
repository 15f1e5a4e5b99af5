// siblingsDigest (spec: Lock file): SHA-256 over the git-tracked source of every in-repo
// package that `.svc/package.json` depends on through `workspace:`, `file:`, `link:` or
// `portal:` (transitively). git runs only when at least one such sibling exists.
import { lstat, readFile, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { InputError, messageOf } from '../../core/errors.ts';
import { HashErrorCode, type HashWarning } from './diagnostics.ts';
import { comparePaths, type DigestEntry, digestContent, digestEntries } from './encoding.ts';
import { mapBounded } from './map-bounded.ts';
import { errnoOf, isInside, resolveInsideRoot, toPosix } from './repo-paths.ts';
import { findWorkspacePackages, type PackageJson, readPackageJson } from './workspace-packages.ts';

const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'] as const;
const PATH_PROTOCOLS = ['file:', 'link:', 'portal:'] as const;
const GIT_TIMEOUT_MS = 30_000;
const READ_CONCURRENCY = 32;

export interface SiblingPackage {
  /** Repo-relative POSIX path of the sibling (a directory, or a tarball for `file:x.tgz`). */
  path: string;
  /** Which package.json asked for it, and how. */
  requiredBy: string;
  dependency: string;
  specifier: string;
}

export interface SiblingsResult {
  /** Lowercase hex; `undefined` when there is no sibling (the lock omits the field). */
  siblingsDigest?: string;
  siblings: SiblingPackage[];
  /** Repo-relative paths digested, in digest order. */
  files: string[];
  warnings: HashWarning[];
}

interface Reference {
  from: string;
  fromDirAbs: string;
  dependency: string;
  specifier: string;
}

/** The lock's `siblingsDigest`, or `undefined` when `.svc/package.json` names no sibling. */
export async function siblingsDigest(repoRoot: string, options: { svcDir?: string } = {}): Promise<string | undefined> {
  return (await computeSiblings(repoRoot, options)).siblingsDigest;
}

export async function computeSiblings(repoRoot: string, options: { svcDir?: string } = {}): Promise<SiblingsResult> {
  const rootAbs = path.resolve(repoRoot);
  const rootReal = await realpath(rootAbs).catch((error: unknown) => {
    throw new InputError(HashErrorCode.svcDirMissing, `repository root ${rootAbs} not found`, { cause: error });
  });
  const svcRel = options.svcDir ?? '.svc';
  const svcAbs = resolveInsideRoot(rootAbs, svcRel, 'the .svc directory');
  const svcReal = await realpath(svcAbs).catch(() => svcAbs);
  const svcPackageName = `${toPosix(path.relative(rootAbs, svcAbs))}/package.json`;
  const svcPackage = await readPackageJson(svcAbs, svcPackageName);
  const result: SiblingsResult = { siblings: [], files: [], warnings: [] };
  if (svcPackage === undefined) return result;

  let workspaces: Promise<Map<string, string>> | undefined;
  // `.svc/` itself counts as visited: a sibling depending back on it is a cycle, not a sibling.
  const visited = new Set<string>([svcReal]);
  const queue: Reference[] = dependencyReferences(svcPackage, svcAbs, svcPackageName);
  while (queue.length > 0) {
    const ref = queue.shift()!;
    const targetAbs = await resolveReference(ref, () => (workspaces ??= findWorkspacePackages(rootAbs)));
    let targetReal: string;
    try {
      targetReal = await realpath(targetAbs);
    } catch (error) {
      throw new InputError(HashErrorCode.siblingNotFound, `${ref.from} depends on ${ref.dependency}@${ref.specifier}, but ${targetAbs} does not exist`, {
        cause: error,
        details: { dependency: ref.dependency, specifier: ref.specifier },
      });
    }
    if (!isInside(rootReal, targetReal)) {
      throw new InputError(
        HashErrorCode.siblingOutsideRepo,
        `${ref.from} depends on ${ref.dependency}@${ref.specifier}, which resolves to ${targetReal} outside the repository ${rootReal}; only in-repo siblings can be hashed — publish it or move it into the repository`,
        { details: { dependency: ref.dependency, specifier: ref.specifier } },
      );
    }
    if (visited.has(targetReal)) continue;
    visited.add(targetReal);
    const rel = toPosix(path.relative(rootReal, targetReal));
    result.siblings.push({ path: rel === '' ? '.' : rel, requiredBy: ref.from, dependency: ref.dependency, specifier: ref.specifier });
    if ((await stat(targetReal)).isDirectory()) {
      const shownAs = rel === '' ? 'package.json' : `${rel}/package.json`;
      const pkg = await readPackageJson(targetReal, shownAs);
      if (pkg !== undefined) queue.push(...dependencyReferences(pkg, targetReal, shownAs));
    }
  }
  if (result.siblings.length === 0) return result;

  result.siblings.sort((a, b) => comparePaths(a.path, b.path));
  const svcPrefix = `${toPosix(path.relative(rootReal, svcReal))}/`;
  const tracked = (await gitTrackedFiles(rootReal, result.siblings.map((s) => s.path))).filter((file) => !file.startsWith(svcPrefix));
  for (const sibling of result.siblings) {
    const prefix = sibling.path === '.' ? '' : `${sibling.path}/`;
    if (!tracked.some((file) => file === sibling.path || file.startsWith(prefix))) {
      result.warnings.push({ code: 'sibling-untracked', path: sibling.path, message: `sibling package ${sibling.path} has no git-tracked file; git add it so its source is part of siblingsDigest` });
    }
  }
  const read = await mapBounded(tracked, READ_CONCURRENCY, (file) => trackedEntry(rootReal, file));
  const entries = read.filter((entry): entry is DigestEntry => entry !== undefined);
  result.siblingsDigest = digestEntries(entries);
  result.files = entries.map((e) => e.path).sort(comparePaths);
  return result;
}

function dependencyReferences(pkg: PackageJson, dirAbs: string, shownAs: string): Reference[] {
  const refs: Reference[] = [];
  for (const field of DEPENDENCY_FIELDS) {
    const deps = pkg[field];
    if (deps === undefined) continue;
    if (typeof deps !== 'object' || deps === null || Array.isArray(deps)) {
      throw new InputError(HashErrorCode.packageJsonInvalid, `${shownAs} ${field} must be an object of name → specifier`, { details: { path: shownAs, field } });
    }
    for (const [dependency, specifier] of Object.entries(deps)) {
      if (typeof specifier !== 'string') {
        throw new InputError(HashErrorCode.packageJsonInvalid, `${shownAs} ${field}.${dependency} must be a string`, { details: { path: shownAs, field, dependency } });
      }
      if (specifier.startsWith('workspace:') || PATH_PROTOCOLS.some((p) => specifier.startsWith(p))) {
        refs.push({ from: shownAs, fromDirAbs: dirAbs, dependency, specifier });
      }
    }
  }
  return refs;
}

/** Absolute path a reference points at (not yet checked for existence or containment). */
async function resolveReference(ref: Reference, workspaces: () => Promise<Map<string, string>>): Promise<string> {
  const pathProtocol = PATH_PROTOCOLS.find((p) => ref.specifier.startsWith(p));
  if (pathProtocol !== undefined) {
    let target = ref.specifier.slice(pathProtocol.length);
    // `file://x` is a URL form some tools write; treat its path part the same way.
    if (target.startsWith('//')) target = target.slice(2);
    if (target === '') throw new InputError(HashErrorCode.packageJsonInvalid, `${ref.from} ${ref.dependency}: ${ref.specifier} names no path`);
    return path.resolve(ref.fromDirAbs, target);
  }
  const rest = ref.specifier.slice('workspace:'.length);
  // Yarn allows `workspace:./packages/a`; the others name a version range.
  if (rest.startsWith('.') || rest.startsWith('/')) return path.resolve(ref.fromDirAbs, rest);
  // pnpm aliases: `workspace:real-name@*` or `workspace:@scope/real-name@^1`.
  const at = rest.indexOf('@', rest.startsWith('@') ? 1 : 0);
  const name = at > 0 ? rest.slice(0, at) : ref.dependency;
  const found = (await workspaces()).get(name);
  if (found === undefined) {
    throw new InputError(
      HashErrorCode.siblingNotFound,
      `${ref.from} depends on ${ref.dependency}@${ref.specifier}, but no workspace package is named ${name} (workspaces come from the root package.json "workspaces" or pnpm-workspace.yaml)`,
      { details: { dependency: ref.dependency, specifier: ref.specifier } },
    );
  }
  return found;
}

/** `git ls-files` for the given repo-relative paths, sorted by byte order; one git process. */
async function gitTrackedFiles(rootReal: string, paths: string[]): Promise<string[]> {
  const pathspecs = paths.map((p) => `:(literal)${p}`);
  let stdout: string;
  try {
    // execa loads only when a workflow has sibling packages to hash, not on every compile.
    const { execa } = await import('execa');
    ({ stdout } = await execa('git', ['ls-files', '-z', '--', ...pathspecs], { cwd: rootReal, timeout: GIT_TIMEOUT_MS, stripFinalNewline: false }));
  } catch (error) {
    const stderr = typeof error === 'object' && error !== null && 'stderr' in error ? String(error.stderr).trim() : '';
    throw new InputError(
      HashErrorCode.siblingsGit,
      `sibling packages are hashed from git-tracked files, but \`git ls-files\` failed in ${rootReal}: ${stderr || messageOf(error)}`,
      { cause: error },
    );
  }
  const files = stdout.split('\0').filter((f) => f !== '');
  return [...new Set(files)].sort(comparePaths);
}

/**
 * Entry for one tracked file, read from the working tree. A symlink contributes its link text
 * (what git stores); a tracked file deleted from the working tree and a submodule are skipped.
 */
async function trackedEntry(rootReal: string, file: string): Promise<DigestEntry | undefined> {
  const abs = path.join(rootReal, file);
  try {
    const info = await lstat(abs);
    if (info.isSymbolicLink()) return { path: file, digest: digestContent(Buffer.from(await readlink(abs), 'utf8')).digest };
    if (!info.isFile()) return undefined;
    return { path: file, digest: digestContent(await readFile(abs)).digest };
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw new InputError(HashErrorCode.readFailed, `cannot read sibling file ${file}: ${messageOf(error)}`, { cause: error, details: { path: file } });
  }
}
