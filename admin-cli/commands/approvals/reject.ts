// `svc-admin approvals reject <run_id> --actor <name> [--job <name>] [--comment <text>] [--json]`:
// rejects a held run on the orchestrator database as `--actor` (`via: admin`): a workflow hold
// cancels the run, a job hold cancels the job. Exits 1 with the reason when it does not count.
import { SvcCommand } from '../../../core/cli/base-command.ts';
import type { DecideResult } from '../../../kernel/orchestrator/run-control/approvals.ts';
import { decideAsOperator, decisionArgs, decisionFlags } from './shared.ts';

export default class ApprovalsReject extends SvcCommand {
  static override description = 'Reject a held run (or one job of it) as --actor, on the orchestrator database: the run or job is cancelled';
  static override examples = ['<%= config.bin %> approvals reject 0b7c5b0e-… --actor alice --comment "not this week"'];
  static override args = decisionArgs;
  static override flags = decisionFlags;

  async run(): Promise<DecideResult> {
    const { args, flags } = await this.parse(ApprovalsReject);
    return decideAsOperator(this, 'reject', args.runId, flags);
  }
}
