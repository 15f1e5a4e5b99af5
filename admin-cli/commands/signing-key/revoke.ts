// `svc-admin signing-key revoke <kid> --reason <text> [--compromised-at <time>]`: the key leaves
// the JWKS; everything it signed stops verifying, except, with --compromised-at, signatures a
// trusted TSA dated before that time (docs/provenance.md, "Signed timestamps").
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { revokeSigningKey } from '../../../kernel/orchestrator/identity/key-store.ts';
import type { SigningKeySummary } from '../../../schemas/identity.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

export default class SigningKeyRevoke extends SvcCommand {
  static override description = 'Revoke a compromised signing key (removed from the JWKS)';
  // A kid is a base64url thumbprint and may start with '-': put it after `--`.
  static override examples = [
    '<%= config.bin %> signing-key revoke --reason "key leaked" -- <kid>',
    '<%= config.bin %> signing-key revoke --reason "host breached" --compromised-at 2026-05-01T12:00:00Z -- <kid>',
  ];
  static override args = { kid: Args.string({ required: true, description: "key id (after `--` when it starts with '-')" }) };
  static override flags = {
    ...databaseFlag,
    reason: Flags.string({ required: true, description: 'why the key is revoked' }),
    'compromised-at': Flags.string({
      description: 'ISO 8601 time from which the key is known to be compromised: signatures timestamped before it stay verifiable (default: none do)',
    }),
  };

  async run(): Promise<SigningKeySummary> {
    const { args, flags } = await this.parse(SigningKeyRevoke);
    const at = flags['compromised-at'];
    // Date.parse alone takes "5" or "May 1"; a compromise time must be written unambiguously.
    const compromisedAt = at === undefined ? undefined : new Date(ISO_TIME.test(at) ? at : Number.NaN);
    if (compromisedAt !== undefined && Number.isNaN(compromisedAt.getTime())) {
      throw new InputError(USAGE_ERROR_CODE, `--compromised-at ${at} is not an ISO 8601 time with a zone (e.g. 2026-05-01T12:00:00Z)`);
    }
    const config = await adminConfig();
    const key = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'signing_key.revoke', target: `key:${args.kid}`, detail: () => flags.reason ?? '' }, () =>
        revokeSigningKey(pool, args.kid, flags.reason, compromisedAt === undefined ? {} : { compromisedAt }),
      ),
    );
    this.log(key.compromisedAt ? `${key.kid} revoked; signatures timestamped before ${key.compromisedAt} stay verifiable` : `${key.kid} revoked`);
    return key;
  }
}
