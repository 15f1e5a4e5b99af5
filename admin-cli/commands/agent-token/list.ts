// `svc-admin agent-token list`: id, state, created, expires, description (never the token).
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { listAgentTokens, type AgentTokenSummary } from '../../../kernel/orchestrator/dispatch/tokens.ts';
import { adminConfig, databaseFlag, withAgentDatabase } from './shared.ts';

export default class AgentTokenList extends SvcCommand {
  static override description = 'List agent tokens (id, state, created, expires, description)';
  static override flags = { ...databaseFlag };

  async run(): Promise<{ tokens: AgentTokenSummary[] }> {
    const { flags } = await this.parse(AgentTokenList);
    const tokens = await withAgentDatabase(await adminConfig(), flags['database-url'], listAgentTokens);
    if (!this.jsonEnabled()) {
      if (tokens.length === 0) this.log('no agent tokens');
      for (const t of tokens) this.log(`${t.id}  ${t.state.padEnd(7)}  ${t.createdAt}  ${t.expiresAt ?? 'never'}  ${t.description}`);
    }
    return { tokens };
  }
}
