// lockfileHash (spec: Lock file): the dependency cache key, `<manager>:<sha256 hex>` of the
// package manager's lockfile. Precedence when several exist: `.svc/package-lock.json` (npm;
// `.svc/` is its own project), then repo-root `pnpm-lock.yaml`, then repo-root `yarn.lock`.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { InputError, messageOf } from '../../core/errors.ts';
import { HashErrorCode } from './diagnostics.ts';
import { digestContent } from './encoding.ts';
import { errnoOf, resolveInsideRoot } from './repo-paths.ts';

export type PackageManager = 'npm' | 'pnpm' | 'yarn';

export interface DetectedLockfile {
  manager: PackageManager;
  /** Path relative to the repository root (POSIX). */
  path: string;
  /** `<manager>:<lowercase hex>`. */
  lockfileHash: string;
}

/** Candidates in precedence order; `svc` marks a path inside `.svc/`. */
const CANDIDATES: readonly { manager: PackageManager; file: string; inSvcDir: boolean }[] = [
  { manager: 'npm', file: 'package-lock.json', inSvcDir: true },
  { manager: 'pnpm', file: 'pnpm-lock.yaml', inSvcDir: false },
  { manager: 'yarn', file: 'yarn.lock', inSvcDir: false },
];

/**
 * Find and hash the lockfile. The content is hashed with the tree digest's rules (CRLF→LF
 * unless binary) so that a Windows checkout yields the same key. `undefined` when none exists.
 */
export async function detectLockfile(repoRoot: string, options: { svcDir?: string } = {}): Promise<DetectedLockfile | undefined> {
  const rootAbs = path.resolve(repoRoot);
  const svcRel = options.svcDir ?? '.svc';
  const svcAbs = resolveInsideRoot(rootAbs, svcRel, 'the .svc directory');
  for (const candidate of CANDIDATES) {
    const abs = path.join(candidate.inSvcDir ? svcAbs : rootAbs, candidate.file);
    let content: Buffer;
    try {
      content = await readFile(abs);
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') continue;
      throw new InputError(HashErrorCode.readFailed, `cannot read lockfile ${abs}: ${messageOf(error)}`, { cause: error, details: { path: abs } });
    }
    const rel = path.relative(rootAbs, abs).split(path.sep).join('/');
    return { manager: candidate.manager, path: rel, lockfileHash: `${candidate.manager}:${digestContent(content).digest.toString('hex')}` };
  }
  return undefined;
}

/** The lock's `lockfileHash` field, or `undefined` (field omitted) when there is no lockfile. */
export async function lockfileHash(repoRoot: string, options: { svcDir?: string } = {}): Promise<string | undefined> {
  return (await detectLockfile(repoRoot, options))?.lockfileHash;
}
