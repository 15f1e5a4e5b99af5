// `svc-admin relay org list`: orgs known to the relay, with registered sources and buffered deliveries.
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { listOrgs, type OrgSummary } from '../../../../kernel/relay/index.ts';
import { databaseUrlFlag, withRelayDatabase } from '../relay-database.ts';

export default class RelayOrgList extends SvcCommand {
  static override description = 'List the orgs at the relay (never their tokens)';
  static override examples = ['<%= config.bin %> relay org list --json'];
  static override flags = { ...databaseUrlFlag };

  async run(): Promise<{ orgs: OrgSummary[] }> {
    const { flags } = await this.parse(RelayOrgList);
    const orgs = await withRelayDatabase(flags['database-url'], (pool) => listOrgs(pool));
    if (!this.jsonEnabled()) {
      if (orgs.length === 0) this.log('no orgs');
      for (const o of orgs) this.log(`${o.orgId}\tsources=${o.sources}\tbuffered=${o.buffered}\tcreated=${o.createdAt}${o.tokenRotatedAt ? `\trotated=${o.tokenRotatedAt}` : ''}`);
    }
    return { orgs };
  }
}
