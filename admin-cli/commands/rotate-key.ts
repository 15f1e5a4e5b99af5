// `svc-admin rotate-key`: re-encrypt every master-key-wrapped store under the current master key
// (SVC_SECRET_KEY), opening rows with it or the previous one (SVC_SECRET_KEY_OLD). Every row,
// not only active ones. Prints `Re-encrypted N provenance signing keys.`,
// `Re-encrypted N secrets.` (secret contexts' values) and `Re-encrypted N run-status webhook
// secrets.` (docs/forge-status.md).
import { SvcCommand } from '../../core/cli/base-command.ts';
import { resealSigningKeys } from '../../kernel/orchestrator/identity/key-store.ts';
import { resealSecrets } from '../../kernel/orchestrator/secrets/index.ts';
import { resealStatusWebhooks } from '../../kernel/orchestrator/forge-status/index.ts';
import { loadMasterKeys } from '../../kernel/services/crypto/master-keys.ts';
import { InputError } from '../../core/errors.ts';
import { USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from './signing-key/shared.ts';

export default class RotateKey extends SvcCommand {
  static override description = 'Re-encrypt every master-key-wrapped store under the current master key';
  static override flags = { ...databaseFlag };

  async run(): Promise<{ signingKeys: number; secrets: number; statusWebhooks: number }> {
    const { flags } = await this.parse(RotateKey);
    const config = await adminConfig();
    const keys = await loadMasterKeys(config.secrets);
    if (!keys.current) throw new InputError(USAGE_ERROR_CODE, 'set the new master key as SVC_SECRET_KEY and the previous one as SVC_SECRET_KEY_OLD');
    const result = await withDatabase(databaseUrlOf(config, flags['database-url']), async (pool) => ({
      signingKeys: await resealSigningKeys(pool, keys, 'all'),
      secrets: await resealSecrets(pool, keys, 'all'),
      statusWebhooks: await resealStatusWebhooks(pool, keys, 'all'),
    }));
    this.log(`Re-encrypted ${result.signingKeys.resealed} provenance signing keys.`);
    this.log(`Re-encrypted ${result.secrets.resealed} secrets.`);
    this.log(`Re-encrypted ${result.statusWebhooks.resealed} run-status webhook secrets.`);
    return { signingKeys: result.signingKeys.resealed, secrets: result.secrets.resealed, statusWebhooks: result.statusWebhooks.resealed };
  }
}
