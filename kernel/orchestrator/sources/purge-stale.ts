// Stale sources, for `svc-admin source purge-stale`. A source is stale when, for `olderThanDays`:
//   - it was created (or last changed) before the cut-off,
//   - no webhook delivery came through it since the cut-off (delivery log, `webhook_deliveries`),
//   - no run came through it since the cut-off (`runs.source_id` / `workflow_source_id`),
// and no run that came through it (or reads its workflow from it) is unfinished (held, queued,
// running) whenever it was created. Purging deletes the source and what exists only for it:
// its registrations and run-status webhook (cascades) and its forge-status deliveries not yet
// delivered. History stays: runs, jobs, logs and the delivery log keep their rows (they name
// the source id and expire by their own retention). One transaction; the relay link re-reads
// the sources on the same notification `source remove` sends.
import { Type } from 'typebox';
import { notify, sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { SOURCES_CHANNEL } from './store.ts';

export const DEFAULT_STALE_DAYS = 90;

export interface StaleSource {
  id: string;
  orgId: string;
  providerKind: string;
  routingKey: string;
  name: string;
  createdAt: string;
  /** Newest delivery or run through the source, or null when there was none ever. */
  lastActivityAt: string | null;
  registrations: number;
}

export interface PurgeCounts {
  sources: number;
  registrations: number;
  statusWebhooks: number;
  forgeStatusDeliveries: number;
}

const ISO = (expr: ReturnType<typeof sql.fragment>) => sql.fragment`to_char(${expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`;

const StaleRow = Type.Object({
  id: Type.String(),
  orgId: Type.String(),
  providerKind: Type.String(),
  routingKey: Type.String(),
  name: Type.String(),
  createdAt: Type.String(),
  lastActivityAt: Type.Union([Type.String(), Type.Null()]),
  registrations: Type.Number(),
});

const UNFINISHED = sql.fragment`('held', 'queued', 'running')`;

/** Sources stale for `days` (see the file comment), oldest activity first. Locks them with FOR UPDATE when `lock`. */
function staleQuery(days: number, lock: boolean) {
  const cutoff = sql.fragment`now() - ${days} * interval '1 day'`;
  const activity = sql.fragment`greatest(
    (select max(d.received_at) from webhook_deliveries d where d.source_id = s.id),
    (select max(r.created_at) from runs r where r.source_id = s.id or r.workflow_source_id = s.id))`;
  return sqlTyped(StaleRow)`
    select s.id::text as id, s.org_id as "orgId", s.provider_kind as "providerKind", s.routing_key as "routingKey", s.name,
      ${ISO(sql.fragment`s.created_at`)} as "createdAt",
      ${ISO(activity)} as "lastActivityAt",
      (select count(*) from registrations g where g.source_id = s.id)::int as registrations
    from sources s
    where greatest(s.created_at, s.updated_at) < ${cutoff}
      and coalesce(${activity} < ${cutoff}, true)
      and not exists (select 1 from runs r where (r.source_id = s.id or r.workflow_source_id = s.id) and r.status in ${UNFINISHED})
    order by coalesce(${activity}, s.created_at), s.id
    ${lock ? sql.fragment`for update of s` : sql.fragment``}`;
}

export async function findStaleSources(pool: DatabasePool, days: number): Promise<readonly StaleSource[]> {
  return pool.any(staleQuery(days, false));
}

const Count = Type.Object({ n: Type.Number() });
const countQuery = (fragment: ReturnType<typeof sql.fragment>) => sqlTyped(Count)`${fragment}`;

/** Deletes the stale sources in one transaction; the list is re-read under lock so a source that came alive meanwhile stays. */
export async function purgeStaleSources(pool: DatabasePool, days: number): Promise<{ purged: readonly StaleSource[]; counts: PurgeCounts }> {
  return pool.transaction(async (tx) => {
    const purged = await tx.any(staleQuery(days, true));
    const ids = sql.array(purged.map((s) => s.id), 'uuid');
    const n = async (query: ReturnType<typeof countQuery>) => (await tx.one(query)).n;
    const counts: PurgeCounts = {
      sources: purged.length,
      registrations: await n(countQuery(sql.fragment`select count(*)::int as n from registrations where source_id = any(${ids})`)),
      statusWebhooks: await n(countQuery(sql.fragment`select count(*)::int as n from source_status_webhooks where source_id = any(${ids})`)),
      forgeStatusDeliveries: await n(countQuery(sql.fragment`
        with d as (delete from forge_status_deliveries where source_id = any(${ids}) and status = 'pending' returning 1) select count(*)::int as n from d`)),
    };
    if (purged.length > 0) {
      await tx.query(sql.unsafe`delete from sources where id = any(${ids})`);
      for (const s of purged) await notify(tx, SOURCES_CHANNEL, { id: s.id, orgId: s.orgId });
    }
    return { purged, counts };
  });
}
