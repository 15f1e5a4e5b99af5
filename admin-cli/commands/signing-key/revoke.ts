// `svc-admin signing-key revoke <kid> --reason <text>`: the key leaves the JWKS; everything it
// signed stops verifying.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { revokeSigningKey } from '../../../kernel/orchestrator/identity/key-store.ts';
import type { SigningKeySummary } from '../../../schemas/identity.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from './shared.ts';

export default class SigningKeyRevoke extends SvcCommand {
  static override description = 'Revoke a compromised signing key (removed from the JWKS)';
  // A kid is a base64url thumbprint and may start with '-': put it after `--`.
  static override examples = ['<%= config.bin %> signing-key revoke --reason "key leaked" -- <kid>'];
  static override args = { kid: Args.string({ required: true, description: "key id (after `--` when it starts with '-')" }) };
  static override flags = { ...databaseFlag, reason: Flags.string({ required: true, description: 'why the key is revoked' }) };

  async run(): Promise<SigningKeySummary> {
    const { args, flags } = await this.parse(SigningKeyRevoke);
    const config = await adminConfig();
    const key = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) => revokeSigningKey(pool, args.kid, flags.reason));
    this.log(`${key.kid} revoked`);
    return key;
  }
}
