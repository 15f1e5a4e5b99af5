// The dead-letter queue of internal events (`svc-admin event-dlq list|count|retry|discard`): events
// whose delivery threw `maxDispatchAttempts` times. A retry puts one back to pending with a fresh
// attempt count and announces it; a discard marks it processed with the operator's reason, so it
// is kept (for the record) and never delivered.
import { Type } from 'typebox';
import { DlqEntry } from '../../../schemas/http/admin.ts';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { notify, sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { INTERNAL_EVENTS_CHANNEL } from './emit.ts';

export { DlqEntry };



const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkId(id: string): string {
  if (!UUID.test(id)) throw new InputError('SVC_ERR_EVENT_DLQ_ID_INVALID', `event id ${JSON.stringify(id.slice(0, 80))} is not a UUID`);
  return id.toLowerCase();
}

export interface DlqFilter {
  orgId?: string;
  name?: string;
  limit?: number;
}

const orgClause = (f: DlqFilter) => (f.orgId === undefined ? sql.fragment`true` : sql.fragment`org_id = ${f.orgId}`);
const nameClause = (f: DlqFilter) => (f.name === undefined ? sql.fragment`true` : sql.fragment`name = ${f.name}`);

export async function listDlq(pool: DatabasePool, filter: DlqFilter = {}): Promise<readonly DlqEntry[]> {
  const limit = Math.min(1000, Math.max(1, filter.limit ?? 100));
  return pool.any(sqlTyped(DlqEntry)`
    SELECT id::text AS id, name, org_id AS "orgId", target, source, run_id::text AS "runId", attempts, dlq_reason AS "dlqReason",
      last_error AS "lastError", to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "createdAt",
      to_char(dlq_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "dlqAt"
    FROM internal_events
    WHERE dlq_reason IS NOT NULL AND processed_at IS NULL AND ${orgClause(filter)} AND ${nameClause(filter)}
    ORDER BY dlq_at DESC, id LIMIT ${limit}`);
}

const Count = Type.Object({ n: Type.Number() });

export async function countDlq(pool: DatabasePool, filter: DlqFilter = {}): Promise<number> {
  const row = await pool.one(sqlTyped(Count)`
    SELECT count(*)::int AS n FROM internal_events
    WHERE dlq_reason IS NOT NULL AND processed_at IS NULL AND ${orgClause(filter)} AND ${nameClause(filter)}`);
  return row.n;
}

const Moved = Type.Object({ id: Type.String(), name: Type.String(), org_id: Type.String() });

/** Puts DLQ events back to pending (attempts reset) and announces them. `ids` empty with `all`: every one matching the filter. */
export async function retryDlq(pool: DatabasePool, ids: readonly string[], filter: DlqFilter & { all?: boolean } = {}): Promise<string[]> {
  const moved = await pool.transaction(async (tx) => {
    const rows = await tx.any(sqlTyped(Moved)`
      UPDATE internal_events SET dlq_reason = NULL, dlq_at = NULL, attempts = 0, lease_until = NULL, lease_node = NULL,
        next_attempt_at = clock_timestamp()
      WHERE dlq_reason IS NOT NULL AND processed_at IS NULL AND ${selection(ids, filter)}
      RETURNING id::text AS id, name, org_id`);
    // Every named id or none: a typo never half-applies a retry.
    missing(ids, rows);
    for (const r of rows) await notify(tx, INTERNAL_EVENTS_CHANNEL, { id: r.id, name: r.name, orgId: r.org_id });
    return rows;
  });
  return moved.map((r) => r.id);
}

/** Ends DLQ events for good: marked processed with the reason, kept for the record. */
export async function discardDlq(pool: DatabasePool, ids: readonly string[], reason: string, filter: DlqFilter & { all?: boolean } = {}): Promise<string[]> {
  const rows = await pool.transaction(async (tx) => {
    const found = await tx.any(sqlTyped(Moved)`
      UPDATE internal_events SET processed_at = clock_timestamp(), outcome = ${`discarded from the dead-letter queue: ${reason}`.slice(0, 4000)}
      WHERE dlq_reason IS NOT NULL AND processed_at IS NULL AND ${selection(ids, filter)}
      RETURNING id::text AS id, name, org_id`);
    missing(ids, found);
    return found;
  });
  return rows.map((r) => r.id);
}

function selection(ids: readonly string[], filter: DlqFilter & { all?: boolean }) {
  if (ids.length > 0) return sql.fragment`id = ANY(${sql.array(ids.map(checkId), 'uuid')})`;
  if (filter.all !== true) throw new InputError('SVC_ERR_EVENT_DLQ_ID_INVALID', 'name at least one event id, or --all');
  return sql.fragment`${orgClause(filter)} AND ${nameClause(filter)}`;
}

function missing(ids: readonly string[], rows: ReadonlyArray<{ id: string }>): void {
  const found = new Set(rows.map((r) => r.id));
  const absent = ids.map((i) => i.toLowerCase()).filter((i) => !found.has(i));
  if (absent.length > 0) throw new NotFoundError('SVC_ERR_EVENT_DLQ_UNKNOWN', `no event ${absent.join(', ')} in the dead-letter queue`);
}
