// `svc run`: for now only the retired form `svc run local` is answered (usage error, exit 2).
// `svc run <event> --local` and `svc run remote` are added by their own commands later.
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../framework/base-command.ts';
import { InputError, SvcError } from '../../kernel/services/errors.ts';

export default class Run extends SvcCommand {
  static override description = 'Run a workflow for an event: `svc run <event> --local` on this machine, `svc run remote` on the orchestrator';
  static override strict = false;
  static override args = { event: Args.string({ description: 'event to simulate (push, pr, tag:<name>, …) or `remote`' }) };
  static override flags = {
    local: Flags.boolean({ description: 'run on this machine as an ephemeral agent' }),
    debug: Flags.boolean({ description: 'print matching and step details' }),
  };

  async run(): Promise<void> {
    const { args } = await this.parse(Run);
    if (args.event === 'local') {
      throw new InputError(USAGE_ERROR_CODE, '`svc run local` is retired: use `svc run <event> --local` (for example `svc run push --local`)');
    }
    if (args.event === undefined) {
      throw new InputError(USAGE_ERROR_CODE, 'name an event: `svc run <event> --local` (for example `svc run push --local`) or `svc run remote`');
    }
    throw new SvcError('SVC_ERR_CLI_NOT_AVAILABLE', `\`svc run ${args.event}\` is not available in this build yet; preview the match with \`svc preview ${args.event}\``);
  }
}
