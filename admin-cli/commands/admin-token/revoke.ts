// `svc-admin admin-token revoke <id|name>`: the token is refused from its next request on (401
// SVC_ERR_ADMIN_TOKEN_REVOKED).
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { revokeAdminToken } from '../../../kernel/orchestrator/admin-auth/index.ts';
import type { AdminTokenSummary } from '../../../schemas/admin-tokens.ts';
import { adminConfig, databaseFlag, withAgentDatabase } from '../agent-token/shared.ts';
import { audited } from '../audit/shared.ts';

export default class AdminTokenRevoke extends SvcCommand {
  static override description = 'Revoke an admin token';
  static override args = { token: Args.string({ required: true, description: 'token id or the name of a live token (from admin-token list)' }) };
  static override flags = { ...databaseFlag };

  async run(): Promise<AdminTokenSummary> {
    const { args, flags } = await this.parse(AdminTokenRevoke);
    const revoked = await withAgentDatabase(await adminConfig(), flags['database-url'], (pool) => audited(pool, { action: 'admin_token.revoke', target: (t) => `admin-token:${t.id}`, detail: (t) => t.name }, () => revokeAdminToken(pool, args.token)));
    if (!this.jsonEnabled()) this.log(`admin token "${revoked.name}" (${revoked.id}) revoked at ${revoked.revokedAt}`);
    return revoked;
  }
}
