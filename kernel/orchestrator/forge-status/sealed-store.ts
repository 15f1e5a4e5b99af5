// Run-status webhook secrets as a sealed store (kernel/orchestrator/sealed-stores.ts).
import { Type } from 'typebox';
import type { SealedStore } from '../../services/crypto/sealed-stores.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';
import { statusWebhookSecretAd } from './webhook-config.ts';

export const statusWebhookSecretsSealedStore: SealedStore = {
  name: 'run_status_webhook_secrets',
  jsonKey: 'statusWebhooks',
  noun: 'run-status webhook secrets',
  columns: [{ table: 'source_status_webhooks', column: 'secret_sealed' }],
  async list(tx) {
    const rows = await tx.any(sqlTyped(Type.Object({ source_id: Type.String(), secret_sealed: Type.String() }))`
      SELECT source_id::text AS source_id, secret_sealed FROM source_status_webhooks ORDER BY source_id FOR UPDATE`);
    return rows.map((r) => ({ row: `run-status webhook of source ${r.source_id}`, ad: statusWebhookSecretAd(r.source_id), sealed: r.secret_sealed, ref: r.source_id }));
  },
  async write(tx, cell, sealed) {
    await tx.query(sql.unsafe`UPDATE source_status_webhooks SET secret_sealed = ${sealed} WHERE source_id = ${cell.ref as string}`);
  },
};
