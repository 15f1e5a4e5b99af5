// `svc-admin signing-key retire <kid>`: retiring → retired (its public half stays in the JWKS).
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { retireSigningKey } from '../../../kernel/orchestrator/identity/key-store.ts';
import type { SigningKeySummary } from '../../../schemas/identity.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class SigningKeyRetire extends SvcCommand {
  static override description = 'Retire a retiring signing key (it stays in the JWKS)';
  // A kid is a base64url thumbprint and may start with '-': put it after `--`.
  static override examples = ['<%= config.bin %> signing-key retire -- <kid>'];
  static override args = { kid: Args.string({ required: true, description: "key id (after `--` when it starts with '-')" }) };
  static override flags = { ...databaseFlag };

  async run(): Promise<SigningKeySummary> {
    const { args, flags } = await this.parse(SigningKeyRetire);
    const config = await adminConfig();
    const key = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) => audited(pool, { action: 'signing_key.retire', target: `key:${args.kid}` }, () => retireSigningKey(pool, args.kid)));
    this.log(`${key.kid} retired`);
    return key;
  }
}
