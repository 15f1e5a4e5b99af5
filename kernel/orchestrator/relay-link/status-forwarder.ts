// The relay status forwarder (docs/run-index.md): keeps the relay's run index current from the
// run status feed (status-feed.ts). Woken by NOTIFY on `svc_run_status` (the feed trigger sends
// one per change), by a bounded periodic tick (a missed notification, a link that came back) and
// by every `relay.welcome`. One pass at a time per node; several nodes share the feed through
// FOR UPDATE SKIP LOCKED.
//
// What reaches the relay, and when:
// - pending feed rows of the link's org are sent as soon as the link is up; a row is marked sent
//   only once the link accepted its message, so a disconnected link leaves it pending;
// - at every welcome, the current state of the org's runs updated since shortly before the link
//   last dropped (since `resendWindowMs` ago after a start) is sent again, at most
//   `resendMaxRuns` runs and `resendMaxJobs` jobs: a message the socket accepted just before a
//   drop may never have reached the relay. The relay keeps the newest `updatedAt`, so resends
//   are harmless;
// - rows of runs of other orgs (a link serves its platform token's org only) are marked handled
//   after a grace period, never sent: no relay connection of this node could take them.
// Pruning: rows both consumers handled are deleted an hour later (see feed-janitor.ts for a node
// without a relay link).
import type { Logger } from 'pino';
import type { OrchestratorToRelay } from '../../../schemas/wire/relay.ts';
import { createListener, REPORT_SETTLE_MS, settledWake, type DatabasePool, type Listener } from '../../services/db/index.ts';
import type { SvcMetrics } from '../../services/metrics.ts';
import { FEED_RETENTION_DEFAULTS, pruneFeed, type FeedRetention } from './feed-janitor.ts';
import { RUN_STATUS_CHANNEL, forwardPending, hasPending, jobIdsOfRuns, jobMessages, recentRunIds, runMessages } from './status-feed.ts';

/** What the forwarder needs of the relay link (a RelayLink fits). */
export interface StatusLink {
  readonly connected: boolean;
  /** The org the relay serves this link for (from the last welcome). */
  readonly orgId: string | undefined;
  send(message: OrchestratorToRelay): boolean;
}

export interface StatusForwarderOptions {
  pool: DatabasePool;
  /** For the LISTEN connection. */
  databaseUrl: string;
  logger: Logger;
  link: StatusLink;
  /** Feed rows claimed per transaction (default 200). */
  batchSize?: number;
  /** Periodic pass (default 5 s). */
  tickMs?: number;
  /** Resend after a welcome: how far back at most (default 24 h). */
  resendWindowMs?: number;
  /** Resend after a welcome: from this long before the link dropped (default 5 min; covers a dead link's heartbeat timeout). */
  resendMarginMs?: number;
  /** Resend after a welcome: at most this many runs (default 2000) and jobs (default 20000). */
  resendMaxRuns?: number;
  resendMaxJobs?: number;
  /** Retention of feed rows (feed-janitor.ts). */
  retention?: Partial<FeedRetention>;
  /**
   * Counts completed passes (`svc_orch_status_forward_passes_total`): a test reads "still
   * pending after a pass" from it instead of sleeping.
   */
  metrics?: SvcMetrics;
}

export const STATUS_FORWARDER_DEFAULTS = {
  batchSize: 200,
  tickMs: 5_000,
  resendWindowMs: 24 * 60 * 60_000,
  resendMarginMs: 5 * 60_000,
  resendMaxRuns: 2_000,
  resendMaxJobs: 20_000,
} as const;

/** Runs sent per read during a resend. */
const RESEND_CHUNK = 200;
/** Passes in a row that found a full batch: yield to the event loop between them. */
const MAX_BATCHES_PER_PASS = 50;
/**
 * Rows the forge status reporter holds (both consumers claim with FOR UPDATE SKIP LOCKED) are
 * skipped by a pass; the forwarder looks again this soon instead of at the next tick.
 */
const RETRY_SKIPPED_MS = 250;

/** The earlier of two resend starts; null is the window's start (the earliest). */
function earlier(a: Date | null | undefined, b: Date | null): Date | null {
  if (a === undefined) return b;
  if (a === null || b === null) return null;
  return a < b ? a : b;
}

export class StatusForwarder {
  readonly #options: StatusForwarderOptions;
  readonly #log: Logger;
  readonly #settings: typeof STATUS_FORWARDER_DEFAULTS;
  #listener: Listener | undefined;
  #timer: NodeJS.Timeout | undefined;
  #soon: NodeJS.Timeout | undefined;
  #stopped = false;
  #pass: Promise<void> | undefined;
  #again = false;
  readonly #feedWake = settledWake(() => this.wake(), REPORT_SETTLE_MS);
  /** Set at a welcome: resend runs updated since this time (null: since the window's start). */
  #resendSince: Date | null | undefined;
  /** When the link last dropped, if it has since this process started. */
  #droppedAt: Date | undefined;
  #prunedAt = 0;
  readonly #passes: { inc(): void } | undefined;

  constructor(options: StatusForwarderOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: 'status-forwarder' });
    this.#settings = {
      batchSize: options.batchSize ?? STATUS_FORWARDER_DEFAULTS.batchSize,
      tickMs: options.tickMs ?? STATUS_FORWARDER_DEFAULTS.tickMs,
      resendWindowMs: options.resendWindowMs ?? STATUS_FORWARDER_DEFAULTS.resendWindowMs,
      resendMarginMs: options.resendMarginMs ?? STATUS_FORWARDER_DEFAULTS.resendMarginMs,
      resendMaxRuns: options.resendMaxRuns ?? STATUS_FORWARDER_DEFAULTS.resendMaxRuns,
      resendMaxJobs: options.resendMaxJobs ?? STATUS_FORWARDER_DEFAULTS.resendMaxJobs,
    } as typeof STATUS_FORWARDER_DEFAULTS;
    this.#passes = options.metrics?.counter({ name: 'svc_orch_status_forward_passes_total', help: 'Relay status forwarder passes over the run status feed completed by this node' });
  }

  async start(): Promise<void> {
    this.#listener = await createListener({ url: this.#options.databaseUrl, logger: this.#log });
    // Status changes come in bursts under webhook load: one pass forwards a burst.
    await this.#listener.listen(RUN_STATUS_CHANNEL, () => this.#feedWake.wake());
    this.#listener.onGap(() => this.wake());
    this.#timer = setInterval(() => this.wake(), this.#settings.tickMs);
    this.#timer.unref();
    this.wake();
  }

  /** The link is (re)connected: send what is pending and resend recent runs. */
  welcome(): void {
    const since = this.#droppedAt === undefined ? null : new Date(this.#droppedAt.getTime() - this.#settings.resendMarginMs);
    this.#resendSince = earlier(this.#resendSince, since);
    this.wake();
  }

  /** The link dropped: remember when, for the resend at the next welcome. */
  disconnected(): void {
    this.#droppedAt = new Date();
  }

  /** Starts a pass, or asks the running one to go again. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#pass !== undefined) {
      this.#again = true;
      return;
    }
    this.#pass = this.#run().finally(() => (this.#pass = undefined));
  }

  async #run(): Promise<void> {
    do {
      this.#again = false;
      try {
        await this.#once();
      } catch (error) {
        // The next tick retries; rows stay pending.
        this.#log.warn({ err: error }, 'status forwarding pass failed');
        return;
      } finally {
        this.#passes?.inc();
      }
    } while (this.#again && !this.#stopped);
  }

  async #once(): Promise<void> {
    const { link, pool } = this.#options;
    const orgId = link.orgId;
    if (link.connected && orgId !== undefined) {
      if (this.#resendSince !== undefined) {
        const since = this.#resendSince;
        this.#resendSince = undefined;
        if (!(await this.#resend(orgId, since))) this.#resendSince = earlier(this.#resendSince, since);
      }
      for (let i = 0; i < MAX_BATCHES_PER_PASS && !this.#stopped; i++) {
        const result = await forwardPending(pool, orgId, (m) => link.send(m), this.#settings.batchSize);
        if (result.claimed > 0) this.#log.debug({ rows: result.claimed, messages: result.messages, sent: result.sent }, 'status rows forwarded');
        if (!result.sent) break;
        if (result.claimed < this.#settings.batchSize) {
          if (!this.#again && this.#soon === undefined && (await hasPending(pool, orgId))) {
            this.#soon = setTimeout(() => {
              this.#soon = undefined;
              this.wake();
            }, RETRY_SKIPPED_MS);
            this.#soon.unref();
          }
          break;
        }
        if (i === MAX_BATCHES_PER_PASS - 1) this.#again = true;
      }
    }
    // Rows of orgs this link does not serve (once the link's org is known) and old handled rows.
    const everyMs = this.#options.retention?.everyMs ?? FEED_RETENTION_DEFAULTS.everyMs;
    if (Date.now() - this.#prunedAt >= everyMs) {
      this.#prunedAt = Date.now();
      await pruneFeed(pool, this.#log, orgId === undefined ? { mode: 'wait' } : { mode: 'linked', orgId }, this.#options.retention);
    }
  }

  /** Sends the current state of the org's recent runs and their jobs; false when the link dropped meanwhile. */
  async #resend(orgId: string, since: Date | null): Promise<boolean> {
    const { link, pool } = this.#options;
    const s = this.#settings;
    const from = since ?? new Date(Date.now() - s.resendWindowMs);
    const runIds = await recentRunIds(pool, orgId, { since: from, windowMs: s.resendWindowMs, maxRuns: s.resendMaxRuns });
    let jobsLeft = s.resendMaxJobs;
    let messages = 0;
    for (let i = 0; i < runIds.length; i += RESEND_CHUNK) {
      const chunk = runIds.slice(i, i + RESEND_CHUNK);
      const jobIds = await jobIdsOfRuns(pool, chunk, jobsLeft);
      jobsLeft -= jobIds.length;
      for (const message of [...(await runMessages(pool, chunk)), ...(await jobMessages(pool, jobIds))]) {
        if (!link.send(message)) {
          this.#log.info({ sent: messages }, 'relay link dropped during the resend; it is redone at the next welcome');
          return false;
        }
        messages += 1;
      }
    }
    this.#log.info({ runs: runIds.length, messages, since: from.toISOString() }, 'recent runs resent to the relay');
    return true;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#soon);
    this.#feedWake.cancel();
    await this.#listener?.close();
    await this.#pass;
  }
}
