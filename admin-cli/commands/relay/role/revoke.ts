// `svc-admin relay role revoke <org_id> <person> <role>`: takes back a role an admin granted
// (docs/roles.md). A role that comes from a group stays while the group maps to it.
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { revoke } from '../../../../kernel/relay/people/admin.ts';
import { databaseUrlFlag, withRelayDatabase } from '../relay-database.ts';
import { auditedAtRelay } from '../../audit/shared.ts';

export default class RelayRoleRevoke extends SvcCommand {
  static override description = 'Take back a role granted to a person in an org (roles from groups change at the provider)';
  static override examples = ['<%= config.bin %> relay role revoke acme corp:alice approver'];
  static override args = {
    org_id: Args.string({ required: true, description: 'the org' }),
    person: Args.string({ required: true, description: 'a person id, or <provider>:<login>' }),
    role: Args.string({ required: true, description: 'viewer, developer, approver or admin' }),
  };
  static override flags = { ...databaseUrlFlag };

  async run(): Promise<{ personId: string; role: string; changed: boolean }> {
    const { args, flags } = await this.parse(RelayRoleRevoke);
    const result = await withRelayDatabase(flags['database-url'], (pool) =>
      auditedAtRelay(pool, { action: 'role.revoke', orgId: args.org_id, target: (r) => `person:${r.personId}`, person: (r) => r.personId, detail: (r) => `role ${r.role}${r.changed ? '' : ' (was not granted)'}` }, () => revoke(pool, args.org_id, args.person, args.role)),
    );
    if (!this.jsonEnabled()) this.log(result.changed ? `${args.person} no longer has the ${result.role} grant in ${args.org_id}` : `${args.person} had no ${result.role} grant in ${args.org_id}; nothing changed`);
    return result;
  }
}
