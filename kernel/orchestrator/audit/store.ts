// The audit trail's table (`audit_events`, migration 0905; docs/audit.md). Writers call
// `recordAudit` once per action, inside the action's own transaction where they have one, so the
// record and the change commit or roll back together. The table refuses UPDATE and DELETE itself
// (a trigger); only `purgeAudit`, the retention pass, deletes, and only rows older than its cut-off.
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import type { CommonQueryMethods } from 'slonik';
import { sql } from '../../services/db/index.ts';
import { InputError } from '../../../core/errors.ts';
import { AUDIT_ACTOR_KINDS, AUDIT_OUTCOMES, MAX_AUDIT_LIMIT, type AuditActor, type AuditEntry, type AuditEvent, type AuditQuery } from '../../../schemas/http/audit.ts';

const ACTION = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$/;
// Text PostgreSQL cannot store (NUL) or that would forge a line in a terminal listing.
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;

/** Who runs svc-admin on this machine: the OS user (svc-admin works on the database directly). */
export function operatorActor(): AuditActor {
  let name = 'unknown';
  try {
    name = userInfo().username || name;
  } catch {
    // No passwd entry (a container with an arbitrary uid): the uid is still someone.
    name = `uid ${process.getuid?.() ?? '?'}`;
  }
  return { kind: 'operator', id: '', name };
}

export const SYSTEM_ACTOR: AuditActor = { kind: 'system', id: '', name: 'svc' };

function clean(value: string, max: number): string {
  return value.replace(CONTROL, ' ').slice(0, max);
}

export type NewAuditEntry = Omit<AuditEntry, 'target' | 'detail' | 'via' | 'orgId'> & {
  orgId?: string;
  target?: string;
  detail?: string;
  via?: string;
  /** Set by a writer elsewhere (the relay): its id and its time. */
  id?: string;
  at?: string;
};

/** Checks an entry (a programming error or a bad relay frame is refused, never half stored). */
export function checkAuditEntry(entry: NewAuditEntry): void {
  if (!ACTION.test(entry.action) || entry.action.length > 100) throw new InputError('SVC_ERR_AUDIT_ENTRY_INVALID', `audit action ${JSON.stringify(entry.action).slice(0, 120)} is not <area>.<verb>`);
  if (!(AUDIT_ACTOR_KINDS as readonly string[]).includes(entry.actor.kind)) throw new InputError('SVC_ERR_AUDIT_ENTRY_INVALID', `audit actor kind ${JSON.stringify(entry.actor.kind)} is not one of ${AUDIT_ACTOR_KINDS.join(', ')}`);
  if (!(AUDIT_OUTCOMES as readonly string[]).includes(entry.outcome)) throw new InputError('SVC_ERR_AUDIT_ENTRY_INVALID', `audit outcome ${JSON.stringify(entry.outcome)} is not one of ${AUDIT_OUTCOMES.join(', ')}`);
  if (typeof entry.actor.name !== 'string' || entry.actor.name.trim() === '') throw new InputError('SVC_ERR_AUDIT_ENTRY_INVALID', 'an audit record must name who acted');
}

/**
 * Stores one record; returns its id. With `entry.id` (a relay record sent again after a lost ack)
 * a second write of the same id stores nothing.
 */
export async function recordAudit(db: CommonQueryMethods, entry: NewAuditEntry): Promise<string> {
  checkAuditEntry(entry);
  const id = entry.id ?? randomUUID();
  const at = entry.at === undefined ? null : time('at', entry.at);
  await db.query(sql.unsafe`
    INSERT INTO audit_events (id, at, org_id, actor_kind, actor_id, actor_name, action, target, outcome, detail, via)
    VALUES (${id}, coalesce(${at}::timestamptz, clock_timestamp()), ${clean(entry.orgId ?? '', 200)}, ${entry.actor.kind}, ${clean(entry.actor.id, 200)}, ${clean(entry.actor.name, 200)},
            ${entry.action}, ${clean(entry.target ?? '', 500)}, ${entry.outcome}, ${clean(entry.detail ?? '', 2000)}, ${clean(entry.via ?? '', 40)})
    ON CONFLICT (id) DO NOTHING`);
  return id;
}

function time(name: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) throw new InputError('SVC_ERR_AUDIT_QUERY_INVALID', `--${name} ${JSON.stringify(value).slice(0, 60)} is not a time (ISO 8601, e.g. 2026-12-01T00:00:00Z)`);
  return new Date(ms).toISOString();
}

interface Row {
  id: string;
  at: string;
  org_id: string;
  actor_kind: AuditActor['kind'];
  actor_id: string;
  actor_name: string;
  action: string;
  target: string;
  outcome: AuditEvent['outcome'];
  detail: string;
  via: string;
}

/** Records matching every given filter, newest first. */
export async function listAudit(db: CommonQueryMethods, query: AuditQuery = {}): Promise<AuditEvent[]> {
  const limit = query.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_AUDIT_LIMIT) throw new InputError('SVC_ERR_AUDIT_QUERY_INVALID', `--limit must be 1 to ${MAX_AUDIT_LIMIT}`);
  if (query.outcome !== undefined && !(AUDIT_OUTCOMES as readonly string[]).includes(query.outcome)) {
    throw new InputError('SVC_ERR_AUDIT_QUERY_INVALID', `--outcome must be one of ${AUDIT_OUTCOMES.join(', ')}`);
  }
  const since = time('since', query.since);
  const until = time('until', query.until);
  const where = [sql.fragment`TRUE`];
  if (query.actor !== undefined) where.push(sql.fragment`(lower(actor_name) = lower(${query.actor}) OR actor_id = ${query.actor})`);
  if (query.action !== undefined) {
    where.push(query.action.endsWith('.') ? sql.fragment`starts_with(action, ${query.action})` : sql.fragment`action = ${query.action}`);
  }
  if (query.org !== undefined) where.push(sql.fragment`org_id = ${query.org}`);
  if (query.outcome !== undefined) where.push(sql.fragment`outcome = ${query.outcome}`);
  if (since !== null) where.push(sql.fragment`at >= ${since}::timestamptz`);
  if (until !== null) where.push(sql.fragment`at < ${until}::timestamptz`);
  const rows = (await db.any(sql.unsafe`
    SELECT id::text AS id, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, org_id, actor_kind, actor_id, actor_name,
           action, target, outcome, detail, via
    FROM audit_events WHERE ${sql.join(where, sql.fragment` AND `)} ORDER BY at DESC, id DESC LIMIT ${limit}`)) as unknown as Row[];
  return rows.map((r) => ({
    id: r.id,
    at: r.at,
    orgId: r.org_id,
    actor: { kind: r.actor_kind, id: r.actor_id, name: r.actor_name },
    action: r.action,
    target: r.target,
    outcome: r.outcome,
    detail: r.detail,
    via: r.via,
  }));
}

/** Deletes records older than `days` days (the retention pass); returns how many. */
export async function purgeAudit(pool: { transaction<T>(fn: (tx: CommonQueryMethods) => Promise<T>): Promise<T> }, days: number): Promise<number> {
  if (!Number.isInteger(days) || days < 1) throw new InputError('SVC_ERR_AUDIT_QUERY_INVALID', 'audit retention is a whole number of days, at least 1');
  return pool.transaction(async (tx) => {
    const cutoff = (await tx.oneFirst(sql.unsafe`SELECT (now() - make_interval(days => ${days}))::text`)) as string;
    // The trigger lets a DELETE through only for rows older than this cut-off, in this transaction.
    await tx.query(sql.unsafe`SELECT set_config('svc.audit_purge', ${cutoff}, true)`);
    const deleted = await tx.query(sql.unsafe`DELETE FROM audit_events WHERE at < ${cutoff}::timestamptz`);
    return deleted.rowCount;
  });
}

/** One line per record for the terminal (`svc-admin audit list`). */
export function formatAuditLine(e: AuditEvent): string {
  const who = e.actor.kind === 'person' || e.actor.kind === 'forge' || e.actor.kind === 'operator' ? `${e.actor.kind} ${e.actor.name}` : `${e.actor.kind} ${e.actor.name}${e.actor.id === '' ? '' : ` (${e.actor.id})`}`;
  const org = e.orgId === '' ? '' : ` [${e.orgId}]`;
  const detail = e.detail === '' ? '' : ` — ${e.detail}`;
  return `${e.at}${org} ${who} ${e.action}${e.target === '' ? '' : ` ${e.target}`} ${e.outcome}${detail}`;
}
