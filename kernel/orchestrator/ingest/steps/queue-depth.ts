// `queue.maxDepth` for a delivery's runs (docs/config.md): inside the runs' transaction (it sees
// their jobs), refuse when the queued jobs would exceed the limit. Counting the queue is one more
// statement in every run transaction and costs the database a scan of up to maxDepth + 1 index
// entries (10,001 by default): the deeper the queue, the slower every delivery, just when the
// system is busiest. So a node remembers its last count and skips the next ones while that count
// (at most REFRESH_MS old), plus the jobs this node has queued since, plus this delivery's, stays
// at or under (1 - SLACK) of the limit. Near the limit every delivery counts, exactly as before.
// Other nodes' jobs are seen at the next count (within REFRESH_MS); the slack absorbs them, and
// the limit was never exact across concurrent transactions anyway (each sees only committed jobs).
import type { CommonQueryMethods } from 'slonik';
import { sql } from '../../../services/db/index.ts';

/** A count is trusted this long (ms). */
export const REFRESH_MS = 1_000;
/** Skipping stops this far (a fraction of maxDepth) below the limit. */
export const SLACK = 0.1;

/** Shed reason of a delivery whose runs would take the queue past `queue.maxDepth`. */
export function queueFullReason(maxDepth: number, adding: number): string {
  return `queue.maxDepth (${maxDepth}) reached: the run(s) of this delivery would queue ${adding} more job(s); no run created, retried later (raise queue.maxDepth or add agents)`;
}

export interface DepthCheck {
  /** The shed reason, or null when the runs may stay. */
  reason: string | null;
  /** True when the queue was counted (this transaction's jobs included in the count). */
  counted: boolean;
}

export class QueueDepthGuard {
  readonly #refreshMs: number;
  readonly #slack: number;
  #last: { queued: number; at: number; maxDepth: number } | undefined;
  /** Jobs this node queued after the last count (deliveries that skipped it). */
  #since = 0;
  /** Counts made (tests, the bench). */
  counts = 0;

  constructor(options: { refreshMs?: number; slack?: number } = {}) {
    this.#refreshMs = options.refreshMs ?? REFRESH_MS;
    this.#slack = options.slack ?? SLACK;
  }

  /** Inside the runs' transaction, after their jobs were inserted. */
  async check(tx: CommonQueryMethods, maxDepth: number | undefined, adding: number): Promise<DepthCheck> {
    if (maxDepth === undefined || !this.needsCount(maxDepth, adding)) return { reason: null, counted: false };
    const now = performance.now();
    // The count stops just past the limit, so a long queue costs no more.
    const queued = Number(await tx.oneFirst(sql.unsafe`SELECT count(*) FROM (SELECT 1 FROM jobs WHERE status = 'queued' LIMIT ${maxDepth + 1}) q`));
    this.counts += 1;
    this.#last = { queued, at: now, maxDepth };
    this.#since = 0;
    return { reason: queued > maxDepth ? queueFullReason(maxDepth, adding) : null, counted: true };
  }

  /** Whether `check` would count the queue now (else it lets the runs stay without a statement). */
  needsCount(maxDepth: number | undefined, adding: number): boolean {
    if (maxDepth === undefined || adding === 0) return false;
    const last = this.#last;
    const fresh = last !== undefined && last.maxDepth === maxDepth && performance.now() - last.at < this.#refreshMs;
    return !(fresh && last.queued + this.#since + adding <= maxDepth * (1 - this.#slack));
  }

  /** After the commit of runs whose transaction skipped the count: their jobs join the estimate. */
  committed(check: DepthCheck, adding: number): void {
    if (!check.counted) this.#since += adding;
  }
}
