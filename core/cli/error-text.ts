// How a CLI error reads and exits (spec: 0 success, 1 failure, 2 usage error), without oclif:
// the oclif commands (base-command.ts) and the fast path of `svc compile`/`svc preview`
// (cli/fast-path.ts, which never loads oclif) share it.
import { RateLimitedError, isSvcError, messageOf } from '../errors.ts';

export const USAGE_ERROR_CODE = 'SVC_ERR_CLI_USAGE';

export function exitCodeFor(error: unknown): number {
  if (isSvcError(error)) return error.code === USAGE_ERROR_CODE ? 2 : 1;
  const oclifExit = (error as { oclif?: { exit?: number } } | null)?.oclif?.exit;
  if (typeof oclifExit === 'number') return oclifExit;
  return 1;
}

/** The stderr line for an error: `CODE: message`, and when to retry a rate-limited request. */
export function errorText(error: unknown): string {
  const prefix = isSvcError(error) ? `${error.code}: ` : '';
  const message = messageOf(error);
  const hint = error instanceof RateLimitedError && !/\bretry in\b/i.test(message) ? ` (retry in ${Math.ceil(error.retryAfterSeconds)} s)` : '';
  return `${prefix}${message}${hint}`;
}
