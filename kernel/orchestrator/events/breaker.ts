// The circuit breaker in front of the event store (spec "Delivery guarantees" 2): chain depth and
// a per-org rate, both checked before the write. A refusal is recorded in
// `internal_event_refusals` with its reason, so an operator sees why an event never arrived.
//
// Chain depth: a run a webhook, a re-run or a schedule started is at depth 0; a run an event
// started is one deeper than that event; an event a run emits (or its completion) carries the
// run's depth. So `A emits → B runs → B emits → …` grows by one per hop, and a workflow that
// triggers on its own completion stops at `maxChainDepth` instead of running forever.
import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from 'slonik';
import { NotAllowedError, RateLimitedError } from '../../../core/errors.ts';
import { sql } from '../../services/db/index.ts';

export interface EventLimits {
  maxChainDepth: number;
  rateLimitPerOrgPerMinute: number;
}

export type RefusalReason = 'chain_depth' | 'rate_limit';

export interface Refusal {
  orgId: string;
  name: string;
  runId: string | null;
  jobId: string | null;
  chainDepth: number;
  reason: RefusalReason;
  detail: string;
}

/** The chain-depth half: throws when an event at `depth` may not be stored. */
export function checkChainDepth(name: string, depth: number, limits: Pick<EventLimits, 'maxChainDepth'>): void {
  if (depth > limits.maxChainDepth) {
    throw new NotAllowedError(
      'SVC_ERR_EVENT_CHAIN_TOO_DEEP',
      `event "${name}" refused by the circuit breaker: it would be ${depth} events deep, the limit is ${limits.maxChainDepth} (events.maxChainDepth)`,
      { details: { reason: 'chain_depth', depth, maxChainDepth: limits.maxChainDepth } },
    );
  }
}

/**
 * The per-org rate half: a sliding one-minute window per org on this node (a cluster of N nodes
 * admits at most N times the limit; the limit guards a node's delivery loop against one org's
 * runaway emitter, which a per-node bound does).
 */
export class OrgEventRate {
  readonly #windows = new Map<string, number[]>();
  readonly #limit: number;
  readonly #now: () => number;

  constructor(limit: number, now: () => number = Date.now) {
    this.#limit = limit;
    this.#now = now;
  }

  /** Takes one slot for `orgId` or throws RateLimitedError (nothing taken). */
  take(orgId: string, name: string): void {
    const now = this.#now();
    const window = (this.#windows.get(orgId) ?? []).filter((t) => now - t < 60_000);
    if (window.length >= this.#limit) {
      this.#windows.set(orgId, window);
      throw new RateLimitedError(
        'SVC_ERR_EVENT_RATE_LIMITED',
        `event "${name}" refused by the circuit breaker: org ${orgId} stored ${window.length} events in the last minute, the limit is ${this.#limit}`,
        Math.max(1, Math.ceil((60_000 - (now - window[0]!)) / 1000)),
        { details: { reason: 'rate_limit', count: window.length, limit: this.#limit } },
      );
    }
    window.push(now);
    this.#windows.set(orgId, window);
    // Orgs that went quiet are forgotten, so the map holds only active emitters.
    if (this.#windows.size > 10_000) for (const [org, times] of this.#windows) if (times.every((t) => now - t >= 60_000)) this.#windows.delete(org);
  }
}

/** Records a refusal (on `db`: the emitter's transaction when it commits anyway, else the pool). */
export async function recordRefusal(db: CommonQueryMethods, refusal: Refusal): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO internal_event_refusals (id, org_id, name, run_id, job_id, chain_depth, reason, detail)
    VALUES (${randomUUID()}, ${refusal.orgId}, ${refusal.name.slice(0, 200)}, ${refusal.runId}, ${refusal.jobId}, ${refusal.chainDepth},
      ${refusal.reason}, ${refusal.detail.slice(0, 1000)})`);
}
