// Secret contexts' values as a sealed store (kernel/orchestrator/sealed-stores.ts).
import { Type } from 'typebox';
import type { SealedStore } from '../../services/crypto/sealed-stores.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';
import { secretAd } from './store.ts';

export const secretsSealedStore: SealedStore = {
  name: 'secrets',
  jsonKey: 'secrets',
  noun: 'secrets',
  columns: [{ table: 'secret_values', column: 'value_sealed' }],
  async list(tx) {
    const rows = await tx.any(sqlTyped(Type.Object({ context: Type.String(), key: Type.String(), value_sealed: Type.String() }))`
      SELECT context, key, value_sealed FROM secret_values ORDER BY context, key FOR UPDATE`);
    return rows.map((r) => ({ row: `secret ${r.context}:${r.key}`, ad: secretAd(r.context, r.key), sealed: r.value_sealed, ref: [r.context, r.key] }));
  },
  async write(tx, cell, sealed) {
    // updated_at stays: the value did not change, only its wrapping.
    const [context, key] = cell.ref as [string, string];
    await tx.query(sql.unsafe`UPDATE secret_values SET value_sealed = ${sealed} WHERE context = ${context} AND key = ${key}`);
  },
};
