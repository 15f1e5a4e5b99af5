// `svc-admin runs list [--org <org_id>] [--limit N] [--json]`: newest runs with their jobs.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { listRuns, MAX_RUN_LIST, type RunDetail } from '../../../kernel/orchestrator/runs/queries.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

export default class RunsList extends SvcCommand {
  static override description = 'List the newest runs with their job states (reads the orchestrator database)';
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ description: 'only this org' }),
    limit: Flags.integer({ description: 'how many runs', default: 50, min: 1, max: MAX_RUN_LIST }),
  };

  async run(): Promise<{ runs: RunDetail[] }> {
    const { flags } = await this.parse(RunsList);
    const config = await adminConfig();
    const runs = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => listRuns(pool, { limit: flags.limit, ...(flags.org ? { orgId: flags.org } : {}) }));
    if (!this.jsonEnabled()) {
      if (runs.length === 0) this.log('no runs');
      for (const r of runs) {
        const jobs = r.jobs.map((j) => `${j.displayName}:${j.status}`).join(' ');
        this.log(`${r.runId}  ${r.status.padEnd(9)}  ${r.repository}  ${r.workflow}  ${r.eventName}  ${r.sha.slice(0, 12)}  ${jobs}`);
      }
    }
    return { runs };
  }
}
