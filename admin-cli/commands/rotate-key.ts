// `svc-admin rotate-key`: re-encrypt every master-key-wrapped store (kernel/orchestrator/sealed-stores.ts)
// under the current master key (SVC_SECRET_KEY), opening values with it or the previous one
// (SVC_SECRET_KEY_OLD). Every row, not only active ones; one transaction over all stores, so a
// value neither key opens changes nothing and is named (store and row). One count line per store,
// the spec's first: `Re-encrypted N provenance signing keys.`; `--json`: a count per store.
import { SvcCommand } from '../../core/cli/base-command.ts';
import { SEALED_STORES } from '../../kernel/orchestrator/sealed-stores.ts';
import { loadMasterKeys } from '../../kernel/services/crypto/master-keys.ts';
import { countLine, sweepSealedStores } from '../../kernel/services/crypto/sealed-stores.ts';
import { InputError } from '../../core/errors.ts';
import { USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from './signing-key/shared.ts';

export default class RotateKey extends SvcCommand {
  static override description = 'Re-encrypt every master-key-wrapped store under the current master key';
  static override flags = { ...databaseFlag };

  async run(): Promise<Record<string, number>> {
    const { flags } = await this.parse(RotateKey);
    const config = await adminConfig();
    const keys = await loadMasterKeys(config.secrets);
    if (!keys.current) throw new InputError(USAGE_ERROR_CODE, 'set the new master key as SVC_SECRET_KEY and the previous one as SVC_SECRET_KEY_OLD');
    const swept = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) => sweepSealedStores(pool, keys, SEALED_STORES, 'all'));
    for (const store of swept) this.log(countLine(store));
    return Object.fromEntries(swept.map((s) => [s.jsonKey, s.resealed]));
  }
}
