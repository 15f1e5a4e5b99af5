// The sources table holds two sealed stores (kernel/orchestrator/sealed-stores.ts): the webhook
// secrets a source verifies deliveries with (current and, during a secret rotation, previous)
// and the provider credentials (a GitHub App private key, a git token) it acts with.
import { Type } from 'typebox';
import type { SealedCell, SealedStore, SealedStoreTx } from '../../services/crypto/sealed-stores.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';
import { credentialsAd, secretAd } from './store.ts';

const Row = Type.Object({
  id: Type.String(),
  secret_sealed: Type.Union([Type.String(), Type.Null()]),
  previous_secret_sealed: Type.Union([Type.String(), Type.Null()]),
  credentials_sealed: Type.Union([Type.String(), Type.Null()]),
});

async function lockedSources(tx: SealedStoreTx) {
  return tx.any(sqlTyped(Row)`
    SELECT id::text AS id, secret_sealed, previous_secret_sealed, credentials_sealed FROM sources ORDER BY id FOR UPDATE`);
}

type SecretColumn = 'secret_sealed' | 'previous_secret_sealed';

// Values unchanged, so the source caches (which hold opened values) need no notification.
export const sourceSecretsSealedStore: SealedStore = {
  name: 'source_webhook_secrets',
  jsonKey: 'sourceSecrets',
  noun: 'source webhook secrets',
  columns: [
    { table: 'sources', column: 'secret_sealed' },
    { table: 'sources', column: 'previous_secret_sealed' },
  ],
  async list(tx) {
    const cells: SealedCell[] = [];
    for (const row of await lockedSources(tx)) {
      if (row.secret_sealed !== null) cells.push({ row: `source ${row.id} webhook secret`, ad: secretAd(row.id), sealed: row.secret_sealed, ref: [row.id, 'secret_sealed'] });
      if (row.previous_secret_sealed !== null) {
        cells.push({ row: `source ${row.id} previous webhook secret`, ad: secretAd(row.id), sealed: row.previous_secret_sealed, ref: [row.id, 'previous_secret_sealed'] });
      }
    }
    return cells;
  },
  async write(tx, cell, sealed) {
    const [id, column] = cell.ref as [string, SecretColumn];
    const target = column === 'secret_sealed' ? sql.fragment`secret_sealed` : sql.fragment`previous_secret_sealed`;
    await tx.query(sql.unsafe`UPDATE sources SET ${target} = ${sealed} WHERE id = ${id}`);
  },
};

export const sourceCredentialsSealedStore: SealedStore = {
  name: 'source_provider_credentials',
  jsonKey: 'sourceCredentials',
  noun: 'source provider credentials',
  columns: [{ table: 'sources', column: 'credentials_sealed' }],
  async list(tx) {
    return (await lockedSources(tx)).flatMap((row) =>
      row.credentials_sealed === null ? [] : [{ row: `source ${row.id} provider credentials`, ad: credentialsAd(row.id), sealed: row.credentials_sealed, ref: row.id }],
    );
  },
  async write(tx, cell, sealed) {
    await tx.query(sql.unsafe`UPDATE sources SET credentials_sealed = ${sealed} WHERE id = ${cell.ref as string}`);
  },
};
