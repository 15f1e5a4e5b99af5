// One reconciliation pass over one source: the forge's log of attempts since the lookback, the
// deliveries no attempt of which was answered 2xx, minus those this orchestrator recorded (any
// status but `shed`, which asked the sender to retry), minus those asked for recently or too
// often; each of the rest is sent again by the forge under its own delivery id, so one that
// did arrive meanwhile is answered duplicate by ingest.
import { Type } from 'typebox';
import type { ForgeDeliveryAttempt, ProviderSource, SourceProviderExtensionPoint } from '../../../core/extension-points/provider.ts';
import { messageOf } from '../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

/** A delivery is asked for again at most this many times, and not again within the quiet period. */
export const MAX_REDELIVERIES = 3;
export const REDELIVERY_QUIET_MS = 10 * 60_000;

export interface ReconcileCounts {
  listed: number;
  missing: number;
  redelivered: number;
  errors: string[];
}

type Reconcilable = SourceProviderExtensionPoint & Required<Pick<SourceProviderExtensionPoint, 'listDeliveryAttempts' | 'redeliver'>>;

export function canReconcile(provider: SourceProviderExtensionPoint | undefined): provider is Reconcilable {
  return provider?.listDeliveryAttempts !== undefined && provider.redeliver !== undefined;
}

/** Per delivery id, the newest attempt; null when some attempt was answered 2xx (it arrived). */
export function undelivered(attempts: readonly ForgeDeliveryAttempt[]): ForgeDeliveryAttempt[] {
  const newest = new Map<string, ForgeDeliveryAttempt | null>();
  for (const attempt of attempts) {
    const ok = attempt.statusCode >= 200 && attempt.statusCode < 300;
    const seen = newest.get(attempt.deliveryId);
    if (ok) newest.set(attempt.deliveryId, null);
    else if (seen === undefined || (seen !== null && seen.deliveredAt < attempt.deliveredAt)) newest.set(attempt.deliveryId, attempt);
  }
  return [...newest.values()].filter((a): a is ForgeDeliveryAttempt => a !== null);
}

const Known = Type.Object({ deliveryId: Type.String() });

/** Of `ids`, those recorded (not shed) or asked for too often or too recently. */
async function settled(pool: DatabasePool, orgId: string, ids: readonly string[]): Promise<Set<string>> {
  const rows = await pool.any(sqlTyped(Known)`
    SELECT delivery_id AS "deliveryId" FROM webhook_deliveries
      WHERE org_id = ${orgId} AND delivery_id = ANY(${sql.array([...ids], 'text')}) AND status <> 'shed'
    UNION
    SELECT delivery_id FROM reconcile_redeliveries
      WHERE org_id = ${orgId} AND delivery_id = ANY(${sql.array([...ids], 'text')})
        AND (attempts >= ${MAX_REDELIVERIES} OR last_at > now() - ${REDELIVERY_QUIET_MS} * interval '1 millisecond')`);
  return new Set(rows.map((r) => r.deliveryId));
}

export async function reconcileSource(pool: DatabasePool, provider: Reconcilable, source: ProviderSource, since: Date): Promise<ReconcileCounts> {
  const counts: ReconcileCounts = { listed: 0, missing: 0, redelivered: 0, errors: [] };
  try {
    const attempts = await provider.listDeliveryAttempts({ source, since });
    counts.listed = attempts.length;
    const candidates = undelivered(attempts);
    const done = candidates.length === 0 ? new Set<string>() : await settled(pool, source.orgId, candidates.map((a) => a.deliveryId));
    const missing = candidates.filter((a) => !done.has(a.deliveryId));
    counts.missing = missing.length;
    for (const attempt of missing) {
      try {
        await provider.redeliver({ source, id: attempt.id });
        counts.redelivered += 1;
        await pool.query(sql.unsafe`
          INSERT INTO reconcile_redeliveries (org_id, delivery_id, source_id) VALUES (${source.orgId}, ${attempt.deliveryId}, ${source.id})
          ON CONFLICT (org_id, delivery_id) DO UPDATE SET attempts = reconcile_redeliveries.attempts + 1, last_at = now()`);
      } catch (error) {
        counts.errors.push(`redelivery of ${attempt.deliveryId}: ${messageOf(error)}`);
      }
    }
  } catch (error) {
    counts.errors.push(messageOf(error));
  }
  await pool.query(sql.unsafe`
    INSERT INTO source_reconciliations (source_id, listed, missing, redelivered, error)
    VALUES (${source.id}, ${counts.listed}, ${counts.missing}, ${counts.redelivered}, ${counts.errors.join('; ').slice(0, 2000) || null})
    ON CONFLICT (source_id) DO UPDATE SET finished_at = now(), listed = excluded.listed, missing = excluded.missing,
      redelivered = excluded.redelivered, error = excluded.error`);
  return counts;
}
