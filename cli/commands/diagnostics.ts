// `svc diagnostics [--json]`: an environment report to paste into a bug report (cli/diagnostics.ts):
// versions, OS, the config file and which settings are set, Platform reachability and identity,
// git, and the repository's .svc/ state (the doctor checks). Every secret is redacted. Exit 0:
// the report is the result, whatever it says.
import { SvcCommand } from '../../core/cli/base-command.ts';
import type { DiagnosticsReport } from '../diagnostics.ts';

export default class Diagnostics extends SvcCommand {
  static override description = 'Print an environment report for bug reports (versions, config, Platform reachability, git, .svc/ state); secrets redacted';
  static override examples = ['<%= config.bin %> diagnostics', '<%= config.bin %> diagnostics --json > diagnostics.json'];

  async run(): Promise<DiagnosticsReport> {
    await this.parse(Diagnostics);
    const { collectDiagnostics, formatDiagnostics } = await import('../diagnostics.ts');
    const report = await collectDiagnostics(process.cwd());
    if (!this.jsonEnabled()) for (const line of formatDiagnostics(report)) this.log(line);
    return report;
  }
}
