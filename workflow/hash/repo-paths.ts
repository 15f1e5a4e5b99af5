// Path helpers shared by the hashing modules: containment checks on real paths and POSIX
// relative paths (the form every digest records).
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { InputError } from '../../core/errors.ts';
import { HashErrorCode } from './diagnostics.ts';

/** True when `child` is `parent` or lies below it (both absolute, already resolved). */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export function toPosix(relPath: string): string {
  return path.sep === '/' ? relPath : relPath.split(path.sep).join('/');
}

/** Real path of an existing directory, or an InputError naming what was expected there. */
export async function realDirectory(absPath: string, what: string): Promise<string> {
  let real: string;
  try {
    real = await realpath(absPath);
  } catch (error) {
    throw new InputError(HashErrorCode.svcDirMissing, `${what} not found at ${absPath}: run \`svc init\` or pass the right directory`, {
      cause: error,
      details: { path: absPath },
    });
  }
  if (!(await stat(real)).isDirectory()) {
    throw new InputError(HashErrorCode.svcDirMissing, `${what} at ${absPath} is not a directory`, { details: { path: absPath } });
  }
  return real;
}

/**
 * Resolve `rel` (the `.svc` directory name, usually) against the repository root, refusing
 * anything that would leave the root.
 */
export function resolveInsideRoot(rootAbs: string, rel: string, what: string): string {
  const abs = path.resolve(rootAbs, rel);
  if (!isInside(rootAbs, abs)) {
    throw new InputError(HashErrorCode.pathOutsideRepo, `${what} ${JSON.stringify(rel)} is outside the repository root ${rootAbs}`, {
      details: { path: rel },
    });
  }
  return abs;
}

export function errnoOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}
