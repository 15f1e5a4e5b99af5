// Paths a provider's `readFile` accepts: repository-relative, plain segments. A path comes from a
// lock file (a trigger's `requires`), i.e. from the repository being built, so it is checked
// before it reaches git's command line or a URL: no leading `/` or `-`, no `.`/`..`/empty
// segments, no backslash or control characters.
import { InputError } from '../../../core/errors.ts';

/** Largest file `readFile` returns (content requirements read small files). */
export const MAX_READ_FILE_BYTES = 4 * 1024 * 1024;

export function checkRepositoryPath(path: unknown): string {
  const fail = (why: string): never => {
    throw new InputError('SVC_ERR_PROVIDER_PATH_INVALID', `file path ${JSON.stringify(String(path).slice(0, 200))} is not a repository-relative path: ${why}`);
  };
  if (typeof path !== 'string' || path.length === 0) return fail('it is empty');
  if (path.length > 4096) return fail('it is longer than 4096 characters');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(path)) return fail('it holds a control character or a backslash');
  if (path.startsWith('/')) return fail('it is absolute');
  if (path.startsWith('-')) return fail('it starts with "-"');
  if (path.split('/').some((s) => s === '' || s === '.' || s === '..')) return fail('it has an empty, "." or ".." segment');
  return path;
}
