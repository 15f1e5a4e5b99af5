// Cluster-wide settings (docs/cluster.md): tuning that must be the same on every node, held in
// one `cluster_settings` row. The first node to start seeds the row from its own config; after
// that the row wins over any node's config (a node whose config differs says so at start). A
// change (PATCH /api/v1/admin/cluster-settings, `svc-admin cluster-settings set`) NOTIFYs
// CLUSTER_SETTINGS_CHANNEL in its transaction; every node re-reads the row on the notification,
// and after a listener gap (notifications may have been missed), so no restart is needed.
//
// Readers call `current()` at the moment they decide (dispatch put-back, event retry), never
// copy a value at start.
import type { Logger } from 'pino';
import { Type } from 'typebox';
import {
  CLUSTER_SETTING_NAMES,
  type ClusterSettings,
  type ClusterSettingsPatch,
  type ClusterSettingsValues,
} from '../../../schemas/http/settings.ts';
import { messageOf } from '../../../core/errors.ts';
import { notify, sql, sqlTyped, type DatabasePool, type Listener } from '../../services/db/index.ts';

export const CLUSTER_SETTINGS_CHANNEL = 'svc_cluster_settings';

const Row = Type.Object({
  max_dispatch_attempts: Type.Number(),
  sealed_secrets_retry_backoff_ms: Type.Number(),
  updated_at: Type.String(),
  updated_by: Type.String(),
});
const ROW = sql.fragment`max_dispatch_attempts, sealed_secrets_retry_backoff_ms,
  to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at, updated_by`;

function toSettings(row: { max_dispatch_attempts: number; sealed_secrets_retry_backoff_ms: number; updated_at: string; updated_by: string }): ClusterSettings {
  return {
    settings: { maxDispatchAttempts: row.max_dispatch_attempts, sealedSecretsRetryBackoffMs: row.sealed_secrets_retry_backoff_ms },
    updatedAt: row.updated_at,
    updatedBy: row.updated_by,
  };
}

/** The row, or null when no node made it yet (`svc-admin cluster-settings show`). */
export async function readClusterSettings(pool: DatabasePool): Promise<ClusterSettings | null> {
  const row = await pool.maybeOne(sqlTyped(Row)`SELECT ${ROW} FROM cluster_settings WHERE id = 1`);
  return row === null ? null : toSettings(row);
}

/** The row, created from `seed` (this node's config) when no node made it yet. */
export async function loadClusterSettings(pool: DatabasePool, seed: ClusterSettingsValues, seededBy: string): Promise<ClusterSettings> {
  await pool.query(sql.unsafe`
    INSERT INTO cluster_settings (id, max_dispatch_attempts, sealed_secrets_retry_backoff_ms, updated_by)
    VALUES (1, ${seed.maxDispatchAttempts}, ${seed.sealedSecretsRetryBackoffMs}, ${`config of node ${seededBy}`})
    ON CONFLICT (id) DO NOTHING`);
  return toSettings(await pool.one(sqlTyped(Row)`SELECT ${ROW} FROM cluster_settings WHERE id = 1`));
}

/** Applies a validated patch (at least one field) and tells every node, in one transaction. */
export async function patchClusterSettings(pool: DatabasePool, patch: ClusterSettingsPatch, seed: ClusterSettingsValues, by: string): Promise<ClusterSettings> {
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      INSERT INTO cluster_settings (id, max_dispatch_attempts, sealed_secrets_retry_backoff_ms, updated_by)
      VALUES (1, ${seed.maxDispatchAttempts}, ${seed.sealedSecretsRetryBackoffMs}, ${by})
      ON CONFLICT (id) DO NOTHING`);
    const row = await tx.one(sqlTyped(Row)`
      UPDATE cluster_settings SET
        max_dispatch_attempts = coalesce(${patch.maxDispatchAttempts ?? null}::integer, max_dispatch_attempts),
        sealed_secrets_retry_backoff_ms = coalesce(${patch.sealedSecretsRetryBackoffMs ?? null}::integer, sealed_secrets_retry_backoff_ms),
        updated_at = now(), updated_by = ${by}
      WHERE id = 1 RETURNING ${ROW}`);
    await notify(tx, CLUSTER_SETTINGS_CHANNEL, '');
    return toSettings(row);
  });
}

/** This node's live view of the cluster settings. */
export interface ClusterSettingsService {
  current(): ClusterSettingsValues;
  /** The row as last read (with who changed it when). */
  snapshot(): ClusterSettings;
  /** Re-reads the row now (also done on every notification). */
  refresh(): Promise<ClusterSettings>;
  /** Called after each change this node noticed; returns an unsubscribe. */
  onChange(handler: (settings: ClusterSettingsValues) => void): () => void;
}

export async function startClusterSettings(options: {
  pool: DatabasePool;
  listener: Listener;
  seed: ClusterSettingsValues;
  nodeId: string;
  logger: Logger;
}): Promise<ClusterSettingsService> {
  const { pool, listener, seed, nodeId, logger } = options;
  let snapshot = await loadClusterSettings(pool, seed, nodeId);
  const handlers = new Set<(settings: ClusterSettingsValues) => void>();
  const differing = CLUSTER_SETTING_NAMES.filter((name) => seed[name] !== snapshot.settings[name]);
  if (differing.length > 0) {
    logger.warn(
      { fields: Object.fromEntries(differing.map((name) => [name, { config: seed[name], cluster: snapshot.settings[name] }])) },
      "this node's config differs from the cluster settings; the cluster's values apply (svc-admin cluster-settings set changes them)",
    );
  }
  let reading: Promise<ClusterSettings> | undefined;
  const refresh = async (): Promise<ClusterSettings> => {
    // Reads never overlap; a notification during a read reads again after it.
    while (reading !== undefined) await reading.catch(() => undefined);
    reading = loadClusterSettings(pool, seed, nodeId);
    try {
      const next = await reading;
      const changed = CLUSTER_SETTING_NAMES.some((name) => next.settings[name] !== snapshot.settings[name]);
      snapshot = next;
      if (changed) {
        logger.info({ settings: next.settings, updatedBy: next.updatedBy }, 'cluster settings changed');
        for (const handler of handlers) handler(next.settings);
      }
      return next;
    } finally {
      reading = undefined;
    }
  };
  const reread = (): void => {
    refresh().catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'could not re-read the cluster settings; keeping the last values'));
  };
  await listener.listen(CLUSTER_SETTINGS_CHANNEL, reread);
  listener.onGap(reread);
  return {
    current: () => snapshot.settings,
    snapshot: () => snapshot,
    refresh,
    onChange(handler) {
      handlers.add(handler);
      return () => handlers.delete(handler);
    },
  };
}
