// `svc runs show <run_id> [--json]`: a run through the Platform — status, workflow, repository,
// sha, ref, event, lineage, timings, and each job (status, reason, agent, steps with timing).
import { Args } from '@oclif/core';
import type { RunView } from '../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { formatDuration } from '../../../core/durations.ts';

function duration(start: string | null, end: string | null): string {
  if (start === null || end === null) return '';
  const ms = Date.parse(end) - Date.parse(start);
  if (!Number.isFinite(ms) || ms < 0) return '';
  return formatDuration(ms, '');
}

export function formatRun(run: RunView): string[] {
  const out: string[] = [];
  out.push(`run ${run.runId}  ${run.status}${run.reason ? ` (${run.reason})` : ''}`);
  out.push(`  workflow    ${run.workflow}${run.workflowRepository !== run.repository ? ` (from ${run.workflowRepository}@${run.workflowSha.slice(0, 12)})` : ''}`);
  out.push(`  repository  ${run.repository}`);
  out.push(`  ref         ${run.ref ?? '-'} @ ${run.sha}`);
  out.push(`  event       ${run.eventName}${run.actor ? ` by ${run.actor}` : ''}  trust ${run.trustTier}`);
  if (run.parentRunId !== null) {
    out.push(`  re-run of   ${run.parentRunId}${run.originalRunId !== null && run.originalRunId !== run.parentRunId ? ` (original ${run.originalRunId})` : ''}${run.triggeredBy ? ` by ${run.triggeredBy}` : ''}`);
  }
  if (run.cancelledBy !== null) out.push(`  cancelled   by ${run.cancelledBy}`);
  const took = run.durationMs === null ? '' : `  took ${duration('1970-01-01T00:00:00.000Z', new Date(run.durationMs).toISOString())}`;
  out.push(`  created     ${run.createdAt}${run.startedAt ? `  started ${run.startedAt}` : ''}${run.finishedAt ? `  finished ${run.finishedAt}` : ''}${took}`);
  out.push(`  jobs (${run.jobs.length})`);
  for (const j of run.jobs) {
    const took = duration(j.startedAt, j.finishedAt);
    out.push(`    ${j.kind === 'build' ? '[build] ' : ''}${j.displayName}  ${j.status}${took ? `  ${took}` : ''}${j.agentId ? `  agent ${j.agentId}` : ''}${j.reason ? `  (${j.reason})` : ''}`);
    for (const s of j.steps) {
      const stepTook = duration(s.startedAt, s.finishedAt);
      out.push(`      ${s.index + 1}. ${s.name}  ${s.status}${stepTook ? `  ${stepTook}` : ''}${s.reason ? `  (${s.reason})` : ''}`);
    }
  }
  return out;
}

export default class RunsShow extends SvcCommand {
  static override description = 'Show a run through the Platform: status, event, lineage, timings, jobs and steps';
  static override examples = ['<%= config.bin %> runs show 0b7c5b0e-…', '<%= config.bin %> runs show 0b7c5b0e-… --json'];
  static override args = { run_id: Args.string({ required: true, description: 'run id' }) };

  async run(): Promise<RunView> {
    const { args } = await this.parse(RunsShow);
    const { PlatformClient, checkRunIdArg } = await import('../../platform-client.ts');
    const runId = checkRunIdArg(args.run_id);
    const client = await PlatformClient.fromConfig();
    const run = await client.showRun(runId);
    if (!this.jsonEnabled()) for (const line of formatRun(run)) this.log(line);
    return run;
  }
}
