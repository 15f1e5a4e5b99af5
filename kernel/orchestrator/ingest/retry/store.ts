// Deliveries kept for retry (migration 0810): a verified delivery whose processing failed for a
// reason that can pass is kept with its exact bytes and answered accepted; the retry worker runs
// it through the pipeline again with back-off until it is processed or the give-up time passes.
// The delivery record (webhook_deliveries) says `retrying` meanwhile and `failed` after.
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { backoffMs } from '../../../../core/backoff.ts';
import { NotFoundError } from '../../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { takeOver } from '../record/delivery-record.ts';
import type { IncomingDelivery, StepEntry } from '../types.ts';

export interface RetryPolicy {
  /** First delay; doubles per attempt (jittered between half and all of it) up to maxMs. */
  baseMs: number;
  maxMs: number;
  /** Past this age (from the first failure) the delivery is recorded failed and no longer retried. */
  giveUpAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseMs: 2000, maxMs: 300_000, giveUpAfterMs: 24 * 3600_000 };

const KeptRow = Type.Object({ state: Type.Union([Type.Literal('waiting'), Type.Literal('failed')]), attempts: Type.Number(), nextAttemptAt: Type.String(), ageMs: Type.Number() });
export type Kept = Static<typeof KeptRow> & { message: string };

export interface KeepInput {
  delivery: IncomingDelivery;
  sourceId: string;
  reason: string;
  steps: StepEntry[];
  policy: RetryPolicy;
}

/**
 * Keeps (or re-schedules) a delivery and records it `retrying`, or `failed` once it is older than
 * the give-up time. One transaction: the bytes are never without a record saying why they wait.
 * A row an operator or a redelivery brings back from `failed` starts a new give-up clock.
 */
export async function keepForRetry(pool: DatabasePool, input: KeepInput): Promise<Kept> {
  const { delivery, policy } = input;
  return pool.transaction(async (tx) => {
    const kept = await tx.one(sqlTyped(KeptRow)`
      insert into webhook_delivery_retries (org_id, delivery_id, routing_key, provider_kind, source_id, headers, body, client_ip,
        received_at, next_attempt_at, last_error)
      values (${delivery.orgId}, ${delivery.deliveryId}, ${delivery.routingKey}, ${delivery.providerKind}, ${delivery.sourceId ?? null},
        ${sql.jsonb(delivery.headers as never)}, ${sql.binary(delivery.body)}, ${delivery.clientIp}, ${delivery.receivedAt.toISOString()},
        now() + ${backoffMs(1, policy.baseMs, policy.maxMs)} * interval '1 millisecond', ${input.reason})
      on conflict (org_id, delivery_id) do update set
        attempts = webhook_delivery_retries.attempts + 1,
        created_at = case when webhook_delivery_retries.state = 'failed' then now() else webhook_delivery_retries.created_at end,
        state = 'waiting', last_error = excluded.last_error, lease_node = null, lease_until = null, updated_at = now(),
        -- backoffMs (core/backoff.ts) of the attempt after this one, in SQL: the count is in the row.
        next_attempt_at = now() + least(${policy.maxMs}::float8, ${policy.baseMs}::float8 * power(2, least(30, webhook_delivery_retries.attempts)))
          * (0.5 + random() * 0.5) * interval '1 millisecond'
      returning state, attempts, next_attempt_at::text as "nextAttemptAt",
        (extract(epoch from (now() - created_at)) * 1000)::float8 as "ageMs"`);
    const givenUp = kept.ageMs >= policy.giveUpAfterMs;
    if (givenUp) {
      await tx.query(sql.unsafe`update webhook_delivery_retries set state = 'failed', updated_at = now()
        where org_id = ${delivery.orgId} and delivery_id = ${delivery.deliveryId}`);
    }
    const message = givenUp
      ? `gave up after ${kept.attempts} attempts over ${Math.round(kept.ageMs / 1000)} s (ingestRetry.giveUpAfterMs ${policy.giveUpAfterMs}); last error: ${input.reason}; retry with "svc-admin deliveries retry"`
      : `kept for retry (attempt ${kept.attempts} failed; next at ${kept.nextAttemptAt}): ${input.reason}`;
    await recordKept(tx, input, givenUp ? 'failed' : 'retrying', message);
    return { ...kept, state: givenUp ? 'failed' : 'waiting', message };
  });
}

/** The record's side: never downgrades a processed record (the takeover rules of the claim). */
async function recordKept(tx: CommonQueryMethods, input: KeepInput, status: 'retrying' | 'failed', message: string): Promise<void> {
  const { delivery } = input;
  const over = takeOver(undefined);
  await tx.query(sql.unsafe`
    insert into webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, source_id, status, message, steps, received_at)
    values (${delivery.orgId}, ${delivery.deliveryId}, ${delivery.routingKey}, ${delivery.providerKind}, ${input.sourceId}, ${status},
      ${message.slice(0, 2000)}, ${sql.jsonb(input.steps as never)}, ${delivery.receivedAt.toISOString()})
    on conflict (org_id, delivery_id) do update set status = excluded.status, message = excluded.message, shed_reason = null,
      steps = excluded.steps, source_id = excluded.source_id, attempts = webhook_deliveries.attempts + 1, updated_at = now()
    where ${over.where}`);
}


const DueRow = Type.Object({
  orgId: Type.String(),
  deliveryId: Type.String(),
  routingKey: Type.String(),
  providerKind: Type.String(),
  sourceId: Type.Union([Type.String(), Type.Null()]),
  headers: Type.Record(Type.String(), Type.String()),
  body: Type.Unknown(),
  clientIp: Type.String(),
  receivedAt: Type.String(),
  attempts: Type.Number(),
  leaseUntil: Type.String(),
});

export interface Leased {
  delivery: IncomingDelivery;
  attempts: number;
  /** The lease this node holds; settling checks it, so a row kept again in between is left alone. */
  leaseUntil: string;
}

/**
 * Up to `limit` due rows, leased to `nodeId` for `leaseMs`: moving next_attempt_at past the lease
 * keeps other nodes off them, and hands them back by itself if this node dies mid-retry.
 */
export async function leaseDue(pool: DatabasePool, nodeId: string, limit: number, leaseMs: number): Promise<Leased[]> {
  const rows = await pool.any(sqlTyped(DueRow)`
    update webhook_delivery_retries r set lease_node = ${nodeId}, lease_until = now() + ${leaseMs} * interval '1 millisecond',
      next_attempt_at = now() + ${leaseMs} * interval '1 millisecond', updated_at = now()
    where (r.org_id, r.delivery_id) in (
      select org_id, delivery_id from webhook_delivery_retries
      where state = 'waiting' and next_attempt_at <= now()
      order by next_attempt_at limit ${limit} for update skip locked)
    returning r.org_id as "orgId", r.delivery_id as "deliveryId", r.routing_key as "routingKey", r.provider_kind as "providerKind",
      r.source_id as "sourceId", r.headers, r.body, r.client_ip as "clientIp", r.received_at::text as "receivedAt", r.attempts,
      r.lease_until::text as "leaseUntil"`);
  return rows.map((row) => ({
    attempts: row.attempts,
    leaseUntil: row.leaseUntil,
    delivery: {
      orgId: row.orgId,
      routingKey: row.routingKey,
      providerKind: row.providerKind,
      ...(row.sourceId === null ? {} : { sourceId: row.sourceId }),
      deliveryId: row.deliveryId,
      headers: row.headers,
      body: Buffer.from(row.body as Uint8Array),
      receivedAt: new Date(row.receivedAt),
      clientIp: row.clientIp,
      replay: true,
    },
  }));
}

/** Done with a leased row (processed, or answered for good): removed unless it was kept again meanwhile. */
export async function settle(pool: DatabasePool, leased: Leased, nodeId: string): Promise<void> {
  await pool.query(sql.unsafe`delete from webhook_delivery_retries
    where org_id = ${leased.delivery.orgId} and delivery_id = ${leased.delivery.deliveryId}
      and lease_node = ${nodeId} and lease_until = ${leased.leaseUntil}::timestamptz`);
}

/** A leased row this node could not try now (admission full): due again after `delayMs`, no attempt counted. */
export async function postpone(pool: DatabasePool, leased: Leased, nodeId: string, delayMs: number): Promise<void> {
  await pool.query(sql.unsafe`update webhook_delivery_retries
    set next_attempt_at = now() + ${delayMs} * interval '1 millisecond', lease_node = null, lease_until = null, updated_at = now()
    where org_id = ${leased.delivery.orgId} and delivery_id = ${leased.delivery.deliveryId}
      and lease_node = ${nodeId} and lease_until = ${leased.leaseUntil}::timestamptz`);
}

const RecordStatus = Type.Object({ status: Type.String() });

/** The delivery record's status (null: no record), read before a retry to skip one already processed. */
export async function recordStatus(pool: DatabasePool, orgId: string, deliveryId: string): Promise<string | null> {
  const row = await pool.maybeOne(sqlTyped(RecordStatus)`select status from webhook_deliveries where org_id = ${orgId} and delivery_id = ${deliveryId}`);
  return row?.status ?? null;
}

const Requeued = Type.Object({ attempts: Type.Number(), lastError: Type.String() });

/**
 * An operator's retry (`svc-admin deliveries retry`): a kept delivery is due now with a new
 * give-up clock. Only kept deliveries have their bytes; anything else is refused with what to do.
 */
export async function requestRetry(pool: DatabasePool, orgId: string, deliveryId: string): Promise<Static<typeof Requeued>> {
  return pool.transaction(async (tx) => {
    const row = await tx.maybeOne(sqlTyped(Requeued)`
      update webhook_delivery_retries set state = 'waiting', next_attempt_at = now(), created_at = now(), lease_node = null,
        lease_until = null, updated_at = now()
      where org_id = ${orgId} and delivery_id = ${deliveryId}
      returning attempts, last_error as "lastError"`);
    if (row === null) {
      throw new NotFoundError(
        'SVC_ERR_DELIVERY_NOT_KEPT',
        `delivery ${deliveryId} of org ${orgId} is not kept for retry: only a delivery that failed for a passing reason after it was verified keeps its bytes here; ask the sender to redeliver it`,
      );
    }
    await tx.query(sql.unsafe`update webhook_deliveries set status = 'retrying', updated_at = now(),
        message = ${`retry requested by an operator (${row.attempts} attempts so far; last error: ${row.lastError})`.slice(0, 2000)}
      where org_id = ${orgId} and delivery_id = ${deliveryId} and status in ('retrying', 'failed')`);
    return row;
  });
}

/** Failed rows older than `days` go (the record stays, saying `failed`). */
export async function purgeFailed(pool: DatabasePool, days: number): Promise<number> {
  const result = await pool.query(sql.unsafe`delete from webhook_delivery_retries
    where state = 'failed' and updated_at < now() - ${days} * interval '1 day'`);
  return result.rowCount;
}
