// The one place where CLI errors become stderr text and exit codes (spec: 0 success,
// 1 failure, 2 usage error).
import { Command } from '@oclif/core';
import { isSvcError, messageOf } from '../errors.ts';

export const USAGE_ERROR_CODE = 'SVC_ERR_CLI_USAGE';

export function exitCodeFor(error: unknown): number {
  if (isSvcError(error)) return error.code === USAGE_ERROR_CODE ? 2 : 1;
  const oclifExit = (error as { oclif?: { exit?: number } } | null)?.oclif?.exit;
  if (typeof oclifExit === 'number') return oclifExit;
  return 1;
}

export abstract class SvcCommand extends Command {
  static override enableJsonFlag = true;

  protected override async catch(error: Error & { exitCode?: number }): Promise<unknown> {
    const code = exitCodeFor(error);
    // oclif's own parse errors (unknown flag, missing arg) are usage errors: keep its text.
    if (!isSvcError(error) && (error as { oclif?: unknown }).oclif !== undefined) {
      return super.catch(error);
    }
    const prefix = isSvcError(error) ? `${error.code}: ` : '';
    process.stderr.write(`${prefix}${messageOf(error)}\n`);
    if (this.jsonEnabled()) {
      process.stdout.write(
        JSON.stringify({ error: { code: isSvcError(error) ? error.code : 'SVC_ERR_INTERNAL', message: messageOf(error) } }) + '\n',
      );
    }
    this.exit(code);
  }
}
