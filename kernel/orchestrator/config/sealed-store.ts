// The sealed fields of shared config versions as a sealed store (kernel/orchestrator/sealed-stores.ts):
// every version, not only the newest, so a rollback still opens after the old key is gone.
// Versions are immutable; migration 0770 lets an UPDATE through only when the transaction says it
// is a re-seal (RESEAL_SETTING) and nothing but the values at `encrypted_paths` changes.
import { Type } from 'typebox';
import { configFieldAd } from '../../services/crypto/config-fields.ts';
import type { SealedCell, SealedStore } from '../../services/crypto/sealed-stores.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';

/** Transaction-local setting the config_versions trigger checks (migration 0770). */
export const RESEAL_SETTING = 'svc.reseal_sealed_values';

const Row = Type.Object({ id: Type.String(), version: Type.Number(), config: Type.Record(Type.String(), Type.Unknown()), encrypted_paths: Type.Array(Type.String()) });

function at(tree: unknown, path: string): unknown {
  let node = tree;
  for (const part of path.split('.')) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

export const configFieldsSealedStore: SealedStore = {
  name: 'config_fields',
  jsonKey: 'configFields',
  noun: 'sealed config fields',
  columns: [{ table: 'config_versions', column: 'config' }],
  async list(tx) {
    const rows = await tx.any(sqlTyped(Row)`
      SELECT id::text AS id, version, config, encrypted_paths FROM config_versions WHERE cardinality(encrypted_paths) > 0 ORDER BY version FOR UPDATE`);
    const cells: SealedCell[] = [];
    for (const row of rows) {
      for (const path of row.encrypted_paths) {
        const value = at(row.config, path);
        // Listed as encrypted but not a string: not a sealed value, so it cannot open (named).
        cells.push({ row: `config version ${row.version} field ${path}`, ad: configFieldAd(path), sealed: typeof value === 'string' ? value : '', ref: [row.id, path] });
      }
    }
    return cells;
  },
  async write(tx, cell, sealed) {
    const [id, path] = cell.ref as [string, string];
    await tx.query(sql.unsafe`SELECT set_config(${RESEAL_SETTING}, 'on', true)`);
    await tx.query(sql.unsafe`
      UPDATE config_versions SET config = jsonb_set(config, ${sql.array(path.split('.'), 'text')}, to_jsonb(${sealed}::text), false) WHERE id = ${id}`);
  },
};
