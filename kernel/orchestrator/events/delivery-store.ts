// The delivery state machine of internal events (spec "Internal event delivery"), as SQL over the
// lease columns of `internal_events`. Every transition is one guarded statement, so any number of
// nodes may run it at once:
//
//   pending  → leased     lease(): attempts + 1, claimed_at, lease_node, lease_until (SKIP LOCKED)
//   leased   → processed  (the consumer's transaction, markProcessed) only while the lease is ours
//   leased   → pending    fail(): next_attempt_at = now + backoff (full jitter), lease cleared
//   leased   → DLQ        fail() with attempts at maxDispatchAttempts: dlq_reason exhausted_retries
//   leased   → pending    expireLeases(): lease older than leaseDurationMs (its node died)
//   leased   → DLQ        expireLeases() with attempts at maxDispatchAttempts: exhausted_retries
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

export const LeasedEvent = Type.Object({
  id: Type.String(),
  name: Type.String(),
  payload: Type.Unknown(),
  target: Type.Union([Type.String(), Type.Null()]),
  org_id: Type.String(),
  source: Type.String(),
  run_id: Type.Union([Type.String(), Type.Null()]),
  job_id: Type.Union([Type.String(), Type.Null()]),
  chain_depth: Type.Number(),
  attempts: Type.Number(),
  claimed_at: Type.String(),
  created_ms: Type.Number(),
  /** An earlier attempt failed (or its lease expired): the consumer then reads uncached state. */
  failed_before: Type.Boolean(),
});
export type LeasedEvent = Static<typeof LeasedEvent>;

/** Leases up to `limit` due events for `nodeId` for `leaseMs`. */
export async function leaseEvents(pool: DatabasePool, nodeId: string, leaseMs: number, limit: number): Promise<readonly LeasedEvent[]> {
  return pool.any(sqlTyped(LeasedEvent)`
    UPDATE internal_events e
    SET lease_until = clock_timestamp() + ${leaseMs} * interval '1 millisecond', lease_node = ${nodeId},
        claimed_at = clock_timestamp(), attempts = e.attempts + 1
    WHERE e.id IN (
      SELECT id FROM internal_events
      WHERE processed_at IS NULL AND dlq_reason IS NULL AND lease_until IS NULL AND next_attempt_at <= clock_timestamp()
      ORDER BY next_attempt_at, created_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING e.id::text AS id, e.name, e.payload, e.target, e.org_id, e.source, e.run_id::text AS run_id, e.job_id::text AS job_id,
      e.chain_depth, e.attempts, e.claimed_at::text AS claimed_at, (extract(epoch FROM e.created_at) * 1000)::float8 AS created_ms,
      e.last_error IS NOT NULL AS failed_before`);
}

/**
 * Marks the event processed inside the consumer's transaction, only while this node still holds
 * the lease it was delivered under. False: the lease was lost (expired and taken over); the
 * caller rolls back so the runs it made are not committed twice.
 */
export async function markProcessed(tx: CommonQueryMethods, event: LeasedEvent, nodeId: string, runIds: readonly string[], outcome: string): Promise<boolean> {
  const row = await tx.maybeOne(sql.unsafe`
    UPDATE internal_events
    SET processed_at = clock_timestamp(), delivered_at = clock_timestamp(), lease_until = NULL, run_ids = ${sql.array([...runIds], 'uuid')},
        outcome = ${outcome.slice(0, 4000)}, last_error = NULL
    WHERE id = ${event.id} AND lease_node = ${nodeId} AND claimed_at = ${event.claimed_at}::timestamptz AND processed_at IS NULL
    RETURNING 1 AS one`);
  return row !== null;
}

/** Exponential back-off with full jitter: uniform in [0, min(max, base · 2^(attempt-1))]. */
export function retryDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.floor(random() * ceiling);
}

export type FailResult = 'retry' | 'dlq' | 'lost';

/** A delivery that threw: back to pending with a retry time, or to the DLQ at the last attempt. */
export async function failDelivery(
  pool: DatabasePool,
  event: LeasedEvent,
  nodeId: string,
  error: string,
  options: { maxAttempts: number; delayMs: number },
): Promise<FailResult> {
  const toDlq = event.attempts >= options.maxAttempts;
  const row = await pool.maybeOne(sql.unsafe`
    UPDATE internal_events
    SET lease_until = NULL, last_error = ${error.slice(0, 2000)},
        next_attempt_at = clock_timestamp() + ${options.delayMs} * interval '1 millisecond',
        dlq_reason = ${toDlq ? 'exhausted_retries' : null}, dlq_at = ${toDlq ? sql.fragment`clock_timestamp()` : null}
    WHERE id = ${event.id} AND lease_node = ${nodeId} AND claimed_at = ${event.claimed_at}::timestamptz AND processed_at IS NULL
    RETURNING 1 AS one`);
  if (row === null) return 'lost';
  return toDlq ? 'dlq' : 'retry';
}

const Expired = Type.Object({
  id: Type.String(),
  name: Type.String(),
  org_id: Type.String(),
  lease_node: Type.Union([Type.String(), Type.Null()]),
  dlq: Type.Boolean(),
});

/**
 * Releases leases older than their `lease_until` (the node holding them stopped before finishing):
 * the events become pending again, and the caller re-publishes their notification. An event whose
 * lease expired on its last attempt (`attempts` at `maxAttempts`) goes to the DLQ instead
 * (`dlq: true`): an event that kills the node delivering it would otherwise be redelivered, and
 * kill a node, forever.
 */
export async function expireLeases(pool: DatabasePool, maxAttempts: number | null = null): Promise<ReadonlyArray<Static<typeof Expired>>> {
  const last = maxAttempts === null ? sql.fragment`false` : sql.fragment`expired.attempts >= ${maxAttempts}`;
  return pool.any(sqlTyped(Expired)`
    WITH expired AS (
      SELECT id, lease_node, attempts FROM internal_events
      WHERE processed_at IS NULL AND dlq_reason IS NULL AND lease_until < clock_timestamp()
      FOR UPDATE SKIP LOCKED)
    UPDATE internal_events e SET lease_until = NULL, last_error = 'lease expired on node ' || coalesce(expired.lease_node, '?'),
      lease_node = NULL, next_attempt_at = clock_timestamp(),
      dlq_reason = CASE WHEN ${last} THEN 'exhausted_retries' END, dlq_at = CASE WHEN ${last} THEN clock_timestamp() END
    FROM expired WHERE e.id = expired.id
    RETURNING e.id::text AS id, e.name, e.org_id, expired.lease_node, (e.dlq_reason IS NOT NULL) AS dlq`);
}
