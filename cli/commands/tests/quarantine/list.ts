// `svc tests quarantine list [--repository <owner/name>] [--all] [--json]`: the quarantined tests
// with who put them there, when and why; --all also lists the ones that left, and who took them out.
import { Flags } from '@oclif/core';
import type { TestsAnswer } from '../../../../schemas/wire/relay.ts';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { quarantineLines } from '../format.ts';

export default class QuarantineList extends SvcCommand {
  static override description = 'List quarantined tests (--all: also those that left quarantine)';
  static override examples = ['<%= config.bin %> tests quarantine list', '<%= config.bin %> tests quarantine list --all --json'];
  static override flags = {
    repository: Flags.string({ description: 'entries for this repository (owner/name) and the org-wide ones' }),
    all: Flags.boolean({ description: 'also entries that left quarantine', default: false }),
  };

  async run(): Promise<TestsAnswer> {
    const { flags } = await this.parse(QuarantineList);
    const { PlatformClient } = await import('../../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const answer = await client.tests(new URLSearchParams({ view: 'quarantine', ...(flags.all ? { all: 'true' } : {}), ...(flags.repository === undefined ? {} : { repository: flags.repository }) }).toString());
    if (this.jsonEnabled()) return answer;
    for (const line of answer.view === 'quarantine' ? quarantineLines(answer.entries) : []) this.log(line);
    return answer;
  }
}
