// The db-custody signing keys as a sealed store (kernel/orchestrator/sealed-stores.ts): every
// row with a private key, not only the active one (spec `rotate-key`).
import { Type } from 'typebox';
import type { SealedStore } from '../../services/crypto/sealed-stores.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';
import { SIGNING_KEYS_STORE, sealingAd } from './key-store.ts';

export const signingKeysSealedStore: SealedStore = {
  name: SIGNING_KEYS_STORE,
  jsonKey: 'signingKeys',
  // The spec's line, verbatim: `Re-encrypted N provenance signing keys.`
  noun: 'provenance signing keys',
  columns: [{ table: 'signing_keys', column: 'private_key_sealed' }],
  async list(tx) {
    const rows = await tx.any(sqlTyped(Type.Object({ kid: Type.String(), private_key_sealed: Type.String() }))`
      SELECT kid, private_key_sealed FROM signing_keys WHERE private_key_sealed IS NOT NULL ORDER BY kid FOR UPDATE`);
    return rows.map((r) => ({ row: `signing key ${r.kid}`, ad: sealingAd(r.kid), sealed: r.private_key_sealed, ref: r.kid }));
  },
  async write(tx, cell, sealed) {
    await tx.query(sql.unsafe`UPDATE signing_keys SET private_key_sealed = ${sealed} WHERE kid = ${cell.ref as string}`);
  },
};
