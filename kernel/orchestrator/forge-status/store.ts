// The delivery queue of the forge status reporter (`forge_status_deliveries`), as guarded SQL
// statements any number of nodes may run at once:
//
//   pending → leased      leaseDeliveries(): attempts + 1, lease_node, lease_until (SKIP LOCKED);
//                         only the oldest pending delivery of a (run, target, source) is due, so
//                         one target hears about one run in order
//   leased  → delivered   finishDelivery() while the lease is ours
//   leased  → pending     finishDelivery(retry): next_attempt_at = now + back-off, lease cleared
//   leased  → failed      finishDelivery(failed): attempts exhausted, or refused for good
//   leased  → skipped     the target declined (no commit, turned off, gone)
//   leased  → superseded  a later change of the run was already delivered to the target
//   leased  → failed      failExhausted(): lease expired (its node died) on the last attempt
import { randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { FORGE_STATUS_DELIVERY_STATUSES, FORGE_STATUS_TARGETS, type ForgeStatusAttempt, type ForgeStatusDelivery, type ForgeStatusDeliveryDetail } from '../../../schemas/http/forge-status.ts';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

export type DeliveryTarget = (typeof FORGE_STATUS_TARGETS)[number];

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const LeasedDelivery = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  run_id: Type.String(),
  feed_seq: Type.Number(),
  target: Type.Union([Type.Literal('provider'), Type.Literal('webhook')]),
  source_id: Type.String(),
  provider_kind: Type.String(),
  run_status: Type.String(),
  state: Type.Union([Type.Literal('queued'), Type.Literal('in_progress'), Type.Literal('completed')]),
  conclusion: Nullable(Type.Union([Type.Literal('success'), Type.Literal('failure'), Type.Literal('cancelled'), Type.Literal('skipped'), Type.Literal('timed_out'), Type.Literal('neutral')])),
  changed_at: Type.Number(),
  attempts: Type.Number(),
  /** Lease start: guards every later write (a lease that expired and moved is not ours). */
  claimed_at: Type.String(),
});
export type LeasedDelivery = Static<typeof LeasedDelivery>;

/** A delivery to enqueue for one run status change. */
export interface NewDelivery {
  orgId: string;
  runId: string;
  feedSeq: number;
  changedAt: number;
  target: DeliveryTarget;
  sourceId: string;
  providerKind: string;
  runStatus: string;
  state: LeasedDelivery['state'];
  conclusion: LeasedDelivery['conclusion'];
}

/**
 * Writes `deliveries` in the caller's transaction (the feed consumer's, with its `forge_done_at`
 * marks). A provider delivery makes the earlier ones of the same run and source that are waiting
 * (not in flight) pointless: a forge object shows the latest state, so they are superseded.
 */
export async function enqueueDeliveries(tx: CommonQueryMethods, deliveries: readonly NewDelivery[]): Promise<number> {
  if (deliveries.length === 0) return 0;
  const rows = deliveries.map((d) => ({
    id: randomUUID(),
    org_id: d.orgId,
    run_id: d.runId,
    feed_seq: d.feedSeq,
    changed_ms: d.changedAt,
    target: d.target,
    source_id: d.sourceId,
    provider_kind: d.providerKind,
    run_status: d.runStatus,
    state: d.state,
    conclusion: d.conclusion,
  }));
  await tx.query(sql.unsafe`
    INSERT INTO forge_status_deliveries (id, org_id, run_id, feed_seq, changed_at, target, source_id, provider_kind, run_status, state, conclusion)
    SELECT r.id, r.org_id, r.run_id, r.feed_seq, to_timestamp(r.changed_ms / 1000.0), r.target, r.source_id, r.provider_kind, r.run_status, r.state, r.conclusion
    FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS r(id uuid, org_id text, run_id uuid, feed_seq bigint, changed_ms float8, target text,
      source_id uuid, provider_kind text, run_status text, state text, conclusion text)`);
  const latest = deliveries.filter((d) => d.target === 'provider').map((d) => ({ run_id: d.runId, source_id: d.sourceId, feed_seq: d.feedSeq }));
  if (latest.length > 0) {
    await tx.query(sql.unsafe`
      UPDATE forge_status_deliveries d
      SET status = 'superseded', updated_at = clock_timestamp(), last_error = 'a later status of the run replaced it before it was sent'
      FROM jsonb_to_recordset(${sql.jsonb(latest)}) AS l(run_id uuid, source_id uuid, feed_seq bigint)
      WHERE d.run_id = l.run_id AND d.target = 'provider' AND d.source_id = l.source_id AND d.feed_seq < l.feed_seq
        AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until < clock_timestamp())`);
  }
  return rows.length;
}

const RETURNING = sql.fragment`d.id::text AS id, d.org_id, d.run_id::text AS run_id, d.feed_seq::float8 AS feed_seq, d.target,
  d.source_id::text AS source_id, d.provider_kind, d.run_status, d.state, d.conclusion, d.changed_at, d.attempts,
  d.last_attempt_at::text AS claimed_at`;

/**
 * Leases up to `limit` due deliveries for `nodeId`. A delivery is due when it is pending, its
 * retry time has come, no live lease holds it, and no earlier pending delivery of the same run,
 * target and source exists (that one goes first, in flight or waiting for its retry).
 */
export async function leaseDeliveries(pool: DatabasePool, nodeId: string, leaseMs: number, maxAttempts: number, limit: number): Promise<readonly LeasedDelivery[]> {
  return pool.any(sqlTyped(LeasedDelivery)`
    UPDATE forge_status_deliveries d
    SET lease_until = clock_timestamp() + ${leaseMs} * interval '1 millisecond', lease_node = ${nodeId},
        last_attempt_at = clock_timestamp(), attempts = d.attempts + 1, updated_at = clock_timestamp()
    WHERE d.id IN (
      SELECT x.id FROM forge_status_deliveries x
      WHERE x.status = 'pending' AND x.next_attempt_at <= clock_timestamp() AND x.attempts < ${maxAttempts}
        AND (x.lease_until IS NULL OR x.lease_until < clock_timestamp())
        AND NOT EXISTS (
          SELECT 1 FROM forge_status_deliveries y
          WHERE y.run_id = x.run_id AND y.target = x.target AND y.source_id = x.source_id AND y.status = 'pending' AND y.feed_seq < x.feed_seq)
      ORDER BY x.next_attempt_at, x.feed_seq
      LIMIT ${limit}
      FOR UPDATE OF x SKIP LOCKED)
    RETURNING ${RETURNING}`);
}

/**
 * Pending deliveries that may not be tried again end `failed`: their last attempt's lease expired
 * (the node sending it stopped), or `maxAttempts` was lowered below what they used. Returns how many.
 */
export async function failExhausted(pool: DatabasePool, maxAttempts: number): Promise<number> {
  const rows = await pool.any(sqlTyped(Type.Object({ id: Type.String() }))`
    UPDATE forge_status_deliveries
    SET status = 'failed', lease_until = NULL, updated_at = clock_timestamp(),
        last_error = left(coalesce(last_error || '; ', '') || CASE WHEN lease_until IS NOT NULL
          THEN 'the last attempt did not finish (its node stopped; lease expired on ' || coalesce(lease_node, '?') || ')'
          ELSE 'no attempts left (forgeStatus.maxAttempts ' || ${maxAttempts}::text || ')' END, 2000)
    WHERE status = 'pending' AND attempts >= ${maxAttempts} AND (lease_until IS NULL OR lease_until < clock_timestamp())
    RETURNING id::text AS id`);
  return rows.length;
}

/** The forge object a previous delivery of this run and source created (a check run id), if any. */
export async function previousExternalId(pool: DatabasePool, d: LeasedDelivery): Promise<string | null> {
  const row = await pool.maybeOne(sqlTyped(Type.Object({ external_id: Type.String() }))`
    SELECT external_id FROM forge_status_deliveries
    WHERE run_id = ${d.run_id} AND target = ${d.target} AND source_id = ${d.source_id} AND external_id IS NOT NULL AND id <> ${d.id}
    ORDER BY feed_seq DESC LIMIT 1`);
  return row?.external_id ?? null;
}

/** A later status of the same run was already delivered to this target: sending this one would go backwards. */
export async function laterDelivered(pool: DatabasePool, d: LeasedDelivery): Promise<boolean> {
  const row = await pool.maybeOne(sqlTyped(Type.Object({ one: Type.Number() }))`
    SELECT 1 AS one FROM forge_status_deliveries
    WHERE run_id = ${d.run_id} AND target = ${d.target} AND source_id = ${d.source_id} AND feed_seq > ${d.feed_seq} AND status = 'delivered'
    LIMIT 1`);
  return row !== null;
}

export type Finish =
  | { status: 'delivered'; statusCode: number | null; externalId: string | null }
  | { status: 'skipped' | 'superseded'; reason: string }
  | { status: 'retry'; error: string; statusCode: number | null; delayMs: number }
  | { status: 'failed'; error: string; statusCode: number | null };

/**
 * Records how an attempt ended, while the lease is still this node's (false: it moved on, and
 * nothing was written), with the attempt in the history.
 */
export async function finishDelivery(pool: DatabasePool, d: LeasedDelivery, nodeId: string, finish: Finish): Promise<boolean> {
  return pool.transaction(async (tx) => {
    const guard = sql.fragment`id = ${d.id} AND lease_node = ${nodeId} AND last_attempt_at = ${d.claimed_at}::timestamptz AND status = 'pending'`;
    let updated: unknown;
    switch (finish.status) {
      case 'delivered':
        updated = await tx.maybeOne(sql.unsafe`
          UPDATE forge_status_deliveries
          SET status = 'delivered', delivered_at = clock_timestamp(), lease_until = NULL, updated_at = clock_timestamp(),
              last_status_code = ${finish.statusCode}, last_error = NULL, external_id = ${finish.externalId}
          WHERE ${guard} RETURNING 1 AS one`);
        break;
      case 'skipped':
      case 'superseded':
        updated = await tx.maybeOne(sql.unsafe`
          UPDATE forge_status_deliveries
          SET status = ${finish.status}, lease_until = NULL, updated_at = clock_timestamp(), last_error = ${finish.reason.slice(0, 2000)}
          WHERE ${guard} RETURNING 1 AS one`);
        break;
      case 'retry':
        updated = await tx.maybeOne(sql.unsafe`
          UPDATE forge_status_deliveries
          SET lease_until = NULL, updated_at = clock_timestamp(), last_error = ${finish.error.slice(0, 2000)}, last_status_code = ${finish.statusCode},
              next_attempt_at = clock_timestamp() + ${finish.delayMs} * interval '1 millisecond'
          WHERE ${guard} RETURNING 1 AS one`);
        break;
      case 'failed':
        updated = await tx.maybeOne(sql.unsafe`
          UPDATE forge_status_deliveries
          SET status = 'failed', lease_until = NULL, updated_at = clock_timestamp(), last_error = ${finish.error.slice(0, 2000)}, last_status_code = ${finish.statusCode}
          WHERE ${guard} RETURNING 1 AS one`);
        break;
    }
    if (updated === null) return false;
    const outcome = finish.status === 'superseded' ? 'skipped' : finish.status;
    const error = finish.status === 'retry' || finish.status === 'failed' ? finish.error : finish.status === 'delivered' ? null : finish.reason;
    const statusCode = finish.status === 'delivered' || finish.status === 'retry' || finish.status === 'failed' ? finish.statusCode : null;
    await tx.query(sql.unsafe`
      INSERT INTO forge_status_attempts (delivery_id, attempt, node_id, started_at, outcome, status_code, error)
      VALUES (${d.id}, ${d.attempts}, ${nodeId}, ${d.claimed_at}::timestamptz, ${outcome}, ${statusCode}, ${error === null ? null : error.slice(0, 2000)})
      ON CONFLICT (delivery_id, attempt) DO NOTHING`);
    return true;
  });
}

/** Finished deliveries (not pending) are kept this long for operators, then deleted with their attempts. */
export const DELIVERY_RETENTION_DAYS = 30;

/** Deletes up to `limit` finished deliveries last changed more than `days` ago. Returns how many. */
export async function pruneDeliveries(pool: DatabasePool, days: number = DELIVERY_RETENTION_DAYS, limit = 5_000): Promise<number> {
  const rows = await pool.any(sqlTyped(Type.Object({ id: Type.String() }))`
    DELETE FROM forge_status_deliveries
    WHERE id IN (
      SELECT id FROM forge_status_deliveries
      WHERE status <> 'pending' AND updated_at < clock_timestamp() - ${days} * interval '1 day'
      LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING id::text AS id`);
  return rows.length;
}

export { backoffMs } from '../../../core/backoff.ts';

// ---- reading (admin routes, svc-admin forge-status) ----

export const DEFAULT_FORGE_STATUS_LIMIT = 50;
export const MAX_FORGE_STATUS_LIMIT = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface ForgeStatusFilter {
  runId?: string | undefined;
  orgId?: string | undefined;
  status?: string | undefined;
  target?: string | undefined;
  limit?: number | undefined;
}

function invalid(filter: string, value: string, why: string): InputError {
  return new InputError('SVC_ERR_FORGE_STATUS_FILTER_INVALID', `${filter} "${value.slice(0, 100)}" is not valid: ${why}`);
}

/** Refuses a bad filter (before any database is opened, in the CLI). */
export function checkForgeStatusFilter(filter: ForgeStatusFilter): void {
  if (filter.runId !== undefined && !UUID.test(filter.runId)) throw invalid('run', filter.runId, 'a run id is a UUID');
  if (filter.status !== undefined && !(FORGE_STATUS_DELIVERY_STATUSES as readonly string[]).includes(filter.status)) {
    throw invalid('status', filter.status, `use one of ${FORGE_STATUS_DELIVERY_STATUSES.join(', ')}`);
  }
  if (filter.target !== undefined && !(FORGE_STATUS_TARGETS as readonly string[]).includes(filter.target)) {
    throw invalid('target', filter.target, `use one of ${FORGE_STATUS_TARGETS.join(', ')}`);
  }
  if (filter.limit !== undefined && (!Number.isInteger(filter.limit) || filter.limit < 1 || filter.limit > MAX_FORGE_STATUS_LIMIT)) {
    throw invalid('limit', String(filter.limit), `use 1 to ${MAX_FORGE_STATUS_LIMIT}`);
  }
}

const DeliveryRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  run_id: Type.String(),
  target: Type.String(),
  source_id: Type.String(),
  provider_kind: Type.String(),
  run_status: Type.String(),
  state: Type.String(),
  conclusion: Nullable(Type.String()),
  status: Type.String(),
  attempts: Type.Number(),
  next_attempt_at: Type.Number(),
  last_attempt_at: Nullable(Type.Number()),
  last_error: Nullable(Type.String()),
  last_status_code: Nullable(Type.Number()),
  external_id: Nullable(Type.String()),
  delivered_at: Nullable(Type.Number()),
  changed_at: Type.Number(),
  created_at: Type.Number(),
});
type DeliveryRow = Static<typeof DeliveryRow>;

const COLUMNS = sql.fragment`id::text AS id, org_id, run_id::text AS run_id, target, source_id::text AS source_id, provider_kind, run_status,
  state, conclusion, status, attempts, next_attempt_at, last_attempt_at, last_error, last_status_code, external_id, delivered_at, changed_at, created_at`;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function deliveryOf(row: DeliveryRow): ForgeStatusDelivery {
  return {
    id: row.id,
    orgId: row.org_id,
    runId: row.run_id,
    target: row.target,
    sourceId: row.source_id,
    providerKind: row.provider_kind,
    runStatus: row.run_status,
    state: row.state,
    conclusion: row.conclusion,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.status === 'pending' ? iso(row.next_attempt_at) : null,
    lastAttemptAt: iso(row.last_attempt_at),
    lastError: row.last_error,
    lastStatusCode: row.last_status_code,
    externalId: row.external_id,
    deliveredAt: iso(row.delivered_at),
    changedAt: iso(row.changed_at)!,
    createdAt: iso(row.created_at)!,
  };
}

/** Deliveries newest first (a run's in the order of its changes). */
export async function listForgeStatus(pool: DatabasePool, filter: ForgeStatusFilter = {}): Promise<ForgeStatusDelivery[]> {
  checkForgeStatusFilter(filter);
  const where = [
    filter.runId === undefined ? null : sql.fragment`run_id = ${filter.runId}`,
    filter.orgId === undefined ? null : sql.fragment`org_id = ${filter.orgId}`,
    filter.status === undefined ? null : sql.fragment`status = ${filter.status}`,
    filter.target === undefined ? null : sql.fragment`target = ${filter.target}`,
  ].filter((f) => f !== null);
  const order = filter.runId === undefined ? sql.fragment`created_at DESC, feed_seq DESC` : sql.fragment`feed_seq, target, source_id`;
  const rows = await pool.any(sqlTyped(DeliveryRow)`
    SELECT ${COLUMNS} FROM forge_status_deliveries
    ${where.length === 0 ? sql.fragment`` : sql.fragment`WHERE ${sql.join(where, sql.fragment` AND `)}`}
    ORDER BY ${order}
    LIMIT ${filter.limit ?? DEFAULT_FORGE_STATUS_LIMIT}`);
  return rows.map(deliveryOf);
}

const AttemptRow = Type.Object({
  attempt: Type.Number(),
  node_id: Type.String(),
  started_at: Type.Number(),
  finished_at: Type.Number(),
  outcome: Type.String(),
  status_code: Nullable(Type.Number()),
  error: Nullable(Type.String()),
});

/** One delivery with every attempt. */
export async function getForgeStatus(pool: DatabasePool, id: string): Promise<ForgeStatusDeliveryDetail> {
  if (!UUID.test(id)) throw new InputError('SVC_ERR_FORGE_STATUS_ID_INVALID', `"${id.slice(0, 100)}" is not a forge status delivery id (a UUID, as "svc-admin forge-status list" prints it)`);
  const row = await pool.maybeOne(sqlTyped(DeliveryRow)`SELECT ${COLUMNS} FROM forge_status_deliveries WHERE id = ${id}`);
  if (row === null) throw new NotFoundError('SVC_ERR_FORGE_STATUS_NOT_FOUND', `no forge status delivery ${id}`);
  const attempts = await pool.any(sqlTyped(AttemptRow)`
    SELECT attempt, node_id, started_at, finished_at, outcome, status_code, error FROM forge_status_attempts
    WHERE delivery_id = ${id} ORDER BY attempt`);
  const history: ForgeStatusAttempt[] = attempts.map((a) => ({
    attempt: a.attempt,
    nodeId: a.node_id,
    startedAt: iso(a.started_at)!,
    finishedAt: iso(a.finished_at)!,
    outcome: a.outcome,
    statusCode: a.status_code,
    error: a.error,
  }));
  return { ...deliveryOf(row), history };
}
