// `svc-admin runs logs <run_id> [--job <id|name>] [--step <n>] [--json]`: the stored log lines of
// a run (masked by the agent before they were stored), read from the orchestrator database.
// `--step` picks a step by index; a negative index counts from the end (`--step=-1`: the last
// step). A run with several jobs needs `--job` to pick a step.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { readRunLogs, type RunLogs } from '../../../kernel/orchestrator/runs/step-logs.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

export default class RunsLogs extends SvcCommand {
  static override description = 'Print the stored log lines of a run, one job or one step (--step=-1: the last step)';
  static override examples = ['<%= config.bin %> runs logs 3f2a…', '<%= config.bin %> runs logs 3f2a… --job test --step=-1'];
  static override args = { runId: Args.string({ required: true, description: 'run id' }) };
  static override flags = {
    ...databaseFlag,
    job: Flags.string({ description: 'job id, display name or name' }),
    step: Flags.integer({ description: 'step index in the job; negative counts from the end (-1 is the last step)' }),
  };

  async run(): Promise<RunLogs> {
    const { args, flags } = await this.parse(RunsLogs);
    const config = await adminConfig();
    const logs = await withDatabase(databaseUrl(config, flags['database-url']), (pool) =>
      readRunLogs(pool, args.runId, { ...(flags.job !== undefined ? { job: flags.job } : {}), ...(flags.step !== undefined ? { step: flags.step } : {}) }),
    );
    if (!this.jsonEnabled()) {
      let heading = '';
      for (const line of logs.lines) {
        const next = `== ${line.job} / ${line.step || '(no step)'}`;
        if (next !== heading) this.log((heading = next));
        this.log(line.text);
      }
      if (logs.lines.length === 0) {
        const what = logs.step !== null ? `step ${logs.step.index} (${logs.step.name})` : logs.job !== null ? `job ${logs.job.displayName}` : `run ${logs.runId}`;
        process.stderr.write(`no log lines stored for ${what} (run status ${logs.status})\n`);
      }
    }
    return logs;
  }
}
