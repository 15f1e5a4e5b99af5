// `svc-admin relay pat revoke <id> [--json]`: the token stops working at once.
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { revokePat } from '../../../../kernel/relay/pats/index.ts';
import { databaseUrlFlag, withRelayDatabase } from '../relay-database.ts';
import { auditedAtRelay } from '../../audit/shared.ts';
import { sql } from '../../../../kernel/services/db/index.ts';

export default class RelayPatRevoke extends SvcCommand {
  static override description = 'Revoke a personal access token (by the id "relay pat list" prints)';
  static override examples = ['<%= config.bin %> relay pat revoke 3f0c…'];
  static override args = { id: Args.string({ required: true, description: 'token id' }) };
  static override flags = { ...databaseUrlFlag };

  async run(): Promise<{ id: string; revoked: true; alreadyRevoked: boolean }> {
    const { args, flags } = await this.parse(RelayPatRevoke);
    const result = await withRelayDatabase(flags['database-url'], async (pool) => {
      // The record goes to the token's org (its orchestrator keeps the trail).
      const orgId = /^[0-9a-f-]{36}$/i.test(args.id) ? ((await pool.maybeOneFirst(sql.unsafe`select org_id from relay_pats where id = ${args.id}`)) as string | null) : null;
      if (orgId === null) return revokePat(pool, args.id);
      return auditedAtRelay(pool, { action: 'token.revoke', orgId, target: `token:${args.id}`, detail: (r) => (r.alreadyRevoked ? 'already revoked' : '') }, () => revokePat(pool, args.id));
    });
    if (!this.jsonEnabled()) this.log(result.alreadyRevoked ? `token ${result.id} was already revoked` : `token ${result.id} revoked`);
    return { id: result.id, revoked: true, alreadyRevoked: result.alreadyRevoked };
  }
}
