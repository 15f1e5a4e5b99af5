// The sealed-store contract and the one sweep every master-key path uses (spec "Authentication"
// 6, `rotate-key`): boot self-heal, `svc-admin rotate-key` and the boot check. A store says where
// its sealed values live and how to list and rewrite them; opening and re-sealing are done here,
// the same way for every store, so no store can forget the previous key or the additional data.
// The list of stores is kernel/orchestrator/sealed-stores.ts; how to add one: docs/master-key.md.
import type { DatabasePool } from '../db/index.ts';
import { SvcError } from '../../../core/errors.ts';
import type { MasterKeys } from './master-keys.ts';
import { OpenFailedError, openWithAny, seal } from './sealing.ts';

export type SealedStoreTx = Parameters<Parameters<DatabasePool['transaction']>[0]>[0];

/** One sealed value of a store, as listed inside the sweep's transaction. */
export interface SealedCell {
  /** Names the row in errors and logs (never the value), e.g. `kid k-1` or `source <id> current secret`. */
  row: string;
  /** The additional data the value is sealed with (binds it to its row and field). */
  ad: string;
  sealed: string;
  /** Whatever the store needs to write this cell back (primary key, column, JSON path). */
  ref: unknown;
}

/** Where a store keeps sealed values: checked against the migrated schema by the registry test. */
export interface SealedColumn {
  table: string;
  column: string;
}

export interface SealedStore {
  /** Stable name used in errors, logs and docs, e.g. `signing_keys`. */
  name: string;
  /** Key of its count in `svc-admin rotate-key --json`, e.g. `signingKeys`. */
  jsonKey: string;
  /** The count line of `rotate-key`: `Re-encrypted N <noun>.` */
  noun: string;
  columns: readonly SealedColumn[];
  /** Every sealed value, rows locked FOR UPDATE (the sweep runs in one transaction). */
  list(tx: SealedStoreTx): Promise<SealedCell[]>;
  /** Write one cell back, re-sealed under the current key. */
  write(tx: SealedStoreTx, cell: SealedCell, sealed: string): Promise<void>;
}

/** `heal`: re-seal only values the previous key opened (boot); `all`: every value (rotate-key). */
export type SweepMode = 'heal' | 'all';

export interface StoreSweep {
  store: string;
  jsonKey: string;
  noun: string;
  /** Sealed values seen. */
  total: number;
  /** Values written back under the current master key. */
  resealed: number;
}

/** A sealed value opens with no configured master key: the boot stops and rotate-key changes nothing. */
export class MasterKeyMismatchError extends SvcError {}

/** How many unopenable rows an error lists before it says "and N more". */
const NAMED_ROWS = 5;

export function countLine(sweep: Pick<StoreSweep, 'resealed' | 'noun'>): string {
  return `Re-encrypted ${sweep.resealed} ${sweep.noun}.`;
}

function mismatch(failures: Array<{ store: string; row: string; cause: unknown }>): MasterKeyMismatchError {
  const first = failures[0]!;
  const stores = [...new Set(failures.map((f) => f.store))];
  const named = failures.slice(0, NAMED_ROWS).map((f) => `${f.store}: ${f.row}`);
  const more = failures.length > NAMED_ROWS ? ` and ${failures.length - NAMED_ROWS} more` : '';
  return new MasterKeyMismatchError(
    'SVC_ERR_MASTER_KEY_MISMATCH',
    `store ${first.store}: ${first.row} opens with none of the configured master keys` +
      (failures.length > 1 ? ` (unopenable: ${named.join('; ')}${more})` : '') +
      '. Restore the previous master key as SVC_SECRET_KEY_OLD (or SVC_SECRET_KEY_FILE_OLD), restart, then run `svc-admin rotate-key`',
    { cause: first.cause, details: { store: first.store, row: first.row, stores, rows: failures.length } },
  );
}

/**
 * Open every sealed value of every store with the current or previous master key and re-seal
 * under the current one (`mode`). One transaction over all stores: a value no key opens stops
 * the sweep with MasterKeyMismatchError naming its store and row (every one found, not only the
 * first), and nothing is written.
 */
export async function sweepSealedStores(pool: DatabasePool, keys: MasterKeys, stores: readonly SealedStore[], mode: SweepMode): Promise<StoreSweep[]> {
  const current = keys.current;
  if (!current) throw new SvcError('SVC_ERR_SECRETS_NO_MASTER_KEY', 'no master key (SVC_SECRET_KEY) is configured');
  return pool.transaction(async (tx) => {
    const failures: Array<{ store: string; row: string; cause: unknown }> = [];
    const pending: Array<{ store: SealedStore; writes: Array<{ cell: SealedCell; sealed: string }>; total: number }> = [];
    for (const store of stores) {
      const cells = await store.list(tx);
      const writes: Array<{ cell: SealedCell; sealed: string }> = [];
      for (const cell of cells) {
        let opened: { name: string; plaintext: Buffer };
        try {
          opened = openWithAny(keys.all, cell.sealed, cell.ad);
        } catch (error) {
          if (!(error instanceof OpenFailedError)) throw error;
          failures.push({ store: store.name, row: cell.row, cause: error });
          continue;
        }
        if (mode === 'all' || opened.name !== 'current') writes.push({ cell, sealed: seal(current, opened.plaintext, cell.ad) });
        opened.plaintext.fill(0);
      }
      pending.push({ store, writes, total: cells.length });
    }
    if (failures.length > 0) throw mismatch(failures);
    const result: StoreSweep[] = [];
    for (const { store, writes, total } of pending) {
      for (const { cell, sealed } of writes) await store.write(tx, cell, sealed);
      result.push({ store: store.name, jsonKey: store.jsonKey, noun: store.noun, total, resealed: writes.length });
    }
    return result;
  });
}
