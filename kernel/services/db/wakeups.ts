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
import type { Logger } from 'pino';
import { sql, type DatabasePool } from 'slonik';
import { checkChannel } from './listen.ts';

export class WakeupSender {
  readonly #pool: DatabasePool;
  readonly #logger: Logger;
  readonly #pending = new Set<string>();
  #sending: Promise<void> | undefined;
  /** NOTIFY statements sent (tests, the bench). */
  statements = 0;

  constructor(pool: DatabasePool, logger: Logger) {
    this.#pool = pool;
    this.#logger = logger;
  }

  /** Wakes the listeners of these channels soon (after any statement already on its way). */
  wake(channels: Iterable<string>): void {
    for (const channel of channels) this.#pending.add(checkChannel(channel));
    if (this.#pending.size > 0 && this.#sending === undefined) this.#sending = this.#send();
  }

  async #send(): Promise<void> {
    while (this.#pending.size > 0) {
      const channels = [...this.#pending].sort();
      this.#pending.clear();
      try {
        await this.#pool.query(sql.unsafe`select ${sql.join(channels.map((c) => sql.fragment`pg_notify(${c}, '')`), sql.fragment`, `)}`);
        this.statements += 1;
      } catch (error) {
        // The listeners' periodic passes find the rows anyway, later.
        this.#logger.warn({ err: error, channels }, 'wake-up notification not sent');
      }
    }
    this.#sending = undefined;
  }

  /** Resolves once nothing is pending (at stop, before the pool ends). */
  async idle(): Promise<void> {
    while (this.#sending !== undefined) await this.#sending;
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
