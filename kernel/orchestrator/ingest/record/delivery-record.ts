// Steps 3 and 16, the persisted half: one webhook delivery record per (org_id, delivery_id).
// The claim (insert, or take over a row left `shed`, rejected, stale `processing` or past a
// generic source's idempotency window) is made in the statement or transaction that finishes the
// record, so a replayed delivery is processed at most once across a cluster at one commit each.
import { Type } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import type { CommonQueryMethods } from 'slonik';
import { STATUS_FEED_DEFERRAL } from '../../runs/deferred-wakeups.ts';
import type { ClaimOptions, DeliveryState, DeliveryStatus, IncomingDelivery, StepEntry } from '../types.ts';

export type { ClaimOptions };

/** A row left `processing` longer than this by another node is taken over (that node died). */
export const STALE_PROCESSING_SECONDS = 120;

/** Statuses a later delivery of the same id may replace. */
// `retrying` and `failed` (kept deliveries, retry/store.ts): the retry, a redelivery or an operator finishes them.
const UPGRADABLE = ['shed', 'retrying', 'failed', 'rejected_signature', 'rejected_unknown_source', 'rejected_misconfigured'];

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
const DeferringClaimRow = Type.Object({ generation: Type.Number(), status_feed_notify: Type.Literal('deferred') });
const StatusRow = Type.Object({ status: Type.String() });

export type Claim = { claimed: true; generation: number } | { claimed: false; status: string };

/** The ON CONFLICT condition under which this attempt owns the record (else it is a duplicate). */
export function takeOver(windowSeconds: number | undefined) {
  const window = windowSeconds === undefined ? null : windowSeconds;
  const expired = sql.fragment`(${window}::int is not null and webhook_deliveries.status not in ('processing', 'shed', 'retrying')
      and webhook_deliveries.created_at < now() - make_interval(secs => ${window}::int))`;
  const where = sql.fragment`webhook_deliveries.status = any(${sql.array(UPGRADABLE, 'text')})
      or (webhook_deliveries.status = 'processing' and webhook_deliveries.updated_at < now() - make_interval(secs => ${STALE_PROCESSING_SECONDS}))
      or ${expired}`;
  const generation = sql.fragment`case when ${expired} then webhook_deliveries.generation + 1 else webhook_deliveries.generation end`;
  const createdAt = sql.fragment`case when ${expired} then now() else webhook_deliveries.created_at end`;
  const runIds = sql.fragment`case when ${expired} then '{}'::uuid[] else webhook_deliveries.run_ids end`;
  return { where, generation, createdAt, runIds };
}

/** A duplicate: counted on the one record. Returns the record's status. */
export async function countDuplicate(db: CommonQueryMethods, delivery: IncomingDelivery): Promise<string> {
  const existing = await db.maybeOne(sqlTyped(StatusRow)`
    update webhook_deliveries set duplicates = duplicates + 1, updated_at = now()
    where org_id = ${delivery.orgId} and delivery_id = ${delivery.deliveryId} returning status`);
  return existing?.status ?? 'processing';
}

/** The record's event columns, from what the steps found. */
export function eventColumns(state: DeliveryState) {
  const { delivery, event } = state;
  return {
    eventType: event?.providerEvent ?? delivery.headers['x-provider-event'] ?? delivery.headers['x-github-event'] ?? null,
    action: event?.action ?? null,
    eventName: event?.eventName ?? null,
    repository: event?.repository?.fullName ?? null,
    ref: event?.ref ?? null,
    sha: event?.sha ?? null,
    sender: event?.sender.login ?? null,
  };
}

/**
 * Claim and finish in ONE statement, for outcomes without runs (no match, no lock file, skipped,
 * ignored fork, ...): the record is inserted in its final form, or takes over an upgradable row.
 * One round trip and one commit; null generation means a duplicate (nothing was written).
 */
export async function recordOutcome(db: CommonQueryMethods, state: DeliveryState, record: FinishRecord, options: ClaimOptions): Promise<Claim> {
  const generation = await recordOutcomeRow(db, state, record, options);
  if (generation !== null) return { claimed: true, generation };
  return { claimed: false, status: await countDuplicate(db, state.delivery) };
}

/**
 * `recordOutcome` without counting a duplicate (inside a transaction that will roll back). Null:
 * not claimed. `defersStatusFeed`: the statement also sets the run status feed's deferral
 * (runs/deferred-wakeups.ts), as the first statement of a run transaction.
 */
export async function recordOutcomeRow(
  db: CommonQueryMethods,
  state: DeliveryState,
  record: FinishRecord,
  options: ClaimOptions,
  defersStatusFeed = false,
): Promise<number | null> {
  const over = takeOver(options.windowSeconds);
  const row = await db.maybeOne(sqlTyped(defersStatusFeed ? DeferringClaimRow : ClaimRow)`
    ${recordInsert(state, record, options)}
    on conflict (org_id, delivery_id) do update set status = excluded.status, message = excluded.message, node_id = excluded.node_id,
      source_id = excluded.source_id, shed_reason = null, attempts = webhook_deliveries.attempts + 1, updated_at = now(),
      event_type = excluded.event_type, action = excluded.action, event_name = excluded.event_name, repository = excluded.repository,
      ref = excluded.ref, sha = excluded.sha, sender = excluded.sender, trust_tier = excluded.trust_tier,
      workflow_modified = excluded.workflow_modified, steps = excluded.steps, payload_key = excluded.payload_key,
      payload_bytes = excluded.payload_bytes, payload_omitted = excluded.payload_omitted,
      payload_omitted_reason = excluded.payload_omitted_reason,
      generation = ${over.generation}, created_at = ${over.createdAt},
      run_ids = (select coalesce(array_agg(distinct r), '{}') from unnest(${over.runIds} || excluded.run_ids) r)
    where ${over.where}
    returning generation${defersStatusFeed ? sql.fragment`, ${STATUS_FEED_DEFERRAL}` : sql.fragment``}`);
  return row === null ? null : row.generation;
}

/**
 * `insert into webhook_deliveries (...) values (...)` of the record in its final form, without a
 * conflict clause: `recordOutcomeRow` adds the claim's; the one-statement run path
 * (ingest/steps/one-statement-run.ts) adds none, so an existing record aborts it.
 */
export function recordInsert(state: DeliveryState, record: FinishRecord, options: ClaimOptions) {
  const { delivery } = state;
  const e = eventColumns(state);
  const p = record.payload;
  return sql.fragment`
    insert into webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, source_id, status, message, node_id, received_at,
      event_type, action, event_name, repository, ref, sha, sender, trust_tier, workflow_modified, run_ids, steps,
      payload_key, payload_bytes, payload_omitted, payload_omitted_reason)
    values (${delivery.orgId}, ${delivery.deliveryId}, ${delivery.routingKey}, ${delivery.providerKind}, ${options.sourceId}, ${record.status},
      ${record.message ?? null}, ${options.nodeId}, ${delivery.receivedAt.toISOString()}, ${e.eventType}, ${e.action}, ${e.eventName},
      ${e.repository}, ${e.ref}, ${e.sha}, ${e.sender}, ${state.trust.tier}, ${state.workflowModified}, ${sql.array(record.runIds, 'uuid')},
      ${sql.jsonb(state.steps.entries as never)}, ${p.key}, ${p.bytes}, ${p.omitted}, ${p.reason})`;
}

/**
 * A transient failure after verification (a lock fetch that failed): recorded `shed` with the
 * reason so a replay retries it; never downgrades a processed record.
 */
export async function recordRetry(db: CommonQueryMethods, delivery: IncomingDelivery, sourceId: string, reason: string, steps: StepEntry[]): Promise<void> {
  const over = takeOver(undefined);
  await db.query(sql.unsafe`
    insert into webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, source_id, status, shed_reason, steps, received_at)
    values (${delivery.orgId}, ${delivery.deliveryId}, ${delivery.routingKey}, ${delivery.providerKind}, ${sourceId}, 'shed', ${reason},
      ${sql.jsonb(steps as never)}, ${delivery.receivedAt.toISOString()})
    on conflict (org_id, delivery_id) do update set status = 'shed', shed_reason = excluded.shed_reason, steps = excluded.steps,
      source_id = excluded.source_id, attempts = webhook_deliveries.attempts + 1, updated_at = now()
    where ${over.where}`);
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

export interface FinishRecord {
  status: DeliveryStatus;
  message?: string;
  runIds: string[];
  payload: PayloadOutcome;
}

/** The record names `actual` runs instead of the `planned` ones (a replay found runs made before). */
export async function replaceRunIds(db: CommonQueryMethods, state: DeliveryState, planned: readonly string[], actual: readonly string[]): Promise<void> {
  const { delivery } = state;
  await db.query(sql.unsafe`
    update webhook_deliveries set steps = ${sql.jsonb(state.steps.entries as never)},
      run_ids = (select coalesce(array_agg(distinct r), '{}') from unnest(run_ids || ${sql.array([...actual], 'uuid')}) r
        where r <> all(${sql.array([...planned], 'uuid')}) or r = any(${sql.array([...actual], 'uuid')})),
      updated_at = now()
    where org_id = ${delivery.orgId} and delivery_id = ${delivery.deliveryId}`);
}
