// Event-log retention (spec Limits: "warm 30 days, then archived hourly; payload objects stay").
// Once an hour the cluster leader (every node when there is no cluster subsystem) marks delivery
// records received more than `eventLog.warmRetentionDays` ago as archived (`archived_at`). An
// archived record leaves the warm reads (the event log, `svc-admin deliveries list`) but stays
// in the table: `deliveries show`, `deliveries list --archived` and duplicate detection of its
// delivery id still find it. Payload objects (`event-log/<org>/<delivery>.json.gz`) are never
// deleted here. Rows are archived in batches so no pass holds many row locks at once.
import type { Logger } from 'pino';
import { Type } from 'typebox';
import { purgeFailed } from '../retry/store.ts';
import { messageOf } from '../../../../core/errors.ts';
import { sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import type { SvcMetrics } from '../../../services/metrics.ts';

/** spec Limits: archived hourly. */
export const ARCHIVE_INTERVAL_MS = 3_600_000;
const ARCHIVE_BATCH = 5_000;

/** Archives warm records received before `now - warmDays`; resolves with how many it archived. */
export async function archiveOldDeliveries(pool: DatabasePool, warmDays: number, now: Date = new Date(), batch = ARCHIVE_BATCH): Promise<number> {
  const cutoff = new Date(now.getTime() - warmDays * 86_400_000).toISOString();
  let total = 0;
  for (;;) {
    const rows = await pool.any(sqlTyped(Type.Object({ delivery_id: Type.String() }), 'archive old webhook deliveries')`
      UPDATE webhook_deliveries SET archived_at = clock_timestamp()
      WHERE (org_id, delivery_id) IN (
        SELECT org_id, delivery_id FROM webhook_deliveries
        WHERE archived_at IS NULL AND received_at < ${cutoff}::timestamptz
        LIMIT ${batch} FOR UPDATE SKIP LOCKED)
      RETURNING delivery_id`);
    total += rows.length;
    if (rows.length < batch) return total;
  }
}

export interface LeaderView {
  isLeader(): boolean;
  onLeaderChange(handler: (leader: boolean) => void): () => void;
}

export interface EventLogRetentionOptions {
  pool: DatabasePool;
  logger: Logger;
  metrics: SvcMetrics;
  warmDays: number;
  /** Absent: no cluster subsystem, this node archives. */
  cluster?: LeaderView;
  intervalMs?: number;
}

export interface EventLogRetention {
  /** One pass now (leader or not); resolves with how many records it archived. */
  runOnce(): Promise<number>;
  stop(): Promise<void>;
}

export function startEventLogRetention(options: EventLogRetentionOptions): EventLogRetention {
  const archived = options.metrics.counter({ name: 'svc_orch_event_log_archived_total', help: 'Webhook delivery records archived past the warm retention window by this node.' });
  let running: Promise<number> | null = null;
  const runOnce = (): Promise<number> => {
    if (running !== null) return running;
    running = archiveOldDeliveries(options.pool, options.warmDays)
      .then(async (n) => {
        archived.inc(n);
        if (n > 0) options.logger.info({ archived: n, warmDays: options.warmDays }, 'event-log records past the warm window archived');
        // Bytes of deliveries given up on go with the warm window too; their records stay `failed`.
        const purged = await purgeFailed(options.pool, options.warmDays);
        if (purged > 0) options.logger.info({ purged, warmDays: options.warmDays }, 'kept bytes of failed deliveries past the warm window removed');
        return n;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const tick = (): void => {
    if (options.cluster !== undefined && !options.cluster.isLeader()) return;
    runOnce().catch((error: unknown) => options.logger.warn({ err: messageOf(error) }, 'event-log archive pass failed; retried at the next tick'));
  };
  const timer = setInterval(tick, options.intervalMs ?? ARCHIVE_INTERVAL_MS);
  timer.unref();
  // A node that becomes leader archives at once rather than up to an hour later.
  const unsubscribe = options.cluster?.onLeaderChange((leader) => {
    if (leader) tick();
  });
  tick();
  return {
    runOnce,
    async stop() {
      unsubscribe?.();
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
