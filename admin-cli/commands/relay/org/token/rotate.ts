// `svc-admin relay org token rotate <org_id>`: replaces an org's platform token; the old one
// stops working for new connections at once.
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../../../core/cli/base-command.ts';
import { rotateOrgToken, type ProvisionedOrg } from '../../../../../kernel/relay/index.ts';
import { databaseUrlFlag, withRelayDatabase } from '../../relay-database.ts';

export default class RelayOrgTokenRotate extends SvcCommand {
  static override description = "Replace an org's platform token and print the new one (shown once)";
  static override examples = ['<%= config.bin %> relay org token rotate acme --json'];
  static override args = { org_id: Args.string({ required: true, description: 'org id' }) };
  static override flags = { ...databaseUrlFlag };

  async run(): Promise<ProvisionedOrg> {
    const { args, flags } = await this.parse(RelayOrgTokenRotate);
    const rotated = await withRelayDatabase(flags['database-url'], (pool) => rotateOrgToken(pool, args.org_id));
    if (!this.jsonEnabled()) {
      this.log(`org ${rotated.orgId}: new platform token (shown only now; the old one no longer connects):`);
      this.log(rotated.token);
    }
    return rotated;
  }
}
