// `svc hook install [--force] [--json]`: a pre-commit hook running `svc compile` and staging
// `.svc/svc.lock.json` (see cli/init/pre-commit-hook.ts).
import { realpathSync } from 'node:fs';
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';

export default class HookInstall extends SvcCommand {
  static override description = 'Install a git pre-commit hook that runs `svc compile` and stages .svc/svc.lock.json';
  static override flags = {
    force: Flags.boolean({ description: 'replace a pre-commit hook that svc did not write (kept as pre-commit.svc-backup)' }),
  };

  async run(): Promise<{ path: string; action: string; backup?: string }> {
    const { flags } = await this.parse(HookInstall);
    const [{ findProjectRoot }, { installPreCommitHook }] = await Promise.all([
      import('../../compiler/project-root.ts'),
      import('../../init/pre-commit-hook.ts'),
    ]);
    const { root, found } = findProjectRoot();
    if (!found) throw new InputError('SVC_ERR_COMPILE_SVC_DIR_MISSING', `no .svc/ directory in ${root} or above: run \`svc init\` first`);
    const bin = realpathSync(process.argv[1] ?? '');
    const result = await installPreCommitHook({ cwd: process.cwd(), projectRoot: root, node: process.execPath, bin, force: flags.force });
    if (!this.jsonEnabled()) {
      this.log(`pre-commit hook ${result.action}: ${result.path}`);
      if (result.backup !== undefined) this.log(`the previous hook is kept as ${result.backup}`);
    }
    return result;
  }
}
