// `svc-admin relay pat list [--org <org_id>] [--json]`: personal access tokens (never the tokens).
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { listPats, type PatSummary } from '../../../../kernel/relay/pats/index.ts';
import { databaseUrlFlag, withRelayDatabase } from '../relay-database.ts';

export default class RelayPatList extends SvcCommand {
  static override description = 'List personal access tokens: id, org, user, created, last used, revoked';
  static override examples = ['<%= config.bin %> relay pat list --org acme --json'];
  static override flags = { ...databaseUrlFlag, org: Flags.string({ description: 'only tokens of this org' }) };

  async run(): Promise<{ tokens: PatSummary[] }> {
    const { flags } = await this.parse(RelayPatList);
    const tokens = await withRelayDatabase(flags['database-url'], (pool) => listPats(pool, flags.org));
    if (!this.jsonEnabled()) {
      if (tokens.length === 0) this.log('no tokens');
      for (const p of tokens) {
        this.log(`${p.id}\t${p.orgId}\t${p.user}${p.name ? ` (${p.name})` : ''}\tcreated=${p.createdAt}\tlast-used=${p.lastUsedAt ?? 'never'}${p.expiresAt ? `\texpires=${p.expiresAt}` : ''}${p.revokedAt ? `\trevoked=${p.revokedAt}` : ''}`);
      }
    }
    return { tokens };
  }
}
