// `svc tests failed [--repository <owner/name>] [--limit N] [--json]`: the org's most recent test
// failures, newest first, with their run, job and message (docs/test-results.md).
import { Flags } from '@oclif/core';
import type { TestsAnswer } from '../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { failureLines } from './format.ts';

export default class TestsFailed extends SvcCommand {
  static override description = 'Show the most recent failed tests';
  static override examples = ['<%= config.bin %> tests failed', '<%= config.bin %> tests failed --repository acme/app --json'];
  static override flags = {
    repository: Flags.string({ description: 'only this repository (owner/name)' }),
    limit: Flags.integer({ description: 'how many (at most 1000)', default: 50, min: 1, max: 1000 }),
  };

  async run(): Promise<TestsAnswer> {
    const { flags } = await this.parse(TestsFailed);
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const answer = await client.tests(new URLSearchParams({ view: 'failed', limit: String(flags.limit), ...(flags.repository === undefined ? {} : { repository: flags.repository }) }).toString());
    if (this.jsonEnabled()) return answer;
    for (const line of answer.view === 'failed' ? failureLines(answer.results) : []) this.log(line);
    return answer;
  }
}
