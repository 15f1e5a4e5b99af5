// Every store of values sealed under the master key (docs/master-key.md). Each store is defined
// by the subsystem that owns its table; this list is what the boot self-heal and check
// (healSealedStores, app.ts) and `svc-admin rotate-key` sweep, in this order (signing keys first:
// the spec's line comes first). A new sealed column must be named `<what>_sealed` and its store
// added here; test/kernel/orchestrator/sealed-stores/registry.test.ts fails until it is.
import type { Logger } from 'pino';
import type { MasterKeys } from '../services/crypto/master-keys.ts';
import { sweepSealedStores, type SealedStore, type StoreSweep } from '../services/crypto/sealed-stores.ts';
import type { DatabasePool } from '../services/db/index.ts';
import { configFieldsSealedStore } from './config/sealed-store.ts';
import { statusWebhookSecretsSealedStore } from './forge-status/sealed-store.ts';
import { signingKeysSealedStore } from './identity/sealed-store.ts';
import { secretsSealedStore } from './secrets/sealed-store.ts';
import { sourceCredentialsSealedStore, sourceSecretsSealedStore } from './sources/sealed-stores.ts';

export const SEALED_STORES: readonly SealedStore[] = [
  signingKeysSealedStore,
  secretsSealedStore,
  sourceSecretsSealedStore,
  sourceCredentialsSealedStore,
  statusWebhookSecretsSealedStore,
  configFieldsSealedStore,
];

/**
 * Boot: values still under SVC_SECRET_KEY_OLD are re-sealed under SVC_SECRET_KEY (self-heal),
 * and a value neither key opens stops the boot (MasterKeyMismatchError naming store and row).
 */
export async function healSealedStores(pool: DatabasePool, keys: MasterKeys, logger: Logger, stores: readonly SealedStore[] = SEALED_STORES): Promise<StoreSweep[]> {
  const swept = await sweepSealedStores(pool, keys, stores, 'heal');
  for (const store of swept) {
    if (store.resealed > 0) logger.warn({ store: store.store, resealed: store.resealed }, `${store.store}: values sealed under the previous master key were re-sealed under the current one`);
  }
  return swept;
}
