// Entry points of the compiler's hashing. `svc compile` makes one TreeHasher per repository so
// the `.svc/` tree is walked and hashed once however many workflows it holds; each workflow
// then only adds its hashFiles (themselves memoized per file).
import path from 'node:path';
import { COMPILE_SCHEMA_VERSION } from './compile-schema-version.ts';
import { contentHash } from './content-hash.ts';
import type { HashWarning } from './diagnostics.ts';
import { RepoFileIndex, resolveHashFiles } from './hash-files.ts';
import { realDirectory, resolveInsideRoot } from './repo-paths.ts';
import { computeTreeDigest, type TreeDigestResult, type TreeFile } from './tree-digest.ts';

export { COMPILE_SCHEMA_VERSION } from './compile-schema-version.ts';
export { contentHash } from './content-hash.ts';
export { HashErrorCode, type HashWarning, type HashWarningCode } from './diagnostics.ts';
export { BINARY_SNIFF_BYTES, comparePaths, digestContent, digestEntries, isBinary, normalizeLineEndings } from './encoding.ts';
export { parseHashFilesPattern, RepoFileIndex, resolveHashFiles, type ResolvedHashFiles } from './hash-files.ts';
export { detectLockfile, type DetectedLockfile, lockfileHash, type PackageManager } from './lockfile-hash.ts';
export { computeSiblings, type SiblingPackage, type SiblingsResult, siblingsDigest } from './siblings-digest.ts';
export {
  createSvcignoreMatcher,
  DEFAULT_SVCIGNORE,
  DEFAULT_SVCIGNORE_PATTERNS,
  loadSvcignore,
  LOCK_FILE,
  SVCIGNORE_FILE,
  type SvcignoreMatcher,
} from './svcignore.ts';
export { computeTreeDigest, MAX_TREE_FILES, type TreeDigestResult, type TreeFile } from './tree-digest.ts';

export interface HashWorkflowTreeOptions {
  /** Repository root (absolute, or relative to the working directory). */
  repoRoot: string;
  /** The workflow directory relative to `repoRoot`; default `.svc`. */
  svcDir?: string;
  /** The workflow's `hashFiles` globs, relative to `repoRoot`. */
  hashFiles?: readonly string[];
}

export interface WorkflowTreeHash {
  /** Lowercase hex over the covered files of `.svc/`. */
  treeDigest: string;
  /** The workflow entry's `contentHash` (lowercase hex, no prefix). */
  contentHash: string;
  compileSchemaVersion: number;
  /** Present when `hashFiles` was declared (non-empty): lowercase hex over the resolved files. */
  assetDigest?: string;
  /** Present when `hashFiles` was declared: the lock's `resolvedHashFiles`, sorted. */
  resolvedHashFiles?: string[];
  /** Tree warnings (symlinks, `.svcignore`) then this workflow's hashFiles warnings. */
  warnings: HashWarning[];
  /** Covered files of `.svc/`, for `--verbose`. */
  files: TreeFile[];
  /** Followed symlinks under `.svc/` (drift errors name them). */
  symlinks: string[];
}

export interface TreeHasher {
  readonly repoRoot: string;
  readonly svcDirAbs: string;
  /** The `.svc/` tree digest, computed on first call and shared afterwards. */
  tree(): Promise<TreeDigestResult>;
  /** contentHash of one workflow of this tree. */
  hashWorkflow(hashFiles?: readonly string[]): Promise<WorkflowTreeHash>;
}

export function createTreeHasher(options: { repoRoot: string; svcDir?: string }): TreeHasher {
  const repoRoot = path.resolve(options.repoRoot);
  const svcDirAbs = resolveInsideRoot(repoRoot, options.svcDir ?? '.svc', 'the .svc directory');
  let treePromise: Promise<TreeDigestResult> | undefined;
  let index: RepoFileIndex | undefined;
  const tree = (): Promise<TreeDigestResult> => {
    treePromise ??= realDirectory(repoRoot, 'the repository root').then(() => computeTreeDigest(svcDirAbs));
    return treePromise;
  };
  return {
    repoRoot,
    svcDirAbs,
    tree,
    async hashWorkflow(hashFiles?: readonly string[]): Promise<WorkflowTreeHash> {
      const treeResult = await tree();
      const base = {
        treeDigest: treeResult.treeDigest,
        compileSchemaVersion: COMPILE_SCHEMA_VERSION,
        files: treeResult.files,
        symlinks: treeResult.symlinks,
      };
      if (hashFiles === undefined || hashFiles.length === 0) {
        return { ...base, contentHash: contentHash(treeResult.treeDigest), warnings: [...treeResult.warnings] };
      }
      index ??= new RepoFileIndex(repoRoot);
      const assets = await resolveHashFiles(index, hashFiles);
      return {
        ...base,
        contentHash: contentHash(treeResult.treeDigest, assets.assetDigest),
        assetDigest: assets.assetDigest,
        resolvedHashFiles: assets.files,
        warnings: [...treeResult.warnings, ...assets.warnings],
      };
    },
  };
}

/** One-shot form: hash the tree and one workflow's hashFiles. */
export async function hashWorkflowTree(options: HashWorkflowTreeOptions): Promise<WorkflowTreeHash> {
  const hasher = createTreeHasher(options.svcDir === undefined ? { repoRoot: options.repoRoot } : { repoRoot: options.repoRoot, svcDir: options.svcDir });
  return hasher.hashWorkflow(options.hashFiles);
}
