// Wake-ups sent after the commit instead of inside a hot transaction. PostgreSQL orders the
// notification queue with one lock for the whole cluster ("database 0"), taken when a transaction
// that issued NOTIFY commits and held until that commit's WAL flush is done. So transactions that
// NOTIFY commit one flush at a time, never in a shared group flush: at a few hundred a second on
// one disk they queue behind each other (docs/benchmarks.md, 2026-11-25). A path that commits
// that often collects its empty-payload wake-ups (`collectWakeups`) and hands them to a
// `WakeupSender` after the commit: the sender keeps at most one NOTIFY statement in flight and
// folds every channel asked for meanwhile into the next one, so many commits cost one wake-up.
//
// What a listener may assume is unchanged: a wake-up comes after the rows it is about are
// visible. What changes: one lost between a commit and the send (the process died in between)
// is never sent; every listener that is woken this way also runs on a periodic tick.
//
// Given the database's URL, the sender also wakes this process's own listeners of it at once,
// in-process (`wakeLocalListeners`), and then lets the NOTIFY for the other processes linger:
// at most one statement per `lingerMs`, the first after a quiet spell sent at once. At 200
// webhooks/s a NOTIFY followed nearly every commit (one statement folded ~1.06 commits): a round
// trip, a commit with its WAL flush, and a wake of every LISTENing backend, each costing CPU on a
// machine whose cores were the bottleneck (issue 19). The local dispatcher no longer waits for
// that round trip; another node's hears of a burst's jobs up to `lingerMs` later.
import type { Logger } from 'pino';
import { sql, type DatabasePool } from 'slonik';
import { checkChannel, LOCAL_WAKE_PREFIX, wakeLocalListeners } from './listen.ts';

/** The orchestrator's linger for wake-ups to other processes (WakeupSender's `lingerMs`). */
export const WAKEUP_LINGER_MS = 25;

export interface WakeupSenderOptions {
  /** The pool's database URL: this process's listeners of it are woken in-process, at once. */
  url?: string;
  /** Least time between two NOTIFY statements (default 0: the next one as soon as the last is done). */
  lingerMs?: number;
}

export class WakeupSender {
  readonly #pool: DatabasePool;
  readonly #logger: Logger;
  readonly #url: string | undefined;
  readonly #lingerMs: number;
  readonly #pending = new Set<string>();
  /** Tokens of this process's connections already woken for what is pending. */
  readonly #wokenHere = new Set<string>();
  #sending: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lastSentAt = -Infinity;
  /** NOTIFY statements sent (tests, the bench). */
  statements = 0;

  constructor(pool: DatabasePool, logger: Logger, options: WakeupSenderOptions = {}) {
    this.#pool = pool;
    this.#logger = logger;
    this.#url = options.url;
    this.#lingerMs = Math.max(0, options.lingerMs ?? 0);
  }

  /** Wakes the listeners of these channels: this process's at once (given the URL), others' soon. */
  wake(channels: Iterable<string>): void {
    const asked = [...channels].map(checkChannel);
    if (asked.length === 0) return;
    for (const channel of asked) this.#pending.add(channel);
    if (this.#url !== undefined) for (const token of wakeLocalListeners(this.#url, asked)) this.#wokenHere.add(token);
    this.#kick();
  }

  /** Starts the next statement now, or when the linger since the last one ends. */
  #kick(): void {
    if (this.#pending.size === 0 || this.#sending !== undefined || this.#timer !== undefined) return;
    const wait = this.#lastSentAt + this.#lingerMs - performance.now();
    if (wait > 0) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#kick();
      }, wait);
      return;
    }
    this.#sending = this.#sendOne().finally(() => {
      this.#sending = undefined;
      this.#kick();
    });
  }

  async #sendOne(): Promise<void> {
    const channels = [...this.#pending].sort();
    const payload = this.#wokenHere.size > 0 ? `${LOCAL_WAKE_PREFIX}${[...this.#wokenHere].join(',')}` : '';
    this.#pending.clear();
    this.#wokenHere.clear();
    this.#lastSentAt = performance.now();
    try {
      await this.#pool.query(sql.unsafe`select ${sql.join(channels.map((c) => sql.fragment`pg_notify(${c}, ${payload})`), sql.fragment`, `)}`);
      this.statements += 1;
    } catch (error) {
      // The listeners' periodic passes find the rows anyway, later.
      this.#logger.warn({ err: error, channels }, 'wake-up notification not sent');
    }
  }

  /** Sends what lingers now and resolves once nothing is pending (at stop, before the pool ends). */
  async idle(): Promise<void> {
    for (;;) {
      if (this.#timer !== undefined) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#lastSentAt = -Infinity;
        this.#kick();
      }
      if (this.#sending === undefined) return;
      await this.#sending;
    }
  }
}

/**
 * How long a status-feed wake-up waits for others to share its pass. Every run and job created
 * under webhook load notifies the feed; each consumer's pass is several statements, and passes
 * for one row each were a large share of the database round trips at 200 webhooks/s (issue 19).
 */
export const FEED_SETTLE_MS = 50;

/**
 * The same for consumers that only report status outward (the relay's run index, commit
 * statuses on the forge): nothing in the run waits for them, so a longer wait folds more of a
 * burst into one pass (at 200 webhooks/s, about five passes a second instead of twenty).
 */
export const REPORT_SETTLE_MS = 200;

/**
 * A wake-up handler whose calls within `ms` of the first share one call of `fn`: the listener of
 * a busy channel runs one pass for a burst instead of one per notification. `cancel` on stop.
 */
export function settledWake(fn: () => void, ms: number): { wake(): void; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  return {
    wake() {
      if (cancelled || timer !== undefined) return;
      timer = setTimeout(() => {
        timer = undefined;
        fn();
      }, ms);
      timer.unref();
    },
    cancel() {
      cancelled = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
}
