// `svc-admin relay role list <org_id> [--json]`: who holds which role in an org and why (a grant,
// or the group that maps to it), from the relay's database.
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { orgMembers, type OrgMember } from '../../../../kernel/relay/people/admin.ts';
import { databaseUrlFlag, withRelayDatabase } from '../relay-database.ts';

export default class RelayRoleList extends SvcCommand {
  static override description = 'List the people holding a role in an org, with where each role comes from';
  static override examples = ['<%= config.bin %> relay role list acme', '<%= config.bin %> relay role list acme --json'];
  static override args = { org_id: Args.string({ required: true, description: 'the org' }) };
  static override flags = { ...databaseUrlFlag };

  async run(): Promise<{ people: OrgMember[] }> {
    const { args, flags } = await this.parse(RelayRoleList);
    const people = await withRelayDatabase(flags['database-url'], (pool) => orgMembers(pool, args.org_id));
    if (!this.jsonEnabled()) {
      if (people.length === 0) this.log(`nobody holds a role in ${args.org_id}`);
      for (const p of people) {
        this.log(`${p.provider}:${p.login}\t${p.displayName}\t${p.personId}${p.disabled ? '\tDISABLED' : ''}\t${p.roles.map((r) => `${r.role} (${r.source})`).join(', ')}`);
      }
    }
    return { people };
  }
}
