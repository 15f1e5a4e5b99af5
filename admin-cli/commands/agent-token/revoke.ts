// `svc-admin agent-token revoke <id>`: agents using the token are refused from their next
// connection on (close code 4001; they do not retry).
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { revokeAgentToken, type AgentTokenSummary } from '../../../kernel/orchestrator/dispatch/tokens.ts';
import { adminConfig, databaseFlag, withAgentDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class AgentTokenRevoke extends SvcCommand {
  static override description = 'Revoke an agent token';
  static override args = { id: Args.string({ required: true, description: 'token id (from agent-token list)' }) };
  static override flags = { ...databaseFlag };

  async run(): Promise<AgentTokenSummary> {
    const { args, flags } = await this.parse(AgentTokenRevoke);
    const revoked = await withAgentDatabase(await adminConfig(), flags['database-url'], (pool) => audited(pool, { action: 'agent_token.revoke', target: `agent-token:${args.id}` }, () => revokeAgentToken(pool, args.id)));
    if (!this.jsonEnabled()) this.log(`agent token ${revoked.id} revoked at ${revoked.revokedAt}`);
    return revoked;
  }
}
