// `svc-admin relay org create <org_id>`: creates an org at the relay and prints its platform
// token, the only time it can be read (the relay keeps its SHA-256).
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { provisionOrg, type ProvisionedOrg } from '../../../../kernel/relay/index.ts';
import { databaseUrlFlag, withRelayDatabase } from '../relay-database.ts';

export default class RelayOrgCreate extends SvcCommand {
  static override description = "Create an org at the relay and print its platform token (shown once; set it as the orchestrator's SVC_PLATFORM_TOKEN)";
  static override examples = ['<%= config.bin %> relay org create acme --database-url postgres://relay@db/relay', 'SVC_RELAY_DATABASE_URL=... <%= config.bin %> relay org create acme --json'];
  static override args = { org_id: Args.string({ required: true, description: 'org id (letters, digits, ".", "_", "-")' }) };
  static override flags = { ...databaseUrlFlag };

  async run(): Promise<ProvisionedOrg> {
    const { args, flags } = await this.parse(RelayOrgCreate);
    const created = await withRelayDatabase(flags['database-url'], (pool) => provisionOrg(pool, args.org_id));
    if (!this.jsonEnabled()) {
      this.log(`org ${created.orgId} created; its platform token (shown only now):`);
      this.log(created.token);
    }
    return created;
  }
}
