// Replays an org's buffered deliveries, oldest first and one at a time, to its connected
// orchestrators; deletes each only after a definitive ack. `shed_retry_later` (or no candidate
// answering) leaves it in place and pauses the org's replay. Also sweeps expired deliveries
// into the delivery log.
import type { Logger } from 'pino';
import type { AckResult, WebhookDeliver } from '../../schemas/wire/relay.ts';
import type { BufferStore, BufferedDelivery } from './buffer-store.ts';
import type { OrchestratorPool } from './orchestrator-pool.ts';
import type { RelayMetrics } from './relay-metrics.ts';

export interface ReplayerOptions {
  buffer: BufferStore;
  pool: OrchestratorPool;
  metrics: RelayMetrics;
  logger: Logger;
  ackTimeoutMs: number;
  /** How often orgs with buffered deliveries and a connected orchestrator are retried. */
  intervalMs: number;
  /** How often expired deliveries are swept. */
  sweepIntervalMs: number;
}

/** Acks after which a buffered delivery is done with (a definitive answer). */
const FINAL: ReadonlySet<AckResult> = new Set(['accepted', 'duplicate', 'rejected_signature', 'rejected_unknown_source', 'rejected_misconfigured']);

export function deliverMessage(item: BufferedDelivery, replay: boolean): WebhookDeliver {
  return {
    type: 'webhook.deliver',
    deliveryRef: item.ref,
    orgId: item.orgId,
    routingKey: item.routingKey,
    providerKind: item.providerKind,
    ...(item.sourceId === undefined ? {} : { sourceId: item.sourceId }),
    deliveryId: item.deliveryId,
    headers: item.headers,
    bodyBase64: item.body.toString('base64'),
    receivedAt: item.receivedAt.toISOString(),
    clientIp: item.clientIp,
    replay,
  };
}

export class Replayer {
  readonly #options: ReplayerOptions;
  readonly #running = new Map<string, Promise<void>>();
  readonly #again = new Set<string>();
  readonly #pausedUntil = new Map<string, number>();
  readonly #timers: NodeJS.Timeout[] = [];
  #stopped = false;

  constructor(options: ReplayerOptions) {
    this.#options = options;
    const tick = setInterval(() => this.#tick(), options.intervalMs);
    const sweep = setInterval(() => void this.sweep(), options.sweepIntervalMs);
    tick.unref();
    sweep.unref();
    this.#timers.push(tick, sweep);
  }

  /** Starts (or re-runs after the current pass) the org's replay. */
  kick(orgId: string): void {
    if (this.#stopped) return;
    if (this.#running.has(orgId)) {
      this.#again.add(orgId);
      return;
    }
    const run = this.#replay(orgId)
      .catch((error: unknown) => this.#options.logger.error({ err: error, orgId }, 'buffer replay failed; will retry'))
      .finally(() => {
        this.#running.delete(orgId);
        this.#options.metrics.replayPasses.inc();
        if (this.#again.delete(orgId)) this.kick(orgId);
      });
    this.#running.set(orgId, run);
  }

  #tick(): void {
    for (const orgId of this.#options.buffer.orgsWithItems()) {
      if (this.#options.pool.hasCandidates(orgId)) this.kick(orgId);
    }
  }

  async #replay(orgId: string): Promise<void> {
    const { buffer, pool, logger, metrics } = this.#options;
    let after = 0n;
    // Bounded by the buffer's item budget: each pass moves `after` forward or returns.
    for (;;) {
      if (this.#stopped || (this.#pausedUntil.get(orgId) ?? 0) > Date.now()) return;
      if (!pool.hasCandidates(orgId)) return;
      const ids = await buffer.nextIds(orgId, 50, after);
      if (ids.length === 0) return;
      for (const id of ids) {
        if (this.#stopped || !pool.hasCandidates(orgId)) return;
        // One body in memory at a time: bodies can be 25 MiB.
        const item = await buffer.get(id);
        if (item === undefined) continue;
        await buffer.markAttempt(id);
        const ack = await pool.deliver(orgId, deliverMessage(item, true), this.#options.ackTimeoutMs, Number.POSITIVE_INFINITY);
        if (ack === undefined) {
          // Keep order: nothing after this one goes before it. The next tick retries.
          logger.info({ orgId, deliveryId: item.deliveryId }, 'buffered delivery not acked; replay paused');
          return;
        }
        metrics.replayed.inc({ result: ack.result });
        if (!FINAL.has(ack.result)) {
          const seconds = ack.retryAfterSeconds ?? 5;
          this.#pausedUntil.set(orgId, Date.now() + seconds * 1000);
          logger.info({ orgId, deliveryId: item.deliveryId, retryAfterSeconds: seconds }, 'orchestrator shed a replayed delivery; replay paused');
          setTimeout(() => this.kick(orgId), seconds * 1000).unref();
          return;
        }
        await buffer.remove(id, `replayed_${ack.result}`, ack.message);
        after = id;
      }
    }
  }

  async sweep(): Promise<number> {
    try {
      const expired = await this.#options.buffer.sweepExpired();
      for (const e of expired) {
        this.#options.metrics.bufferExpired.inc();
        this.#options.logger.warn({ orgId: e.orgId, deliveryId: e.deliveryId, routingKey: e.routingKey }, 'buffered delivery expired before any orchestrator took it; dropped');
      }
      return expired.length;
    } catch (error) {
      this.#options.logger.error({ err: error }, 'buffer expiry sweep failed; will retry');
      return 0;
    }
  }

  /** Stops new passes and waits for running ones (they end at their next ack or candidate loss). */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    await Promise.allSettled([...this.#running.values()]);
  }
}
