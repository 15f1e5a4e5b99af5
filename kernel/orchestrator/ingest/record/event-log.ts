// Step 16, payload half, off the acknowledgement path. The record is the durable part of a
// delivery; the gzipped body at `event-log/<org_id>/<delivery_id>.json.gz` is a convenience for
// the dashboard. Writing it (mkdir, write, fsync, rename, fsync dir on filesystem storage; a PUT
// on S3) before the ack cost more than the rest of a no-match delivery, and a filesystem put
// with fsync tops out near 900/s on one disk. So the record is committed saying the payload is
// omitted (`storage_failed`) with its intended `payload_key`; the object is written after the
// ack, and confirmed writes flip the records to `payload_omitted = false` in batches. A write
// that fails, a full backlog, or a crash before the write leaves the failure recorded (the
// relay keeps nothing after the ack, so the body is then gone: recorded, never silently lost).
// A confirmation the database refuses (it restarted, a connection dropped) is kept and tried
// again with back-off: otherwise a database blip would leave stored objects recorded as lost.
import { promisify } from 'node:util';
import { gzip as gzipCallback, gzipSync } from 'node:zlib';
import type { Logger } from 'pino';
import type { StorageExtensionPoint } from '../../../../core/extension-points/storage.ts';
import { PLAN_EACH_EXECUTION, sql, type DatabasePool } from '../../../services/db/index.ts';
import { messageOf } from '../../../../core/errors.ts';
import { eventLogKey, type PayloadOutcome } from './delivery-record.ts';
import type { IncomingDelivery } from '../types.ts';

export interface EventLogWriterOptions {
  storage: StorageExtensionPoint | undefined;
  pool: DatabasePool;
  logger: Logger;
  maxPayloadBytes: number;
  /** Object writes at once (the libuv pool has 4 threads; more only queues there). */
  concurrency?: number;
  /** Bodies held waiting for their write; past it a payload is recorded omitted. */
  maxQueuedBytes?: number;
  /** Longest a confirmation waits to be batched with others. */
  flushMs?: number;
  /**
   * True while deliveries are being processed: writes then run one at a time so a burst's acks
   * get the CPU and the disk first (the backlog absorbs the burst and drains when it ends; idle,
   * concurrent puts share their directory fsync). Two at a time while busy, or batches of a
   * burst's objects written together every 100 ms, cost less CPU but measured a worse tail at
   * 200 webhooks/s (issue 19: their fsyncs came in bursts the database's commits queued behind).
   */
  busy?: () => boolean;
}

interface Pending extends Outcome {
  body: Buffer;
}

/** A finished write waiting to be recorded (the body is no longer held). */
interface Outcome {
  orgId: string;
  deliveryId: string;
  key: string;
}

const CONFIRM_BATCH = 500;
/** Outcomes kept while the database refuses them; past it the oldest are dropped (their records keep saying storage_failed). */
const MAX_HELD_OUTCOMES = 100_000;
const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 30_000;
// A body of several MB took tens of ms to compress synchronously, a stall every delivery in
// flight waited for: large bodies go to the libuv pool. Small ones (most webhooks) stay
// synchronous: well under a millisecond, cheaper than a zlib stream and a pool round trip each.
const gzipAsync = promisify(gzipCallback);
const SYNC_GZIP_MAX_BYTES = 64 * 1024;
const gzip = (body: Buffer): Promise<Buffer> | Buffer => (body.length <= SYNC_GZIP_MAX_BYTES ? gzipSync(body, deflateSizing(body.length)) : gzipAsync(body));

/**
 * A deflate context sized to the body. Each context's memory, (1 << (windowBits + 2)) +
 * (1 << (memLevel + 9)) bytes, is 256 KB at zlib's defaults and was allocated and freed for
 * every payload (~50 MB/s at 200 webhooks/s, reported to V8 as external memory); sized to a
 * typical body it is a few KB. Measured alone it did not change how often the orchestrator ran
 * full collections (that was the heap growing factor, bin/launch.ts). A window no larger than
 * the body compresses it the same; the output is ordinary gzip any reader inflates.
 */
function deflateSizing(bytes: number): { windowBits: number; memLevel: number } {
  const windowBits = Math.min(15, Math.max(9, Math.ceil(Math.log2(bytes + 262))));
  return { windowBits, memLevel: Math.min(8, Math.max(2, windowBits - 7)) };
}

export class EventLogWriter {
  readonly #storage: StorageExtensionPoint | undefined;
  readonly #pool: DatabasePool;
  readonly #logger: Logger;
  readonly #maxPayloadBytes: number;
  readonly #concurrency: number;
  readonly #maxQueuedBytes: number;
  readonly #flushMs: number;
  readonly #busy: () => boolean;
  #idleTimer: NodeJS.Timeout | undefined;
  readonly #queue: Pending[] = [];
  #queuedBytes = 0;
  #reserved = 0;
  #writing = 0;
  #confirmed: Outcome[] = [];
  #failed: Outcome[] = [];
  /** Back-off before the next flush after the database refused one (0: none). */
  #retryMs = 0;
  #flushTimer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> | undefined;
  #idle: Array<() => void> = [];
  /** Set by `close` at stop: no more writes, flushes or retries. */
  #closed = false;
  /** Objects written and confirmed, and writes that failed (tests, metrics). */
  written = 0;
  failures = 0;
  /** Outcomes dropped because too many waited for the database (tests). */
  droppedOutcomes = 0;

  constructor(options: EventLogWriterOptions) {
    this.#storage = options.storage;
    this.#pool = options.pool;
    this.#logger = options.logger;
    this.#maxPayloadBytes = options.maxPayloadBytes;
    this.#concurrency = Math.max(1, options.concurrency ?? 4);
    this.#maxQueuedBytes = options.maxQueuedBytes ?? 64 * 1024 * 1024;
    this.#flushMs = options.flushMs ?? 20;
    this.#busy = options.busy ?? (() => false);
  }

  /**
   * What the record says about the payload before the ack. A payload that will be written holds
   * a reservation in the backlog until `write` or `cancel`.
   */
  plan(delivery: IncomingDelivery): PayloadOutcome {
    const bytes = delivery.body.length;
    if (bytes > this.#maxPayloadBytes) {
      return { key: null, bytes, omitted: true, reason: 'size_exceeded', detail: `${bytes} bytes is over eventLog.maxPayloadBytes ${this.#maxPayloadBytes}` };
    }
    if (this.#storage === undefined) return { key: null, bytes, omitted: true, reason: 'storage_failed', detail: 'no storage is configured' };
    if (this.#queuedBytes + this.#reserved + bytes > this.#maxQueuedBytes) {
      return { key: null, bytes, omitted: true, reason: 'storage_failed', detail: 'event-log write backlog is full' };
    }
    this.#reserved += bytes;
    return { key: eventLogKey(delivery.orgId, delivery.deliveryId), bytes, omitted: true, reason: 'storage_failed', detail: 'pending' };
  }

  /** The record did not commit (duplicate, failure): drop the reservation. */
  cancel(plan: PayloadOutcome): void {
    if (plan.key !== null) this.#reserved = Math.max(0, this.#reserved - plan.bytes);
  }

  /** After the record committed: queue the object write. */
  write(delivery: IncomingDelivery, plan: PayloadOutcome): void {
    if (plan.key === null) return;
    this.#reserved = Math.max(0, this.#reserved - plan.bytes);
    if (this.#closed) return;
    this.#queue.push({ orgId: delivery.orgId, deliveryId: delivery.deliveryId, key: plan.key, body: delivery.body });
    this.#queuedBytes += delivery.body.length;
    this.#pump();
  }

  #pump(): void {
    const limit = this.#busy() ? 1 : this.#concurrency;
    if (limit < this.#concurrency && this.#queue.length > 0 && this.#idleTimer === undefined) {
      // Re-check soon: when the burst ends, the full concurrency drains the backlog.
      this.#idleTimer = setTimeout(() => {
        this.#idleTimer = undefined;
        this.#pump();
      }, 50);
      this.#idleTimer.unref();
    }
    while (this.#writing < limit && this.#queue.length > 0) {
      const item = this.#queue.shift()!;
      this.#writing += 1;
      void this.#writeOne(item).finally(() => {
        this.#writing -= 1;
        this.#queuedBytes -= item.body.length;
        this.#pump();
        this.#checkIdle();
      });
    }
  }

  async #writeOne(item: Pending): Promise<void> {
    try {
      await this.#storage!.put(item.key, await gzip(item.body), { contentType: 'application/gzip' });
      this.#confirmed.push({ orgId: item.orgId, deliveryId: item.deliveryId, key: item.key });
    } catch (error) {
      this.failures += 1;
      this.#logger.warn({ err: error, orgId: item.orgId, deliveryId: item.deliveryId }, `event-log payload not stored: ${messageOf(error)}`);
      this.#failed.push({ orgId: item.orgId, deliveryId: item.deliveryId, key: item.key });
    }
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushTimer !== undefined || this.#closed) return;
    const due = this.#retryMs > 0 ? this.#retryMs : this.#confirmed.length + this.#failed.length >= CONFIRM_BATCH ? 0 : this.#flushMs;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      void this.#flush();
    }, due);
  }

  async #flush(): Promise<void> {
    if (this.#flushing !== undefined) {
      await this.#flushing;
      if (this.#confirmed.length + this.#failed.length > 0) this.#scheduleFlush();
      return;
    }
    const confirmed = this.#confirmed.splice(0, CONFIRM_BATCH);
    const failed = this.#failed.splice(0, CONFIRM_BATCH);
    this.#flushing = this.#apply(confirmed, failed).finally(() => {
      this.#flushing = undefined;
      if (this.#confirmed.length + this.#failed.length > 0) this.#scheduleFlush();
      this.#checkIdle();
    });
    await this.#flushing;
  }

  async #apply(confirmed: Outcome[], failed: Outcome[]): Promise<void> {
    try {
      if (confirmed.length > 0) {
        // Only a record still pointing at this object (a later replay may have re-planned it).
        await this.#pool.query(sql.unsafe`${PLAN_EACH_EXECUTION}
          update webhook_deliveries d set payload_omitted = false, payload_omitted_reason = null
          from unnest(${sql.array(confirmed.map((c) => c.orgId), 'text')}, ${sql.array(confirmed.map((c) => c.deliveryId), 'text')},
            ${sql.array(confirmed.map((c) => c.key), 'text')}) as u(org_id, delivery_id, key)
          where d.org_id = u.org_id and d.delivery_id = u.delivery_id and d.payload_key = u.key`);
        this.written += confirmed.length;
        confirmed = [];
      }
      if (failed.length > 0) {
        await this.#pool.query(sql.unsafe`${PLAN_EACH_EXECUTION}
          update webhook_deliveries d set payload_key = null, payload_omitted = true, payload_omitted_reason = 'storage_failed'
          from unnest(${sql.array(failed.map((c) => c.orgId), 'text')}, ${sql.array(failed.map((c) => c.deliveryId), 'text')},
            ${sql.array(failed.map((c) => c.key), 'text')}) as u(org_id, delivery_id, key)
          where d.org_id = u.org_id and d.delivery_id = u.delivery_id and d.payload_key = u.key and d.payload_omitted`);
      }
      this.#retryMs = 0;
    } catch (error) {
      // Kept for the next flush (after a back-off): the objects are stored whatever the
      // database says now. Until then the records keep saying `storage_failed`.
      this.#retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MIN_MS, this.#retryMs * 2));
      this.#confirmed.unshift(...confirmed);
      this.#failed.unshift(...failed);
      const held = this.#confirmed.length + this.#failed.length;
      if (held > MAX_HELD_OUTCOMES) {
        // Memory stays bounded through a long outage: the oldest go (their records keep saying storage_failed).
        const over = held - MAX_HELD_OUTCOMES;
        const fromConfirmed = Math.min(over, this.#confirmed.length);
        this.#confirmed.splice(0, fromConfirmed);
        this.#failed.splice(0, over - fromConfirmed);
        this.droppedOutcomes += over;
      }
      this.#logger.warn(
        { err: error, confirmed: confirmed.length, failed: failed.length, held: Math.min(held, MAX_HELD_OUTCOMES), retryInMs: this.#retryMs },
        'event-log confirmations not recorded; kept and retried',
      );
    }
  }

  get pending(): number {
    return this.#queue.length + this.#writing + this.#confirmed.length + this.#failed.length + (this.#flushing ? 1 : 0);
  }

  #checkIdle(): void {
    if (this.pending > 0 || this.#flushTimer !== undefined) return;
    for (const resolve of this.#idle.splice(0)) resolve();
  }

  /**
   * At stop, after `drain` and before the pool closes: no further writes, flushes or retries.
   * Objects not yet written and confirmations the database has not taken are left as a crash
   * would leave them (their records say `storage_failed`). Without it a confirmation still
   * waiting for a refused database kept its retry timer armed after the pool had closed, and the
   * stopped orchestrator's process never ended (found by bench/ingest.ts dropping its database
   * at the end). Returns how many deliveries were left that way.
   */
  close(): number {
    this.#closed = true;
    clearTimeout(this.#flushTimer);
    clearTimeout(this.#idleTimer);
    this.#flushTimer = undefined;
    this.#idleTimer = undefined;
    const left = this.#queue.length + this.#writing + this.#confirmed.length + this.#failed.length;
    for (const item of this.#queue.splice(0)) this.#queuedBytes -= item.body.length;
    this.#confirmed = [];
    this.#failed = [];
    for (const resolve of this.#idle.splice(0)) resolve();
    return left;
  }

  /** Resolves when every queued write is done and confirmed (tests; stop). Bounded by `timeoutMs`. */
  async drain(timeoutMs = 10_000): Promise<boolean> {
    if (this.#flushTimer !== undefined) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = undefined;
      void this.#flush();
    }
    if (this.pending === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      new Promise<boolean>((resolve) => this.#idle.push(() => resolve(true))),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    return done;
  }
}
