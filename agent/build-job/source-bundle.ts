// The source bundle: exactly the files the workflow content hash covers (the compiler's own tree
// walk, so `.svcignore` — `node_modules/` and the rest — excludes the same paths, and symlinks
// are bundled as their targets, as they are hashed), the workflow's `hashFiles`, and the lock
// files a job needs to start (`.svc/svc.lock.json`, `.svc/package-lock.json` for an inline
// install). The files are staged in a scratch directory first, so the staged tree can be hashed
// again (what is bundled is what is hashed) and local runs can bundle a lock compiled in memory.
import { copyFile, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { computeTreeDigest, LOCK_FILE, RepoFileIndex, resolveHashFiles } from '../../workflow/hash/index.ts';
import { InputError, messageOf } from '../../core/errors.ts';
import { listTree, writeTarball, type TarballResult } from './tarball.ts';

export const PACKAGE_LOCK = 'package-lock.json';

export interface SourceBundleOptions {
  /** Repository root (a checkout or a working tree); the workflow directory is `<repoRoot>/.svc`. */
  repoRoot: string;
  /** Scratch directory owned by the caller: the staged tree and the tarball go here. */
  workDir: string;
  /** The workflow's `hashFiles` patterns (repo-relative); their files are bundled too. */
  hashFiles?: readonly string[];
  /** Replaces `.svc/svc.lock.json` (a local run bundles the lock it compiled in memory). */
  lockText?: string;
}

export interface SourceBundle extends TarballResult {
  /** The staged tree that was bundled (repository layout: `.svc/…` plus hashFiles). */
  stageDir: string;
  /** Repo-relative paths of the bundled files, sorted. */
  files: string[];
}

const errno = (error: unknown): string | undefined => (error as { code?: unknown } | null)?.code as string | undefined;

async function copyInto(srcRoot: string, stageDir: string, rel: string): Promise<void> {
  const dest = join(stageDir, rel);
  await mkdir(dirname(dest), { recursive: true });
  // copyFile follows symlinks: a link is bundled as its target, as it is hashed.
  await copyFile(join(srcRoot, rel), dest);
}

export async function bundleSource(options: SourceBundleOptions): Promise<SourceBundle> {
  const stageDir = join(options.workDir, 'stage');
  await rm(stageDir, { recursive: true, force: true });
  await mkdir(stageDir, { recursive: true });
  const svcAbs = join(options.repoRoot, '.svc');
  const tree = await computeTreeDigest(svcAbs);
  const files = new Set(tree.files.map((f) => `.svc/${f.path}`));
  if (options.hashFiles !== undefined && options.hashFiles.length > 0) {
    const assets = await resolveHashFiles(new RepoFileIndex(options.repoRoot), options.hashFiles);
    for (const file of assets.files) files.add(file);
  }
  for (const rel of files) {
    try {
      await copyInto(options.repoRoot, stageDir, rel);
    } catch (error) {
      throw new InputError('SVC_ERR_BUILD_BUNDLE', `cannot bundle ${rel}: ${messageOf(error)}`, { cause: error });
    }
  }
  const lockRel = `.svc/${LOCK_FILE}`;
  if (options.lockText !== undefined) {
    await writeFile(join(stageDir, lockRel), options.lockText);
  } else {
    try {
      await copyInto(options.repoRoot, stageDir, lockRel);
    } catch (error) {
      if (errno(error) === 'ENOENT') throw new InputError('SVC_ERR_BUILD_NO_LOCK', 'the tree has no .svc/svc.lock.json: run `svc compile` and commit it');
      throw error;
    }
  }
  files.add(lockRel);
  const packageLock = `.svc/${PACKAGE_LOCK}`;
  if (!files.has(packageLock)) {
    try {
      await copyInto(options.repoRoot, stageDir, packageLock);
      files.add(packageLock);
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw new InputError('SVC_ERR_BUILD_BUNDLE', `cannot bundle ${packageLock}: ${messageOf(error)}`, { cause: error });
    }
  }
  const entries = await listTree(stageDir, (await readdir(stageDir)).sort());
  const tarball = await writeTarball(stageDir, entries, join(options.workDir, 'source.tar.gz'));
  return { ...tarball, stageDir, files: [...files].sort() };
}
