// `svc-admin agent-token create [--description <text>] [--ttl <duration>]`: mints an agent token
// and prints it once; only its SHA-256 hash is stored.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { createAgentToken, type CreatedAgentToken } from '../../../kernel/orchestrator/dispatch/tokens.ts';
import { adminConfig, databaseFlag, parseDuration, withAgentDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class AgentTokenCreate extends SvcCommand {
  static override description = 'Create an agent token (printed once; agents send it as Authorization: Bearer <token>)';
  static override examples = ['<%= config.bin %> agent-token create --description "build farm" --ttl 90d'];
  static override flags = {
    ...databaseFlag,
    description: Flags.string({ description: 'what the token is for', default: '' }),
    ttl: Flags.string({ description: 'lifetime, e.g. 90d, 12h (default: SVC_AGENT_TOKEN_TTL_MS, else no expiry)' }),
  };

  async run(): Promise<CreatedAgentToken> {
    const { flags } = await this.parse(AgentTokenCreate);
    const config = await adminConfig();
    const ttlMs = flags.ttl !== undefined ? parseDuration(flags.ttl) : config.agentTokenTtlMs;
    const created = await withAgentDatabase(config, flags['database-url'], (pool) =>
      audited(pool, { action: 'agent_token.create', target: (t) => `agent-token:${t.id}` }, () => createAgentToken(pool, { description: flags.description, ...(ttlMs === undefined ? {} : { ttlMs }) })),
    );
    if (!this.jsonEnabled()) {
      this.log(created.token);
      process.stderr.write(`agent token ${created.id} created${created.expiresAt ? `, expires ${created.expiresAt}` : ''}; it is shown only now\n`);
    }
    return created;
  }
}
