// `svc-admin approvals approve <run_id> --actor <name> [--job <name>] [--comment <text>] [--json]`:
// approves a held run on the orchestrator database as `--actor` (`via: admin`), for an operator
// without a relay. The hold's approval rule still decides whether the approval counts; exits 1
// with the reason when it does not.
import { SvcCommand } from '../../../core/cli/base-command.ts';
import type { DecideResult } from '../../../kernel/orchestrator/run-control/approvals.ts';
import { decideAsOperator, decisionArgs, decisionFlags } from './shared.ts';

export default class ApprovalsApprove extends SvcCommand {
  static override description = 'Approve a held run (or one job of it) as --actor, on the orchestrator database';
  static override examples = ['<%= config.bin %> approvals approve 0b7c5b0e-… --actor alice', '<%= config.bin %> approvals approve 0b7c5b0e-… --actor alice --job deploy --comment "window open"'];
  static override args = decisionArgs;
  static override flags = decisionFlags;

  async run(): Promise<DecideResult> {
    const { args, flags } = await this.parse(ApprovalsApprove);
    return decideAsOperator(this, 'approve', args.runId, flags);
  }
}
