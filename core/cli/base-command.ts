// The one place where an oclif command's errors become stderr text and exit codes (the text and
// codes themselves: error-text.ts).
// oclif's subpath, not its index: the index loads help, ux and the rest (~50 modules) on every start.
import { Command } from '@oclif/core/command';
import { isSvcError, messageOf } from '../errors.ts';
import { errorText, exitCodeFor } from './error-text.ts';

export { USAGE_ERROR_CODE, errorText, exitCodeFor } from './error-text.ts';

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
