// `svc runs rerun <run_id> [--failed] [--json]`: a re-run through the Platform (the dashboard's
// Re-run button). `--failed` restarts from the failed jobs: only the jobs that did not complete,
// and the jobs that need them, run again; the others are reused with their outputs
// (docs/run-states.md "Restart from failed jobs"). Refused within 5 s of the previous re-run.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';

export default class RunsRerun extends SvcCommand {
  static override description = 'Re-run a run through the Platform; --failed runs only its failed and cancelled jobs and what needs them';
  static override examples = ['<%= config.bin %> runs rerun 0b7c5b0e-…', '<%= config.bin %> runs rerun 0b7c5b0e-… --failed --json'];
  static override args = { run_id: Args.string({ required: true, description: 'run id' }) };
  static override flags = {
    failed: Flags.boolean({ description: 'restart from the failed jobs: reuse the jobs that completed and their outputs', default: false }),
  };

  async run(): Promise<{ runId: string; newRunId: string; failedOnly: boolean }> {
    const { args, flags } = await this.parse(RunsRerun);
    const { PlatformClient, checkRunIdArg } = await import('../../platform-client.ts');
    const runId = checkRunIdArg(args.run_id);
    const client = await PlatformClient.fromConfig();
    const { newRunId } = await client.rerunRun(runId, { failed: flags.failed });
    if (!this.jsonEnabled()) this.log(`${flags.failed ? 'restart from failed jobs' : 're-run'} of ${runId} started as ${newRunId}`);
    return { runId, newRunId, failedOnly: flags.failed };
  }
}
