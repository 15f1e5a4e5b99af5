// Error helpers shared by the database service. Codes are stable: SVC_ERR_DB_<WHAT>.
import { InputError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';

/** A result row did not match the schema its query declared (a bug or a schema drift). */
export class DatabaseRowError extends SvcError {}

/** A connection URL with its password replaced, safe for logs and error messages. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '<unparseable database URL>';
  }
}

/** The database cannot be reached: say where and what to check. */
export function unavailableError(url: string, cause: unknown): UnavailableError {
  return new UnavailableError(
    'SVC_ERR_DB_UNAVAILABLE',
    `cannot connect to PostgreSQL at ${redactUrl(url)}: ${messageOf(cause)}. ` +
      'Check the database URL (SVC_DATABASE_URL) and that the server is running and reachable.',
    { cause },
  );
}

/** `postgres://` or `postgresql://` with a host, or a clear refusal. */
export function checkDatabaseUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch (cause) {
    throw new InputError('SVC_ERR_DB_URL_INVALID', 'the database URL is not a valid URL (expected postgres://user:password@host:port/database)', {
      cause,
    });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new InputError(
      'SVC_ERR_DB_URL_INVALID',
      `the database URL must start with postgres:// or postgresql:// (got ${parsed.protocol}//)`,
    );
  }
  return parsed;
}

/**
 * A unique violation (SQLSTATE 23505), as the driver or slonik (which wraps it, the driver's
 * error as its cause) reports it.
 */
export function isUniqueViolation(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== null && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    if ((e as { code?: unknown }).code === '23505') return true;
  }
  return false;
}
