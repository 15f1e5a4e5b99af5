// The one place where CLI errors become stderr text and exit codes (spec: 0 success,
// 1 failure, 2 usage error).
// oclif's subpath, not its index: the index loads help, ux and the rest (~50 modules) on every start.
import { Command } from '@oclif/core/command';
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

export abstract class SvcCommand extends Command {
  static override enableJsonFlag = true;

  protected override async catch(error: Error & { exitCode?: number }): Promise<unknown> {
    const code = exitCodeFor(error);
    // oclif's own parse errors (unknown flag, missing arg) are usage errors: keep its text.
    if (!isSvcError(error) && (error as { oclif?: unknown }).oclif !== undefined) {
      return super.catch(error);
    }
    process.stderr.write(`${errorText(error)}\n`);
    if (this.jsonEnabled()) {
      process.stdout.write(
        JSON.stringify({ error: { code: isSvcError(error) ? error.code : 'SVC_ERR_INTERNAL', message: messageOf(error) } }) + '\n',
      );
    }
    this.exit(code);
  }
}
