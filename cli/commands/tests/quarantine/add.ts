// `svc tests quarantine add <name> --reason <why> [--suite <s>] [--repository <owner/name>]`:
// the test's failures stop failing its jobs (they are still recorded and shown).
import type { TestsAnswer } from '../../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { quarantineArgs, quarantineFlags } from './change.ts';

export default class QuarantineAdd extends SvcCommand {
  static override description = "Quarantine a test: its failures are shown but no longer fail its job";
  static override examples = ['<%= config.bin %> tests quarantine add "retries the upload" --suite uploads --repository acme/app --reason "flaky: #123"'];
  static override args = quarantineArgs;
  static override flags = quarantineFlags;

  async run(): Promise<TestsAnswer> {
    const { args, flags } = await this.parse(QuarantineAdd);
    const { PlatformClient } = await import('../../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const answer = await client.changeQuarantine({ action: 'add', name: args.name, suite: flags.suite, reason: flags.reason, ...(flags.repository === undefined ? {} : { repository: flags.repository }) });
    if (this.jsonEnabled()) return answer;
    if (answer.view === 'quarantine.add') this.log(`quarantined ${answer.entry.suite === '' ? '' : `${answer.entry.suite} › `}${answer.entry.name} in ${answer.entry.repository ?? 'the whole org'} (by ${answer.entry.addedBy})`);
    return answer;
  }
}
