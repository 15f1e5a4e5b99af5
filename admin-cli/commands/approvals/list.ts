// `svc-admin approvals list [--run <run_id>] [--pending] [--limit N] [--json]`: approval holds,
// newest first, with level, job, context, status, outcome, expiry and every vote (ignored ones
// with their reason). Reads the orchestrator database.
import { Flags } from '@oclif/core';
import type { ApprovalHoldView } from '../../../schemas/http/approvals.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { DEFAULT_APPROVAL_LIST_LIMIT, listApprovalHolds, MAX_APPROVAL_LIST_LIMIT } from '../../../kernel/orchestrator/runs/approval-holds.ts';
import { adminConfig, checkRunId, databaseFlag, databaseUrl, holdLines, withDatabase } from './shared.ts';

export default class ApprovalsList extends SvcCommand {
  static override description = 'List approval holds with their votes, newest first (reads the orchestrator database)';
  static override examples = ['<%= config.bin %> approvals list --pending', '<%= config.bin %> approvals list --run 0b7c5b0e-… --json'];
  static override flags = {
    ...databaseFlag,
    run: Flags.string({ description: 'only the holds of this run' }),
    pending: Flags.boolean({ description: 'only holds still waiting for a decision', default: false }),
    limit: Flags.integer({ description: 'how many holds', default: DEFAULT_APPROVAL_LIST_LIMIT, min: 1, max: MAX_APPROVAL_LIST_LIMIT }),
  };

  async run(): Promise<{ holds: ApprovalHoldView[] }> {
    const { flags } = await this.parse(ApprovalsList);
    const runId = flags.run === undefined ? undefined : checkRunId(flags.run);
    const config = await adminConfig();
    const holds = await withDatabase(databaseUrl(config, flags['database-url']), (pool) =>
      listApprovalHolds(pool, { ...(runId === undefined ? {} : { runId }), pendingOnly: flags.pending, limit: flags.limit }),
    );
    if (!this.jsonEnabled()) {
      if (holds.length === 0) this.log(flags.pending ? 'no pending approval holds' : 'no approval holds');
      for (const h of holds) for (const line of holdLines(h)) this.log(line);
      if (holds.length === flags.limit) this.log(`… the first ${flags.limit} (narrow with --run/--pending or raise --limit to see more)`);
    }
    return { holds };
  }
}
