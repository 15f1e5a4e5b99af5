// Steps 3 and 16, the persisted half: one webhook delivery record per (org_id, delivery_id).
// Processing claims the row first (insert, or take over a row left `shed`, rejected or by an
// interrupted attempt), so a replayed delivery is processed at most once across a cluster; the
// record is finished in place with its status, steps, run ids and payload pointer.
import { gzipSync } from 'node:zlib';
import { Type } from 'typebox';
import type { StorageExtensionPoint } from '../../host/extension-points/storage.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { messageOf } from '../../services/errors.ts';
import type { CommonQueryMethods } from 'slonik';
import type { DeliveryState, DeliveryStatus, IncomingDelivery, StepEntry } from './types.ts';

/** A row left `processing` longer than this by another node is taken over (that node died). */
export const STALE_PROCESSING_SECONDS = 120;

/** Statuses a later delivery of the same id may replace. */
const UPGRADABLE = ['shed', 'rejected_signature', 'rejected_unknown_source', 'rejected_misconfigured'];

export function eventLogKey(orgId: string, deliveryId: string): string {
  return `event-log/${orgId}/${encodeURIComponent(deliveryId)}.json.gz`;
}

/** Admission shed: recorded with its reason; never downgrades a processed record. */
export async function recordShed(db: CommonQueryMethods, delivery: IncomingDelivery, reason: string, steps: StepEntry[]): Promise<void> {
  await db.query(sql.unsafe`
    insert into webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, status, shed_reason, steps, received_at)
    values (${delivery.orgId}, ${delivery.deliveryId}, ${delivery.routingKey}, ${delivery.providerKind}, 'shed', ${reason},
      ${sql.jsonb(steps as never)}, ${delivery.receivedAt.toISOString()})
    on conflict (org_id, delivery_id) do update set shed_reason = excluded.shed_reason, steps = excluded.steps,
      attempts = webhook_deliveries.attempts + 1, updated_at = now()
    where webhook_deliveries.status = 'shed'`);
}

/** A delivery refused before processing (signature, unknown or misconfigured source). Upgradable. */
export async function recordRejected(
  db: CommonQueryMethods,
  delivery: IncomingDelivery,
  status: DeliveryStatus,
  message: string,
  steps: StepEntry[],
  sourceId: string | null,
): Promise<void> {
  await db.query(sql.unsafe`
    insert into webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, source_id, status, message, steps, received_at)
    values (${delivery.orgId}, ${delivery.deliveryId}, ${delivery.routingKey}, ${delivery.providerKind}, ${sourceId}, ${status},
      ${message}, ${sql.jsonb(steps as never)}, ${delivery.receivedAt.toISOString()})
    on conflict (org_id, delivery_id) do update set status = excluded.status, message = excluded.message, steps = excluded.steps,
      source_id = excluded.source_id, attempts = webhook_deliveries.attempts + 1, updated_at = now()
    where webhook_deliveries.status = any(${sql.array(UPGRADABLE, 'text')})`);
}

const ClaimRow = Type.Object({ generation: Type.Number() });
const StatusRow = Type.Object({ status: Type.String() });

export type Claim = { claimed: true; generation: number } | { claimed: false; status: string };

/**
 * Claims the record for processing. `windowSeconds` (generic sources' idempotency window): a
 * finished record older than it is processed again as a new generation.
 */
export async function claimDelivery(
  pool: DatabasePool,
  delivery: IncomingDelivery,
  sourceId: string,
  nodeId: string,
  windowSeconds?: number,
): Promise<Claim> {
  const window = windowSeconds === undefined ? null : windowSeconds;
  const expired = sql.fragment`(${window}::int is not null and webhook_deliveries.status not in ('processing', 'shed')
      and webhook_deliveries.created_at < now() - make_interval(secs => ${window}::int))`;
  const row = await pool.maybeOne(sqlTyped(ClaimRow)`
    insert into webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, source_id, status, node_id, received_at)
    values (${delivery.orgId}, ${delivery.deliveryId}, ${delivery.routingKey}, ${delivery.providerKind}, ${sourceId}, 'processing',
      ${nodeId}, ${delivery.receivedAt.toISOString()})
    on conflict (org_id, delivery_id) do update set status = 'processing', node_id = excluded.node_id, source_id = excluded.source_id,
      shed_reason = null, message = null, attempts = webhook_deliveries.attempts + 1, updated_at = now(),
      generation = case when ${expired} then webhook_deliveries.generation + 1 else webhook_deliveries.generation end,
      created_at = case when ${expired} then now() else webhook_deliveries.created_at end,
      run_ids = case when ${expired} then '{}' else webhook_deliveries.run_ids end
    where webhook_deliveries.status = any(${sql.array(UPGRADABLE, 'text')})
      or (webhook_deliveries.status = 'processing' and webhook_deliveries.updated_at < now() - make_interval(secs => ${STALE_PROCESSING_SECONDS}))
      or ${expired}
    returning generation`);
  if (row !== null) return { claimed: true, generation: row.generation };
  const existing = await pool.maybeOne(sqlTyped(StatusRow)`
    update webhook_deliveries set duplicates = duplicates + 1, updated_at = now()
    where org_id = ${delivery.orgId} and delivery_id = ${delivery.deliveryId} returning status`);
  return { claimed: false, status: existing?.status ?? 'processing' };
}

/** Gives back a claim this attempt could not finish (a transient failure): a replay retries it. */
export async function releaseClaim(db: CommonQueryMethods, delivery: IncomingDelivery, reason: string, steps: StepEntry[]): Promise<void> {
  await db.query(sql.unsafe`
    update webhook_deliveries set status = 'shed', shed_reason = ${reason}, steps = ${sql.jsonb(steps as never)}, updated_at = now()
    where org_id = ${delivery.orgId} and delivery_id = ${delivery.deliveryId} and status = 'processing'`);
}

/** At start: rows this node left `processing` (it stopped mid-delivery) become replayable. */
export async function releaseInterrupted(pool: DatabasePool, nodeId: string): Promise<number> {
  const result = await pool.query(sql.unsafe`
    update webhook_deliveries set status = 'shed', shed_reason = 'interrupted', updated_at = now()
    where status = 'processing' and node_id = ${nodeId}`);
  return result.rowCount;
}

export interface PayloadOutcome {
  key: string | null;
  bytes: number;
  omitted: boolean;
  reason: 'size_exceeded' | 'storage_failed' | null;
  detail?: string;
}

/** Step 16, payload half: the gzipped body at `event-log/<org_id>/<delivery_id>.json.gz`. */
export async function storePayload(
  storage: StorageExtensionPoint | undefined,
  delivery: IncomingDelivery,
  maxPayloadBytes: number,
): Promise<PayloadOutcome> {
  const bytes = delivery.body.length;
  if (bytes > maxPayloadBytes) return { key: null, bytes, omitted: true, reason: 'size_exceeded', detail: `${bytes} bytes is over eventLog.maxPayloadBytes ${maxPayloadBytes}` };
  if (storage === undefined) return { key: null, bytes, omitted: true, reason: 'storage_failed', detail: 'no storage is configured' };
  const key = eventLogKey(delivery.orgId, delivery.deliveryId);
  try {
    await storage.put(key, gzipSync(delivery.body), { contentType: 'application/gzip' });
    return { key, bytes, omitted: false, reason: null };
  } catch (error) {
    return { key: null, bytes, omitted: true, reason: 'storage_failed', detail: messageOf(error) };
  }
}

export interface FinishRecord {
  status: DeliveryStatus;
  message?: string;
  runIds: string[];
  payload: PayloadOutcome;
}

/** Step 16: the record in its final form. Runs in the run-creation transaction when there is one. */
export async function finishDelivery(db: CommonQueryMethods, state: DeliveryState, record: FinishRecord): Promise<void> {
  const { delivery, event } = state;
  await db.query(sql.unsafe`
    update webhook_deliveries set status = ${record.status}, message = ${record.message ?? null},
      event_type = ${event?.providerEvent ?? delivery.headers['x-provider-event'] ?? delivery.headers['x-github-event'] ?? null},
      action = ${event?.action ?? null}, event_name = ${event?.eventName ?? null}, repository = ${event?.repository?.fullName ?? null},
      ref = ${event?.ref ?? null}, sha = ${event?.sha ?? null}, sender = ${event?.sender.login ?? null},
      trust_tier = ${state.trust.tier}, workflow_modified = ${state.workflowModified},
      run_ids = (select coalesce(array_agg(distinct r), '{}') from unnest(webhook_deliveries.run_ids || ${sql.array(record.runIds, 'uuid')}) r),
      steps = ${sql.jsonb(state.steps.entries as never)},
      payload_key = ${record.payload.key}, payload_bytes = ${record.payload.bytes}, payload_omitted = ${record.payload.omitted},
      payload_omitted_reason = ${record.payload.reason}, updated_at = now()
    where org_id = ${delivery.orgId} and delivery_id = ${delivery.deliveryId}`);
}
