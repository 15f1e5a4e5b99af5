// `svc approve <run_id> [--job <name>] [--comment <text>] [--json]`: approves a held run through
// the Platform as the token's user (spec "Authentication" 9, the command form of `/svc approve`).
// Prints the orchestrator's sentence and the run's status; exits 1 with the reason when the hold
// did not count the approval (not an approver, nothing pending).
import type { ApprovalResult } from '../../schemas/wire/relay.ts';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { decideThroughPlatform, decisionArgs, decisionFlags } from '../decide-run.ts';

export default class Approve extends SvcCommand {
  static override description = 'Approve a held run (or one job of it) through the Platform, as the logged-in user';
  static override examples = [
    '<%= config.bin %> approve 0b7c5b0e-…',
    '<%= config.bin %> approve 0b7c5b0e-… --job deploy --comment "release window open"',
    '<%= config.bin %> approve 0b7c5b0e-… --json',
  ];
  static override args = decisionArgs;
  static override flags = decisionFlags;

  async run(): Promise<ApprovalResult> {
    const { args, flags } = await this.parse(Approve);
    return decideThroughPlatform(this, 'approve', args.run_id, flags);
  }
}
