// `svc tests flaky [--repository <owner/name>] [--limit N] [--json]`: tests that passed and
// failed on the same commit, with the runs of each outcome as evidence (docs/test-results.md).
import { Flags } from '@oclif/core';
import type { TestsAnswer } from '../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { flakyLines } from './format.ts';

export default class TestsFlaky extends SvcCommand {
  static override description = 'Show flaky tests: passed and failed on the same commit, with the runs as evidence';
  static override examples = ['<%= config.bin %> tests flaky', '<%= config.bin %> tests flaky --json'];
  static override flags = {
    repository: Flags.string({ description: 'only this repository (owner/name)' }),
    limit: Flags.integer({ description: 'how many (at most 1000)', default: 50, min: 1, max: 1000 }),
  };

  async run(): Promise<TestsAnswer> {
    const { flags } = await this.parse(TestsFlaky);
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const answer = await client.tests(new URLSearchParams({ view: 'flaky', limit: String(flags.limit), ...(flags.repository === undefined ? {} : { repository: flags.repository }) }).toString());
    if (this.jsonEnabled()) return answer;
    for (const line of answer.view === 'flaky' ? flakyLines(answer.tests) : []) this.log(line);
    return answer;
  }
}
