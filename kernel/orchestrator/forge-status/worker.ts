// The forge status loop of one node. Woken by `svc_run_status` (the feed) and `svc_forge_status`
// (deliveries enqueued by any node), and by a bounded periodic tick (a notification sent while
// the listener reconnected is lost; a retry comes due with no notification at all), it:
//   1. drains the feed into deliveries (feed.ts), batch by batch;
//   2. fails deliveries whose last attempt's lease expired;
//   3. leases due deliveries and sends them with bounded concurrency (send.ts), recording each
//      attempt;
//   4. now and then, deletes finished deliveries past their retention (30 days).
// Everything runs in the reporter's own transactions on its own tables: a forge that is down,
// slow or refusing never touches a run.
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { messageOf } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcMetrics } from '../../services/metrics.ts';
import { drainFeedBatch, feedPending, type FeedDeps } from './feed.ts';
import { sendDelivery, type SendDeps } from './send.ts';
import { failExhausted, finishDelivery, leaseDeliveries, pruneDeliveries, type LeasedDelivery } from './store.ts';

/** How often a node deletes deliveries past their retention. */
const PRUNE_EVERY_MS = 10 * 60_000;

export interface ForgeStatusWorkerOptions {
  pool: DatabasePool;
  logger: Logger;
  metrics: SvcMetrics;
  nodeId: string;
  feed: FeedDeps;
  send: SendDeps;
  /** Longest wait between rounds without a notification. */
  tickMs: number;
  /** How long a lease covers one attempt (longer than the request time limit). */
  leaseMs: number;
  /** Feed rows per transaction, deliveries per lease round (default 100, 32). */
  feedBatch?: number;
  sendBatch?: number;
  /** Deliveries sent at once (default 8). */
  concurrency?: number;
}

interface Metrics {
  delivered: Counter<'target'>;
  retried: Counter<'target'>;
  failed: Counter<'target'>;
}

function metricsOf(metrics: SvcMetrics): Metrics {
  return {
    delivered: metrics.counter({ name: 'svc_orch_forge_status_delivered_total', help: 'Run status deliveries to forges and run-status webhooks that succeeded on this node.', labelNames: ['target'] }),
    retried: metrics.counter({ name: 'svc_orch_forge_status_retried_total', help: 'Run status delivery attempts that failed and were scheduled for a retry on this node.', labelNames: ['target'] }),
    failed: metrics.counter({ name: 'svc_orch_forge_status_failed_total', help: 'Run status deliveries that ended failed (attempts exhausted or refused) on this node.', labelNames: ['target'] }),
  };
}

export class ForgeStatusWorker {
  readonly #o: ForgeStatusWorkerOptions;
  readonly #m: Metrics;
  #wake: (() => void) | null = null;
  #woken = false;
  #stopped = false;
  #loop: Promise<void> | null = null;
  #soon: NodeJS.Timeout | null = null;
  #prunedAt = 0;

  constructor(options: ForgeStatusWorkerOptions) {
    this.#o = options;
    this.#m = metricsOf(options.metrics);
  }

  start(): void {
    this.#loop = this.#run();
  }

  /** A notification (or a retry coming due) says there may be work. */
  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#soon) clearTimeout(this.#soon);
    this.wake();
    await this.#loop;
  }

  /** Another look shortly (rows another claim held), without waiting for the tick. */
  #wakeSoon(): void {
    if (this.#soon !== null || this.#stopped) return;
    this.#soon = setTimeout(() => {
      this.#soon = null;
      this.wake();
    }, Math.min(250, this.#o.tickMs));
    this.#soon.unref();
  }

  async #sleep(ms: number): Promise<void> {
    if (this.#woken || this.#stopped) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = null;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      this.#woken = false;
      let busy = false;
      try {
        busy = (await this.#drainFeed()) || busy;
        busy = (await this.#sendDue()) || busy;
        await this.#prune();
      } catch (error) {
        this.#o.logger.warn({ err: messageOf(error) }, 'forge status round failed; retrying at the next tick');
        busy = false;
      }
      if (!busy) await this.#sleep(this.#o.tickMs);
    }
  }

  async #prune(): Promise<void> {
    if (Date.now() - this.#prunedAt < PRUNE_EVERY_MS) return;
    this.#prunedAt = Date.now();
    const pruned = await pruneDeliveries(this.#o.pool);
    if (pruned > 0) this.#o.logger.debug({ pruned }, 'finished forge status deliveries past their retention deleted');
  }

  /** True when a full batch was handled (more may be waiting). */
  async #drainFeed(): Promise<boolean> {
    const limit = this.#o.feedBatch ?? 100;
    for (let round = 0; round < 10 && !this.#stopped; round++) {
      const { rows } = await drainFeedBatch(this.#o.feed, limit);
      if (rows < limit) {
        if (await feedPending(this.#o.pool)) this.#wakeSoon();
        return false;
      }
    }
    return true;
  }

  async #sendDue(): Promise<boolean> {
    const o = this.#o;
    const exhausted = await failExhausted(o.pool, o.send.maxAttempts);
    if (exhausted > 0) o.logger.warn({ deliveries: exhausted }, 'forge status deliveries failed: their last attempt never finished (lease expired)');
    const limit = o.sendBatch ?? 32;
    const leased = await leaseDeliveries(o.pool, o.nodeId, o.leaseMs, o.send.maxAttempts, limit);
    if (leased.length === 0) return false;
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < leased.length) await this.#attempt(leased[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(o.concurrency ?? 8, leased.length) }, lane));
    return leased.length === limit;
  }

  async #attempt(d: LeasedDelivery): Promise<void> {
    const o = this.#o;
    const log = o.logger.child({ deliveryId: d.id, runId: d.run_id, target: d.target, sourceId: d.source_id });
    const finish = await sendDelivery(o.send, d);
    let recorded: boolean;
    try {
      recorded = await finishDelivery(o.pool, d, o.nodeId, finish);
    } catch (error) {
      log.warn({ err: messageOf(error) }, 'could not record a forge status attempt; its lease will expire and it is tried again');
      return;
    }
    if (!recorded) {
      log.info('forge status lease moved to another node while sending; that node records it');
      return;
    }
    switch (finish.status) {
      case 'delivered':
        this.#m.delivered.inc({ target: d.target });
        log.debug({ runStatus: d.run_status, attempt: d.attempts, statusCode: finish.statusCode, externalId: finish.externalId }, 'run status delivered');
        // The next delivery of the same run and target may go now.
        this.wake();
        break;
      case 'retry':
        this.#m.retried.inc({ target: d.target });
        log.warn({ attempt: d.attempts, retryInMs: finish.delayMs, statusCode: finish.statusCode, err: finish.error }, 'run status delivery failed; retrying');
        // Due later: a timer wakes the loop then, tick or no tick.
        setTimeout(() => this.wake(), finish.delayMs + 5).unref();
        break;
      case 'failed':
        this.#m.failed.inc({ target: d.target });
        log.error({ attempts: d.attempts, statusCode: finish.statusCode, err: finish.error }, 'run status delivery failed for good');
        // The next delivery of the same run and target may go now.
        this.wake();
        break;
      default:
        log.debug({ status: finish.status, reason: finish.reason }, 'run status delivery not sent');
        this.wake();
    }
  }
}
