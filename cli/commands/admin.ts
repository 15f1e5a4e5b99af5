// `svc admin [args…]`: a thin front for the operator CLI: runs `svc-admin` with the arguments as
// given, its standard streams inherited, and exits with its exit code. svc-admin is looked up as
// $SVC_ADMIN_BIN when set, else the svc-admin of this same package, else on PATH; when none is
// there the error says so. Every argument is svc-admin's, `--help` too (`svc admin runs list
// --help` is svc-admin's help of `runs list`): cli/main.ts puts them after a `--`, which is
// dropped. `svc admin --help` alone is this command's help; `svc admin -- --help` svc-admin's.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { UnavailableError, messageOf } from '../../core/errors.ts';
import { packageRoot } from '../../core/package-info.ts';

/** The command and leading arguments that start svc-admin. */
export function adminCommand(env: NodeJS.ProcessEnv = process.env): { file: string; args: string[] } {
  const explicit = env['SVC_ADMIN_BIN'];
  if (explicit !== undefined && explicit !== '') return { file: explicit, args: [] };
  const root = packageRoot();
  const sibling = import.meta.url.endsWith('.ts') ? join(root, 'bin', 'svc-admin.ts') : join(root, 'dist', 'bin', 'svc-admin.js');
  if (existsSync(sibling)) return { file: process.execPath, args: [sibling] };
  return { file: 'svc-admin', args: [] };
}

export default class Admin extends SvcCommand {
  static override description = 'Run the operator CLI svc-admin with these arguments (same output and exit code)';
  static override examples = [
    '<%= config.bin %> admin signing-key list',
    '<%= config.bin %> admin runs show 0b7c5b0e-… --json',
    '<%= config.bin %> admin rotate-key --help   # the operator command\'s help',
    '<%= config.bin %> admin -- --help           # svc-admin\'s own help',
  ];
  static override strict = false;
  // --json belongs to svc-admin here.
  static override enableJsonFlag = false;

  async run(): Promise<void> {
    // Not this.parse: every flag, known to svc or not, is svc-admin's.
    const args = this.argv.filter((a, i) => !(i === 0 && a === '--'));
    const { execa } = await import('execa');
    const { file, args: lead } = adminCommand();
    let exitCode: number | undefined;
    try {
      const result = await execa(file, [...lead, ...args], { stdio: 'inherit', reject: false });
      if (result.failed && result.exitCode === undefined) throw result;
      exitCode = result.exitCode;
    } catch (error) {
      const reason = (error as { code?: string }).code === 'ENOENT' ? `${file} was not found` : messageOf(error);
      throw new UnavailableError('SVC_ERR_CLI_ADMIN_NOT_INSTALLED', `svc-admin is not installed (${reason}); install the svc package that ships it, or run svc-admin where it is`);
    }
    if (exitCode !== 0) this.exit(exitCode ?? 1);
  }
}
