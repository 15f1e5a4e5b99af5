// `svc reject <run_id> [--job <name>] [--comment <text>] [--json]`: rejects a held run through the
// Platform as the token's user (spec "Authentication" 9, the command form of `/svc reject`). A
// rejected workflow hold cancels the run, a job hold cancels the job; the comment becomes part of
// the reason. Exits 1 with the reason when the hold did not count the rejection.
import type { ApprovalResult } from '../../schemas/wire/relay.ts';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { decideThroughPlatform, decisionArgs, decisionFlags } from '../decide-run.ts';

export default class Reject extends SvcCommand {
  static override description = 'Reject a held run (or one job of it) through the Platform, as the logged-in user: the run or job is cancelled';
  static override examples = ['<%= config.bin %> reject 0b7c5b0e-… --comment "not from a fork"', '<%= config.bin %> reject 0b7c5b0e-… --job deploy --json'];
  static override args = decisionArgs;
  static override flags = decisionFlags;

  async run(): Promise<ApprovalResult> {
    const { args, flags } = await this.parse(Reject);
    return decideThroughPlatform(this, 'reject', args.run_id, flags);
  }
}
