// `svc-admin relay pat create <org_id> --user <name> [--name <label>] [--json]`: mints a personal
// access token for the developer CLI (`svc login --token`), scoped to the org. Printed once.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { createPat, type CreatedPat } from '../../../../kernel/relay/pats/index.ts';
import { databaseUrlFlag, withRelayDatabase } from '../relay-database.ts';
import { auditedAtRelay } from '../../audit/shared.ts';

export default class RelayPatCreate extends SvcCommand {
  static override description = 'Create a personal access token for an org (shown once; give it to the developer for "svc login --token")';
  static override examples = ['<%= config.bin %> relay pat create acme --user alice', '<%= config.bin %> relay pat create acme --user ci-bot --name "nightly reports" --json'];
  static override args = { org_id: Args.string({ required: true, description: 'org id the token may act on' }) };
  static override flags = {
    ...databaseUrlFlag,
    user: Flags.string({ required: true, description: 'who the token is for (recorded as triggered_by / cancelled_by)' }),
    name: Flags.string({ description: 'a label to tell tokens apart', default: '' }),
  };

  async run(): Promise<CreatedPat> {
    const { args, flags } = await this.parse(RelayPatCreate);
    const created = await withRelayDatabase(flags['database-url'], (pool) =>
      auditedAtRelay(pool, { action: 'token.create', orgId: args.org_id, target: (p) => `token:${p.id}`, detail: (p) => `for ${p.user}` }, () => createPat(pool, args.org_id, flags.user, flags.name)),
    );
    if (!this.jsonEnabled()) {
      this.log(`token ${created.id} for ${created.user} in org ${created.orgId} created; the token (shown only now):`);
      this.log(created.token);
    }
    return created;
  }
}
