// `svc-admin relay role grant <org_id> <person> <role>`: gives a person a role in an org
// (docs/roles.md). The person is an id or `<provider>:<login>`, and exists after their first
// sign-in through a provider. Granting a held role changes nothing and says so.
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { grant } from '../../../../kernel/relay/people/admin.ts';
import { databaseUrlFlag, withRelayDatabase } from '../relay-database.ts';
import { auditedAtRelay } from '../../audit/shared.ts';

export default class RelayRoleGrant extends SvcCommand {
  static override description = 'Give a person a role in an org: viewer, developer, approver or admin';
  static override examples = ['<%= config.bin %> relay role grant acme corp:alice approver', '<%= config.bin %> relay role grant acme 3f0c…-uuid admin --json'];
  static override args = {
    org_id: Args.string({ required: true, description: 'the org' }),
    person: Args.string({ required: true, description: 'a person id, or <provider>:<login> ("relay role list" prints both)' }),
    role: Args.string({ required: true, description: 'viewer, developer, approver or admin' }),
  };
  static override flags = { ...databaseUrlFlag };

  async run(): Promise<{ personId: string; role: string; changed: boolean }> {
    const { args, flags } = await this.parse(RelayRoleGrant);
    const result = await withRelayDatabase(flags['database-url'], (pool) =>
      auditedAtRelay(pool, { action: 'role.grant', orgId: args.org_id, target: (r) => `person:${r.personId}`, person: (r) => r.personId, detail: (r) => `role ${r.role}${r.changed ? '' : ' (already held)'}` }, () => grant(pool, args.org_id, args.person, args.role, 'svc-admin')),
    );
    if (!this.jsonEnabled()) this.log(result.changed ? `${args.person} is now ${result.role} in ${args.org_id}` : `${args.person} already had the ${result.role} grant in ${args.org_id}; nothing changed`);
    return result;
  }
}
