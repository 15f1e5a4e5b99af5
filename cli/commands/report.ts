// `svc report [--days N] [--json]`: a summary of the org's recent runs from the Platform's run
// index (works while the orchestrator is down): runs by status, the failure rate (failed among
// runs that ended completed or failed) and, per workflow, the same with the median duration of
// its ended runs.
import { Flags } from '@oclif/core';
import { DEFAULT_REPORT_DAYS, MAX_REPORT_DAYS, type RunReport } from '../../schemas/http/run-index.ts';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { formatTable } from '../table.ts';
import { formatDuration as formatHumanDuration } from '../../core/durations.ts';

const percent = (rate: number | null) => (rate === null ? '-' : `${(rate * 100).toFixed(1)}%`);
const statuses = (s: Record<string, number>) => Object.entries(s).map(([status, n]) => `${n} ${status}`).join(', ') || '-';

export const formatDuration = (ms: number | null): string => formatHumanDuration(ms, '-');

export default class Report extends SvcCommand {
  static override description = "Summarise the org's recent runs from the Platform's run index: counts by status, failure rate, median duration per workflow";
  static override examples = ['<%= config.bin %> report', '<%= config.bin %> report --days 30 --json'];
  static override flags = {
    days: Flags.integer({ description: `runs created in the last N days (at most ${MAX_REPORT_DAYS})`, default: DEFAULT_REPORT_DAYS, min: 1, max: MAX_REPORT_DAYS }),
  };

  async run(): Promise<RunReport> {
    const { flags } = await this.parse(Report);
    const { PlatformClient } = await import('../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const report = await client.report(flags.days);
    if (!this.jsonEnabled()) {
      this.log(`Runs of ${report.orgId} since ${report.since}: ${report.total} (${statuses(report.statuses)}); failure rate ${percent(report.failureRate)}`);
      if (report.workflows.length > 0) {
        const rows = report.workflows.map((w) => [w.workflow, String(w.total), statuses(w.statuses), percent(w.failureRate), formatDuration(w.medianDurationMs)]);
        for (const line of formatTable(['WORKFLOW', 'RUNS', 'BY STATUS', 'FAILURE RATE', 'MEDIAN DURATION'], rows)) this.log(line);
      }
    }
    return report;
  }
}
