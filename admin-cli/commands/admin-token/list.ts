// `svc-admin admin-token list`: id, state, name, scopes, created, expires, last used (never the token).
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { listAdminTokens } from '../../../kernel/orchestrator/admin-auth/index.ts';
import type { AdminTokenSummary } from '../../../schemas/admin-tokens.ts';
import { adminConfig, databaseFlag, withAgentDatabase } from '../agent-token/shared.ts';

export default class AdminTokenList extends SvcCommand {
  static override description = 'List admin tokens (id, state, name, scopes, created, expires, last used)';
  static override flags = { ...databaseFlag };

  async run(): Promise<{ tokens: AdminTokenSummary[] }> {
    const { flags } = await this.parse(AdminTokenList);
    const tokens = await withAgentDatabase(await adminConfig(), flags['database-url'], listAdminTokens);
    if (!this.jsonEnabled()) {
      if (tokens.length === 0) this.log('no admin tokens');
      for (const t of tokens) {
        const scopes = t.unrestricted ? 'unrestricted' : t.scopes.join(',');
        this.log(`${t.id}  ${t.state.padEnd(7)}  ${t.name}  ${scopes}  created ${t.createdAt} by ${t.createdBy}  expires ${t.expiresAt ?? 'never'}  last used ${t.lastUsedAt ?? 'never'}`);
      }
    }
    return { tokens };
  }
}
