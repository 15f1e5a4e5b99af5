// `svc tests quarantine remove <name> --reason <why> [--suite <s>] [--repository <owner/name>]`:
// the test leaves quarantine; the entry stays in the list with who took it out, when and why.
import type { TestsAnswer } from '../../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { quarantineArgs, quarantineFlags } from './change.ts';

export default class QuarantineRemove extends SvcCommand {
  static override description = 'Take a test out of quarantine: its failures fail its job again';
  static override examples = ['<%= config.bin %> tests quarantine remove "retries the upload" --suite uploads --repository acme/app --reason "fixed in #124"'];
  static override args = quarantineArgs;
  static override flags = quarantineFlags;

  async run(): Promise<TestsAnswer> {
    const { args, flags } = await this.parse(QuarantineRemove);
    const { PlatformClient } = await import('../../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const answer = await client.changeQuarantine({ action: 'remove', name: args.name, suite: flags.suite, reason: flags.reason, ...(flags.repository === undefined ? {} : { repository: flags.repository }) });
    if (this.jsonEnabled()) return answer;
    if (answer.view === 'quarantine.remove') this.log(`${answer.entry.suite === '' ? '' : `${answer.entry.suite} › `}${answer.entry.name} left quarantine in ${answer.entry.repository ?? 'the whole org'} (by ${answer.entry.removedBy ?? '?'})`);
    return answer;
  }
}
