// `svc preview <event> [--branch <name>] [--debug] [--json]`: which workflows and jobs an event
// built from the local checkout would run, and why every other workflow would not.
import { enableCompileCache } from 'node:module';
import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { SvcCommand } from '../../core/cli/base-command.ts';
import type { PreviewResult } from '../preview/preview.ts';

export default class Preview extends SvcCommand {
  static override description =
    'Dry-run trigger matching for an event built from the local git checkout (branch, HEAD, changed files); nothing is written or sent';
  static override examples = [
    '<%= config.bin %> preview push',
    '<%= config.bin %> preview pr --branch main --debug',
    '<%= config.bin %> preview tag:v1.2.0 --json',
    '<%= config.bin %> preview workflow_complete:ci:failed',
    '<%= config.bin %> preview job_complete:ci:test',
    '<%= config.bin %> preview lifecycle:registration.updated',
  ];
  static override args = {
    event: Args.string({
      required: true,
      description:
        'push | pr | pull_request[:<action>] | tag:<name> | release[:<action>] | comment[:<action>] | review[:<state>] | review_comment | dispatch | create | delete | status[:<state>] | fork | star | watch | schedule | event:<name> | webhook:<name> | workflow_run:<workflow>[:<conclusion>|:requested|:in_progress] | workflow_complete:<workflow>[:success|failed|cancelled] | job_complete:<workflow>:<job>[:<status>] | lifecycle:<event>',
    }),
  };
  static override flags = {
    branch: Flags.string({ description: 'branch the event is on (for pr and review events: the base branch)' }),
    debug: Flags.boolean({ description: "print every filter's verdict for every workflow" }),
  };

  async run(): Promise<PreviewResult> {
    const { args, flags } = await this.parse(Preview);
    enableCompileCache();
    const { previewEvent } = await import('../preview/preview.ts');
    const result = await previewEvent({ cwd: process.cwd(), event: args.event, ...(flags.branch === undefined ? {} : { branch: flags.branch }) });
    for (const w of result.warnings) process.stderr.write(`warning: ${w}\n`);
    if (!this.jsonEnabled()) this.print(result, flags.debug);
    return result;
  }

  private print(result: PreviewResult, debug: boolean): void {
    this.log(`event: ${result.label}`);
    const files = result.changedFiles.files;
    this.log(`changed files (vs ${result.changedFiles.base}): ${files === null ? 'unknown' : files.length === 0 ? 'none' : files.length <= 5 ? files.join(', ') : `${files.slice(0, 5).join(', ')} and ${files.length - 5} more`}`);
    if (result.matched.length === 0) this.log('no workflow matches');
    for (const m of result.matched) {
      this.log(`match    ${m.workflow}  via ${m.trigger}`);
      this.log(`         jobs: ${[...m.jobs, ...m.dynamicJobs.map((j) => `${j} (dynamic)`)].join(', ') || '(none)'}`);
      if (debug) this.printVerdicts(m.verdicts);
    }
    for (const u of result.unmatched) {
      this.log(`${u.verdict === 'indeterminate' ? 'undecided' : 'no match'} ${u.workflow}: ${u.reason}`);
      if (debug) this.printVerdicts(u.verdicts);
    }
  }

  private printVerdicts(verdicts: PreviewResult['matched'][number]['verdicts']): void {
    for (const v of verdicts) this.log(`           ${`${v.triggerType}#${v.trigger}`.padEnd(16)} ${v.filter.padEnd(13)} ${v.verdict.padEnd(13)} ${v.detail}`);
  }
}
