// A transaction that creates runs and jobs on a hot path (a webhook delivery's runs) without any
// NOTIFY inside it: its wake-ups (dispatchers on `svc_jobs`, the run-control worker, and the run
// status feed's consumers on `svc_run_status`, which the feed trigger would otherwise notify per
// row) are sent after the commit by a `WakeupSender`, folded with those of other deliveries.
// Why: kernel/services/db/wakeups.ts (PostgreSQL's notification lock makes notifying commits
// flush one at a time). The feed rows themselves are written as before, in the transaction.
import type { CommonQueryMethods } from 'slonik';
import { collectWakeups, sql, type DatabasePool, type WakeupSender } from '../../services/db/index.ts';

/** The run status feed trigger's channel (migration 0600; deferred by migration 0840's setting). */
export const RUN_STATUS_FEED_CHANNEL = 'svc_run_status';

/**
 * The deferral as an item of a RETURNING list (`returning id, ${STATUS_FEED_DEFERRAL}`): the
 * transaction's first statement sets it, one round trip fewer than a statement of its own on the
 * webhook path (a sixth of a delivery's round trips). Its column reads `deferred`.
 */
export const STATUS_FEED_DEFERRAL = sql.fragment`set_config('svc.status_feed_notify', 'deferred', true) as status_feed_notify`;

export interface WakeupTransactionOptions {
  /**
   * The body's first statement returns STATUS_FEED_DEFERRAL, before anything the feed trigger
   * sees. Should it not, the trigger notifies inside the transaction as it always could: the
   * wake-ups arrive twice, none is lost.
   */
  firstStatementDefers?: boolean;
}

export async function transactionWithWakeupsAfterCommit<T>(
  pool: DatabasePool,
  sender: WakeupSender,
  body: (tx: CommonQueryMethods) => Promise<T>,
  options: WakeupTransactionOptions = {},
): Promise<T> {
  const channels = new Set<string>([RUN_STATUS_FEED_CHANNEL]);
  const result = await pool.transaction(async (tx) => {
    collectWakeups(tx, channels);
    // Transaction-local: the feed trigger leaves its NOTIFY to us (migration 0840).
    if (options.firstStatementDefers !== true) await tx.query(sql.unsafe`select set_config('svc.status_feed_notify', 'deferred', true)`);
    return body(tx);
  });
  sender.wake(channels);
  return result;
}
