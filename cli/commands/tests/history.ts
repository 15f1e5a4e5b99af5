// `svc tests history <name> [--suite <suite>] [--repository <owner/name>] [--limit N] [--json]`:
// one test's last results across runs, its failure rate and median duration, the commits it
// was flaky on and its quarantine record (docs/test-results.md).
import { Args, Flags } from '@oclif/core';
import type { TestsAnswer } from '../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { historyLines } from './format.ts';

export default class TestsHistory extends SvcCommand {
  static override description = "Show one test's history: last results, failure rate, median duration, flakiness, quarantine";
  static override examples = ['<%= config.bin %> tests history "adds two numbers" --suite math'];
  static override args = { name: Args.string({ description: 'the test name (as its JUnit testcase or TAP point names it)', required: true }) };
  static override flags = {
    suite: Flags.string({ description: 'the suite (JUnit testsuite, TAP parent subtests joined by " > ")' }),
    repository: Flags.string({ description: 'only this repository (owner/name)' }),
    limit: Flags.integer({ description: 'how many results (at most 1000)', default: 100, min: 1, max: 1000 }),
  };

  async run(): Promise<TestsAnswer> {
    const { args, flags } = await this.parse(TestsHistory);
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const query = new URLSearchParams({ view: 'history', name: args.name, limit: String(flags.limit) });
    if (flags.suite !== undefined) query.set('suite', flags.suite);
    if (flags.repository !== undefined) query.set('repository', flags.repository);
    const answer = await client.tests(query.toString());
    if (this.jsonEnabled()) return answer;
    for (const line of answer.view === 'history' ? historyLines(answer.history) : []) this.log(line);
    return answer;
  }
}
