// Reading the event log (`svc-admin deliveries list|show`, `GET /api/v1/admin/deliveries`): the
// webhook delivery records, newest first, filtered by org, source, status, time and repository;
// one record with its pipeline steps. Records hold where the payload is stored, never the payload.
import { DeliveryRecord, DeliverySummary } from '../../../../schemas/http/admin.ts';
import { InputError } from '../../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { DELIVERY_STATUSES } from '../types.ts';

export { DeliveryRecord, DeliverySummary };

/** Every value of `webhook_deliveries.status`: the pipeline's outcomes and `processing` (claimed, not finished). */
export const DELIVERY_RECORD_STATUSES: readonly string[] = ['processing', ...DELIVERY_STATUSES];

export const DEFAULT_DELIVERY_LIMIT = 50;
export const MAX_DELIVERY_LIMIT = 1000;

/** The filters as operators give them (flags, query parameters). */
export interface DeliveryFilterInput {
  orgId?: string | undefined;
  /** A source id (UUID, as `svc-admin source list` prints it) or a routing key (`github:12345`, `generic:<source_id>`). */
  sourceId?: string | undefined;
  status?: string | undefined;
  /** An ISO timestamp (no zone: UTC) or a duration back from now: `90s`, `30m`, `1h`, `7d`, `2w`. */
  since?: string | undefined;
  until?: string | undefined;
  repository?: string | undefined;
  limit?: number | undefined;
  /** Include records archived past the warm retention window (retention.ts); default warm only. */
  archived?: boolean | undefined;
}

/** The filters checked: times resolved, the source told apart. */
export interface DeliveryFilter {
  orgId?: string;
  source?: { id: string } | { routingKey: string };
  status?: string;
  since?: Date;
  until?: Date;
  repository?: string;
  limit: number;
  /** Set: archived records too. */
  archived?: true;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DURATION = /^(\d{1,7})(s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

function invalid(filter: string, value: unknown, why: string): InputError {
  const shown = typeof value === 'string' ? value.slice(0, 100) : String(value);
  return new InputError('SVC_ERR_DELIVERY_FILTER_INVALID', `${filter} "${shown}" is not valid: ${why}`);
}

/** An ISO timestamp or a duration back from `now`; refuses anything else (and impossible dates). */
export function parseTime(filter: string, value: string, now: Date = new Date()): Date {
  const text = value.trim();
  const duration = DURATION.exec(text);
  if (duration) {
    const at = new Date(now.getTime() - Number(duration[1]) * UNIT_MS[duration[2]!]!);
    if (Number.isNaN(at.getTime())) throw invalid(filter, value, 'the duration is too long');
    return at;
  }
  const iso = ISO.exec(text);
  if (iso) {
    const [, y, mo, d, h, mi, s, zone] = iso;
    const dateOk = (() => {
      const day = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
      return day.getUTCFullYear() === Number(y) && day.getUTCMonth() === Number(mo) - 1 && day.getUTCDate() === Number(d);
    })();
    const timeOk = h === undefined || (Number(h) < 24 && Number(mi) < 60 && (s === undefined || Number(s) < 60));
    // A time without a zone is UTC, as every time the event log prints.
    const at = new Date(h !== undefined && zone === undefined ? `${text.replace(' ', 'T')}Z` : text.replace(' ', 'T'));
    if (dateOk && timeOk && !Number.isNaN(at.getTime())) return at;
  }
  throw invalid(filter, value, 'give an ISO timestamp (2024-05-01T12:00:00Z; no zone is UTC) or a duration back from now (30m, 1h, 7d)');
}

/** Checks the filters; refuses an unknown status, a bad time or limit, or `since` after `until`. */
export function parseDeliveryFilter(input: DeliveryFilterInput, now: Date = new Date()): DeliveryFilter {
  const filter: DeliveryFilter = { limit: DEFAULT_DELIVERY_LIMIT };
  if (input.archived === true) filter.archived = true;
  if (input.orgId !== undefined) filter.orgId = input.orgId;
  if (input.sourceId !== undefined) {
    const source = input.sourceId.trim();
    if (source.length === 0) throw invalid('source', input.sourceId, 'give a source id (UUID) or a routing key');
    filter.source = UUID.test(source) ? { id: source.toLowerCase() } : { routingKey: source };
  }
  if (input.status !== undefined) {
    if (!DELIVERY_RECORD_STATUSES.includes(input.status)) throw invalid('status', input.status, `use one of ${DELIVERY_RECORD_STATUSES.join(', ')}`);
    filter.status = input.status;
  }
  if (input.since !== undefined) filter.since = parseTime('since', input.since, now);
  if (input.until !== undefined) filter.until = parseTime('until', input.until, now);
  if (filter.since && filter.until && filter.since.getTime() > filter.until.getTime()) {
    throw invalid('since', input.since, `it is after until (${filter.until.toISOString()})`);
  }
  if (input.repository !== undefined) {
    if (input.repository.trim().length === 0) throw invalid('repository', input.repository, 'give a repository name (owner/name)');
    filter.repository = input.repository.trim();
  }
  if (input.limit !== undefined) {
    if (!Number.isInteger(input.limit) || input.limit < 1 || input.limit > MAX_DELIVERY_LIMIT) {
      throw invalid('limit', input.limit, `use a whole number from 1 to ${MAX_DELIVERY_LIMIT}`);
    }
    filter.limit = input.limit;
  }
  return filter;
}

const iso = (column: string) => sql.fragment`to_char(${sql.identifier([column])} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

const SUMMARY_COLUMNS = sql.fragment`org_id AS "orgId", delivery_id AS "deliveryId", source_id::text AS "sourceId", routing_key AS "routingKey",
  provider_kind AS "providerKind", status, shed_reason AS "shedReason", message, event_type AS "eventType", action, event_name AS "eventName",
  repository, ref, sha, sender, trust_tier AS "trustTier", workflow_modified AS "workflowModified", run_ids::text[] AS "runIds",
  payload_key AS "payloadKey", payload_bytes AS "payloadBytes", payload_omitted AS "payloadOmitted",
  payload_omitted_reason AS "payloadOmittedReason", duplicates, generation, attempts, node_id AS "nodeId",
  ${iso('received_at')} AS "receivedAt", ${iso('created_at')} AS "createdAt", ${iso('updated_at')} AS "updatedAt",
  ${iso('archived_at')} AS "archivedAt"`;

/** The steps as `{ step, outcome, detail? }` in their order, whatever else an entry holds. */
const STEPS = sql.fragment`(SELECT coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object('step', coalesce(e->>'step', '?'),
    'outcome', coalesce(e->>'outcome', '?'), 'detail', e->>'detail')) ORDER BY n), '[]'::jsonb)
  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(steps) = 'array' THEN steps ELSE '[]'::jsonb END) WITH ORDINALITY AS x(e, n))`;

/** The WHERE of a filtered delivery list (the filters checked first). */
function listFilter(input: DeliveryFilterInput, now: Date) {
  const f = parseDeliveryFilter(input, now);
  const where = [sql.fragment`true`];
  if (f.archived !== true) where.push(sql.fragment`archived_at IS NULL`);
  if (f.orgId !== undefined) where.push(sql.fragment`org_id = ${f.orgId}`);
  if (f.source !== undefined) where.push('id' in f.source ? sql.fragment`source_id = ${f.source.id}::uuid` : sql.fragment`routing_key = ${f.source.routingKey}`);
  if (f.status !== undefined) where.push(sql.fragment`status = ${f.status}`);
  if (f.since !== undefined) where.push(sql.fragment`received_at >= ${f.since.toISOString()}::timestamptz`);
  if (f.until !== undefined) where.push(sql.fragment`received_at < ${f.until.toISOString()}::timestamptz`);
  // Forge repository names are case-insensitive.
  if (f.repository !== undefined) where.push(sql.fragment`lower(repository) = lower(${f.repository})`);
  return { where: sql.join(where, sql.fragment` AND `), limit: f.limit };
}

/** Delivery records, newest first (received time), without their steps. Checks the filters first. */
export async function listDeliveries(pool: DatabasePool, input: DeliveryFilterInput = {}, now: Date = new Date()): Promise<DeliverySummary[]> {
  const { where, limit } = listFilter(input, now);
  const rows = await pool.any(sqlTyped(DeliverySummary, 'list webhook deliveries')`
    SELECT ${SUMMARY_COLUMNS} FROM webhook_deliveries
    WHERE ${where}
    ORDER BY received_at DESC, org_id, delivery_id LIMIT ${limit}`);
  return [...rows];
}

/** As listDeliveries, each record with its pipeline steps (the dashboard's event log). */
export async function listDeliveryRecords(pool: DatabasePool, input: DeliveryFilterInput = {}, now: Date = new Date()): Promise<DeliveryRecord[]> {
  const { where, limit } = listFilter(input, now);
  const rows = await pool.any(sqlTyped(DeliveryRecord, 'list webhook deliveries with steps')`
    SELECT ${SUMMARY_COLUMNS}, ${STEPS} AS steps FROM webhook_deliveries
    WHERE ${where}
    ORDER BY received_at DESC, org_id, delivery_id LIMIT ${limit}`);
  return [...rows];
}

/** One delivery record with every column and its pipeline steps; null when there is none. */
export async function getDelivery(pool: DatabasePool, orgId: string, deliveryId: string): Promise<DeliveryRecord | null> {
  return pool.maybeOne(sqlTyped(DeliveryRecord, 'show a webhook delivery')`
    SELECT ${SUMMARY_COLUMNS}, ${STEPS} AS steps FROM webhook_deliveries
    WHERE org_id = ${orgId} AND delivery_id = ${deliveryId}`);
}
