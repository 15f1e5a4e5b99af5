// The delivery loop of one node: woken by `svc_internal_events` notifications (and a poll, since a
// notification sent while the listener reconnected is lost), it leases due events in batches and
// delivers them with bounded concurrency. A second timer releases leases whose node died and
// re-publishes their notification, so another node picks them up.
import type { Logger } from 'pino';
import type { Counter, Gauge, Histogram } from 'prom-client';
import { messageOf } from '../../../core/errors.ts';
import { notify, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { SvcMetrics } from '../../services/metrics.ts';
import { Type } from 'typebox';
import { expireLeases, failDelivery, leaseEvents, retryDelayMs, type LeasedEvent } from './delivery-store.ts';
import { INTERNAL_EVENTS_CHANNEL } from './emit.ts';
import { LeaseLost, type BatchOutcome, type DeliveryResult } from './consumer.ts';

export interface WorkerOptions {
  pool: DatabasePool;
  logger: Logger;
  metrics: SvcMetrics;
  nodeId: string;
  leaseDurationMs: number;
  maxDispatchAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  deliver(event: LeasedEvent): Promise<DeliveryResult>;
  /** When set, deliveries are prepared one by one and committed in chunks (used instead of `deliver`). */
  batch?: BatchDelivery<unknown>;
  /** Events leased per round (default 64) and delivered at once (default 8). */
  batchSize?: number;
  concurrency?: number;
  /** Poll interval when no notification arrives (default 2000 ms). */
  pollMs?: number;
}

/** Prepared deliveries per commit (one transaction, a savepoint each). */
const COMMIT_CHUNK = 32;

export interface BatchDelivery<P> {
  prepare(event: LeasedEvent): Promise<P>;
  commit(prepared: readonly P[]): Promise<BatchOutcome[]>;
}

export interface EventMetrics {
  delivered: Counter;
  retried: Counter;
  dlq: Counter;
  dlqSize: Gauge;
  leaseExpirations: Counter;
  latency: Histogram;
}

export function eventMetrics(metrics: SvcMetrics): EventMetrics {
  return {
    delivered: metrics.counter({ name: 'svc_orch_events_delivered_total', help: 'Internal events delivered (processed) by this node.' }),
    retried: metrics.counter({ name: 'svc_orch_events_retried_total', help: 'Internal event deliveries that threw and were scheduled for a retry.' }),
    dlq: metrics.counter({ name: 'svc_orch_event_dlq_total', help: 'Internal events moved to the dead-letter queue (exhausted retries) by this node.' }),
    dlqSize: metrics.gauge({ name: 'svc_orch_event_dlq_size', help: 'Internal events in the dead-letter queue (whole cluster).' }),
    leaseExpirations: metrics.counter({ name: 'svc_orch_event_lease_expirations_total', help: 'Event leases released because their node stopped before finishing.' }),
    latency: metrics.histogram({
      name: 'svc_orch_event_delivery_latency_seconds',
      help: 'From an internal event being stored to its delivery (runs created) on this node.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    }),
  };
}

const DlqCount = Type.Object({ n: Type.Number() });

export class EventWorker {
  readonly #o: WorkerOptions;
  readonly #m: EventMetrics;
  readonly #batch: number;
  readonly #concurrency: number;
  #wake: (() => void) | null = null;
  #woken = false;
  #stopped = false;
  #loop: Promise<void> | null = null;
  #sweeper: NodeJS.Timeout | null = null;
  #sweeping: Promise<void> | null = null;
  #passes = 0;

  constructor(options: WorkerOptions) {
    this.#o = options;
    this.#m = eventMetrics(options.metrics);
    this.#batch = options.batchSize ?? 64;
    this.#concurrency = options.concurrency ?? 8;
  }

  start(): void {
    this.#loop = this.#run();
    // Expired leases are looked for a few times per lease period (bounded to 0.25-5 s).
    const sweepMs = Math.min(5_000, Math.max(250, Math.floor(this.#o.leaseDurationMs / 4)));
    this.#sweeper = setInterval(() => {
      if (this.#sweeping === null) this.#sweeping = this.sweep().finally(() => (this.#sweeping = null));
    }, sweepMs);
    this.#sweeper.unref();
  }

  /**
   * Passes of the delivery loop completed: each leased what was due and delivered it (or found
   * nothing, or failed to lease). A test asserts "nothing leased it" after two more passes (the
   * second began after the state it checks) instead of after a sleep.
   */
  get passes(): number {
    return this.#passes;
  }

  /** A notification (or anything else) says events may be due. */
  wake(): void {
    this.#woken = true;
    this.#wake?.();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.wake();
    await this.#loop;
    await this.#sweeping;
  }

  /** Releases dead nodes' leases (re-publishing them) and refreshes the DLQ gauge. */
  async sweep(): Promise<void> {
    try {
      const expired = await expireLeases(this.#o.pool, this.#o.maxDispatchAttempts);
      if (expired.length > 0) {
        this.#m.leaseExpirations.inc(expired.length);
        const released = expired.filter((e) => !e.dlq);
        const dead = expired.filter((e) => e.dlq);
        if (dead.length > 0) {
          this.#m.dlq.inc(dead.length);
          this.#o.logger.error({ events: dead.map((e) => e.id), nodes: [...new Set(dead.map((e) => e.lease_node))] }, 'event leases expired on their last attempt; events moved to the dead-letter queue (exhausted_retries)');
        }
        if (released.length > 0) {
          this.#o.logger.warn({ events: released.map((e) => e.id), nodes: [...new Set(released.map((e) => e.lease_node))] }, 'event leases expired; events released for redelivery');
          for (const e of released) await notify(this.#o.pool, INTERNAL_EVENTS_CHANNEL, { id: e.id, name: e.name, orgId: e.org_id });
          this.wake();
        }
      }
      const dlq = await this.#o.pool.one(sqlTyped(DlqCount)`SELECT count(*)::int AS n FROM internal_events WHERE dlq_reason IS NOT NULL`);
      this.#m.dlqSize.set(dlq.n);
    } catch (error) {
      this.#o.logger.warn({ err: messageOf(error) }, 'event lease sweep failed');
    }
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
    const pollMs = this.#o.pollMs ?? 2_000;
    while (!this.#stopped) {
      this.#woken = false;
      let leased: readonly LeasedEvent[] = [];
      try {
        leased = await leaseEvents(this.#o.pool, this.#o.nodeId, this.#o.leaseDurationMs, this.#batch);
      } catch (error) {
        this.#o.logger.warn({ err: messageOf(error) }, 'leasing internal events failed');
        this.#passes += 1;
        await this.#sleep(pollMs);
        continue;
      }
      if (leased.length > 0) await this.#deliverAll(leased);
      this.#passes += 1;
      // A full batch: more are likely waiting. Otherwise wait for a notification or the poll.
      if (leased.length < this.#batch) await this.#sleep(pollMs);
    }
  }

  async #deliverAll(events: readonly LeasedEvent[]): Promise<void> {
    if (this.#o.batch !== undefined) return this.#deliverBatched(events, this.#o.batch);
    await this.#lanes(events, async (event) => {
      try {
        this.#succeeded(event, await this.#o.deliver(event));
      } catch (error) {
        await this.#failed(event, error);
      }
    });
  }

  async #lanes<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < items.length) await work(items[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(this.#concurrency, items.length) }, lane));
  }

  /**
   * Reads and matches with bounded concurrency, then commits the prepared deliveries in chunks,
   * one transaction each: a busy node pays one commit per chunk instead of one per event.
   */
  async #deliverBatched(events: readonly LeasedEvent[], batch: BatchDelivery<unknown>): Promise<void> {
    const prepared: Array<{ event: LeasedEvent; prepared: unknown }> = [];
    await this.#lanes(events, async (event) => {
      try {
        prepared.push({ event, prepared: await batch.prepare(event) });
      } catch (error) {
        await this.#failed(event, error);
      }
    });
    const chunks: Array<typeof prepared> = [];
    for (let i = 0; i < prepared.length; i += COMMIT_CHUNK) chunks.push(prepared.slice(i, i + COMMIT_CHUNK));
    await this.#lanes(chunks, async (chunk) => {
      let outcomes: BatchOutcome[];
      try {
        outcomes = await batch.commit(chunk.map((c) => c.prepared));
      } catch (error) {
        for (const c of chunk) await this.#failed(c.event, error);
        return;
      }
      for (const [i, outcome] of outcomes.entries()) {
        const event = chunk[i]!.event;
        if (outcome.ok) this.#succeeded(event, outcome.result);
        else await this.#failed(event, outcome.error);
      }
    });
  }

  #succeeded(event: LeasedEvent, result: DeliveryResult): void {
    this.#m.delivered.inc();
    this.#m.latency.observe(Math.max(0, (Date.now() - event.created_ms) / 1000));
    this.#o.logger.debug({ eventId: event.id, name: event.name, runs: result.runIds }, 'internal event delivered');
  }

  async #failed(event: LeasedEvent, error: unknown): Promise<void> {
    const log = this.#o.logger;
    if (error instanceof LeaseLost) {
      log.info({ eventId: event.id }, 'event lease lost while delivering; the node holding it now delivers it');
      return;
    }
    const delayMs = retryDelayMs(event.attempts, this.#o.retryBaseMs, this.#o.retryMaxMs);
    const result = await failDelivery(this.#o.pool, event, this.#o.nodeId, messageOf(error), { maxAttempts: this.#o.maxDispatchAttempts, delayMs }).catch((e: unknown) => {
      log.warn({ err: messageOf(e), eventId: event.id }, 'could not record a failed event delivery; its lease will expire');
      return 'lost' as const;
    });
    if (result === 'dlq') {
      this.#m.dlq.inc();
      log.error({ eventId: event.id, name: event.name, attempts: event.attempts, err: messageOf(error) }, 'internal event moved to the dead-letter queue (exhausted_retries)');
    } else if (result === 'retry') {
      this.#m.retried.inc();
      log.warn({ eventId: event.id, name: event.name, attempts: event.attempts, retryInMs: delayMs, err: messageOf(error) }, 'internal event delivery failed; retrying');
      // The retry is due later: a timer wakes the loop then, poll or no poll.
      setTimeout(() => this.wake(), delayMs + 5).unref();
    }
  }
}
