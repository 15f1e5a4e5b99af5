// `svc-admin admin-token create --name <n> (--scope <s>... | --unrestricted) [--ttl <d>]`: mints an
// operator admin token and prints it once; only its SHA-256 hash is stored (docs/admin-api.md).
import { userInfo } from 'node:os';
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { ADMIN_SCOPES, createAdminToken } from '../../../kernel/orchestrator/admin-auth/index.ts';
import type { CreatedAdminToken } from '../../../schemas/admin-tokens.ts';
import { adminConfig, databaseFlag, parseDuration, withAgentDatabase } from '../agent-token/shared.ts';
import { audited } from '../audit/shared.ts';

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown';
  }
}

export default class AdminTokenCreate extends SvcCommand {
  static override description = 'Create an admin token for the orchestrator admin API (printed once; send it as Authorization: Bearer <token>)';
  static override examples = [
    '<%= config.bin %> admin-token create --name deploy-bot --scope runs.read --scope events.read --ttl 90d',
    '<%= config.bin %> admin-token create --name break-glass --unrestricted',
  ];
  static override flags = {
    ...databaseFlag,
    name: Flags.string({ description: 'a unique name for the token (who or what uses it)', required: true }),
    scope: Flags.string({ description: `a scope the token holds; repeat for several (${ADMIN_SCOPES.join(', ')})`, multiple: true, default: [] }),
    unrestricted: Flags.boolean({ description: 'every scope, and routes that need a token without scope restrictions (signing keys)', default: false }),
    ttl: Flags.string({ description: 'lifetime, e.g. 90d, 12h (default: no expiry)' }),
    'created-by': Flags.string({ description: 'who creates it, recorded with the token (default: the OS user)' }),
  };

  async run(): Promise<CreatedAdminToken> {
    const { flags } = await this.parse(AdminTokenCreate);
    const config = await adminConfig();
    const ttlMs = flags.ttl === undefined ? undefined : parseDuration(flags.ttl);
    const createdBy = flags['created-by'] ?? `svc-admin:${osUser()}`;
    const created = await withAgentDatabase(config, flags['database-url'], (pool) =>
      audited(pool, { action: 'admin_token.create', target: (t) => `admin-token:${t.id}`, detail: (t) => `${t.name}: ${t.unrestricted ? 'unrestricted' : t.scopes.join(' ')}` }, () =>
        createAdminToken(pool, { name: flags.name, scopes: flags.scope, unrestricted: flags.unrestricted, createdBy, ...(ttlMs === undefined ? {} : { ttlMs }) }),
      ),
    );
    if (!this.jsonEnabled()) {
      this.log(created.token);
      const scopes = created.unrestricted ? 'unrestricted' : `scopes ${created.scopes.join(', ')}`;
      process.stderr.write(`admin token "${created.name}" (${created.id}) created with ${scopes}${created.expiresAt ? `, expires ${created.expiresAt}` : ''}; it is shown only now\n`);
    }
    return created;
  }
}
