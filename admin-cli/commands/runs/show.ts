// `svc-admin runs show <run_id> [--json]`: one run, its workflow origin and its jobs.
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { getRunDetail, type RunDetail } from '../../../kernel/orchestrator/runs/queries.ts';
import { NotFoundError } from '../../../core/errors.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

export default class RunsShow extends SvcCommand {
  static override description = 'Show one run: event, trust, workflow origin and jobs (reads the orchestrator database)';
  static override args = { runId: Args.string({ required: true, description: 'run id' }) };
  static override flags = { ...databaseFlag };

  async run(): Promise<RunDetail> {
    const { args, flags } = await this.parse(RunsShow);
    const config = await adminConfig();
    const run = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => getRunDetail(pool, args.runId));
    if (run === null) throw new NotFoundError('SVC_ERR_RUN_NOT_FOUND', `no run ${args.runId}; list runs with "svc-admin runs list"`);
    if (!this.jsonEnabled()) {
      this.log(`run ${run.runId}  ${run.status}${run.reason ? ` (${run.reason})` : ''}`);
      this.log(`  org ${run.orgId}  repository ${run.repository}  ${run.ref ?? ''} @ ${run.sha}`);
      this.log(`  workflow ${run.workflow} from ${run.workflowRepoIdentifier}@${run.workflowSha}${run.workflowBranch ? ` (${run.workflowBranch})` : ''}`);
      this.log(`  event ${run.eventName}  trust ${run.trustTier}  fork ${run.isFork}${run.workflowModified ? '  workflows modified by head' : ''}`);
      for (const j of run.jobs) this.log(`  ${j.kind === 'build' ? '[build] ' : ''}${j.displayName}: ${j.status}${j.needs.length ? ` (needs ${j.needs.join(', ')})` : ''}`);
    }
    return run;
  }
}
