// The retry worker: on every node, a poll for kept deliveries that are due (retry/store.ts),
// each run through the pipeline again as a replay. The pipeline keeps it again when it fails
// again (new back-off, or `failed` past the give-up time); anything else is the delivery's
// answer for good and the kept bytes go. Rows are leased with SKIP LOCKED, so nodes sharing a
// database never retry the same delivery at once.
import type { Logger } from 'pino';
import { messageOf } from '../../../../core/errors.ts';
import type { DatabasePool } from '../../../services/db/index.ts';
import type { IncomingDelivery, IngestOutcome } from '../types.ts';
import { leaseDue, postpone, recordStatus, settle, type Leased } from './store.ts';

export interface RetryWorkerOptions {
  pool: DatabasePool;
  logger: Logger;
  nodeId: string;
  ingest: (delivery: IncomingDelivery) => Promise<IngestOutcome>;
  /** How often due rows are looked for (ms). */
  pollMs: number;
  /** How long a leased row is this node's before another may take it (ms). */
  leaseMs?: number;
  /** Rows leased per poll. */
  batch?: number;
}

export interface RetryWorker {
  /** One poll now (tests; the timer calls it too). Resolves with the rows tried. */
  poll(): Promise<number>;
  stop(): Promise<void>;
}

/** Statuses that mean the delivery still waits on its kept bytes. */
const WAITING = new Set(['retrying', 'failed']);

export function startRetryWorker(options: RetryWorkerOptions): RetryWorker {
  const { pool, logger, nodeId } = options;
  const leaseMs = options.leaseMs ?? 120_000;
  const batch = options.batch ?? 8;
  let stopped = false;
  let running: Promise<number> | null = null;
  let timer: NodeJS.Timeout | undefined;

  async function tryOne(leased: Leased): Promise<void> {
    const { orgId, deliveryId } = leased.delivery;
    // A redelivery by the sender (or another node's retry) may have finished it meanwhile.
    const status = await recordStatus(pool, orgId, deliveryId);
    if (status !== null && !WAITING.has(status)) {
      await settle(pool, leased, nodeId);
      return;
    }
    const outcome = await options.ingest(leased.delivery);
    if (outcome.result === 'shed_retry_later') {
      // This node is full (admission) or could not even keep it: try again soon, no attempt spent.
      await postpone(pool, leased, nodeId, 1000);
      return;
    }
    // Kept again, the pipeline re-scheduled the row and dropped this lease; settle leaves it then.
    await settle(pool, leased, nodeId);
    logger.info({ orgId, deliveryId, attempts: leased.attempts + 1, status: outcome.status }, outcome.status === 'retrying' ? 'kept delivery failed again' : 'kept delivery retried');
  }

  async function poll(): Promise<number> {
    const due = await leaseDue(pool, nodeId, batch, leaseMs);
    for (const leased of due) {
      if (stopped) break;
      await tryOne(leased).catch((error: unknown) => {
        // The lease runs out and the row is due again then: nothing is lost.
        logger.warn({ err: error, orgId: leased.delivery.orgId, deliveryId: leased.delivery.deliveryId }, `retrying a kept delivery failed: ${messageOf(error)}`);
      });
    }
    return due.length;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = poll()
        .catch((error: unknown) => {
          logger.warn({ err: error }, 'looking for kept deliveries failed; trying again');
          return 0;
        })
        .finally(() => {
          running = null;
          schedule();
        });
    }, options.pollMs);
    timer.unref();
  }

  schedule();
  return {
    poll: async () => {
      if (running !== null) await running;
      return poll();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      if (running !== null) await running;
    },
  };
}
