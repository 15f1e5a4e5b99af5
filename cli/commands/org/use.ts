// `svc org use <org>`: the org `svc runs` and other Platform commands act on.
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';

export default class OrgUse extends SvcCommand {
  static override description = 'Choose the org Platform commands act on (stored in the config file)';
  static override examples = ['<%= config.bin %> org use acme'];
  static override args = { org: Args.string({ required: true, description: 'org id' }) };

  async run(): Promise<{ org: string; previous: string | null; configPath: string }> {
    const { args } = await this.parse(OrgUse);
    const { checkOrg, readPlatformConfig, writePlatformConfig } = await import('../../platform-client.ts');
    const org = checkOrg(args.org);
    const existing = await readPlatformConfig();
    const path = await writePlatformConfig({ ...existing, org });
    if (!this.jsonEnabled()) {
      this.log(`now using org ${org}${existing.org !== undefined && existing.org !== org ? ` (was ${existing.org})` : ''}`);
      if (existing.token === undefined) this.log('not logged in yet: run "svc login --token <PAT>"');
    }
    return { org, previous: existing.org ?? null, configPath: path };
  }
}
