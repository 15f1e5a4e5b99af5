// `svc tests [--run <run_id>] [--repository <owner/name>] [--json]`: a run's tests (counts, the
// steps that reported, its failures), or without --run the org's most recent test failures.
// Subcommands: failed, flaky, history <name>, quarantine add|remove|list (docs/test-results.md).
import { Flags } from '@oclif/core';
import type { TestsAnswer } from '../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { failureLines, runLines } from './format.ts';

export default class Tests extends SvcCommand {
  static override description = "Show a run's test results, or the org's recent test failures (subcommands: failed, flaky, history, quarantine)";
  static override examples = ['<%= config.bin %> tests --run 5b0c…', '<%= config.bin %> tests failed --json', '<%= config.bin %> tests history "adds two numbers"'];
  static override flags = {
    run: Flags.string({ description: 'a run id: that run\'s tests' }),
    repository: Flags.string({ description: 'only this repository (owner/name)' }),
  };

  async run(): Promise<TestsAnswer> {
    const { flags } = await this.parse(Tests);
    const { PlatformClient, checkRunIdArg } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const answer = flags.run !== undefined ? await client.runTests(checkRunIdArg(flags.run)) : await client.tests(new URLSearchParams({ view: 'failed', ...(flags.repository === undefined ? {} : { repository: flags.repository }) }).toString());
    if (this.jsonEnabled()) return answer;
    const lines = answer.view === 'run' ? runLines(answer.run) : answer.view === 'failed' ? failureLines(answer.results) : [];
    for (const line of lines) this.log(line);
    return answer;
  }
}
