// `svc preview <event> [--branch <name>] [--debug] [--json]`: which workflows and jobs an event
// built from the local checkout would run, and why every other workflow would not. The work is
// cli/preview/preview-command.ts (shared with the fast path, cli/fast-path.ts).
import * as Args from '@oclif/core/args';
import * as Flags from '@oclif/core/flags';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { runPreview } from '../preview/preview-command.ts';
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
    return runPreview({ event: args.event, branch: flags.branch, debug: flags.debug }, { log: (line) => this.log(line), json: this.jsonEnabled() });
  }
}
