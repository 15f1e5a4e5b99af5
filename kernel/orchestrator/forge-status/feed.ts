// The reporter's side of the run status feed (migration 0600): claims feed rows this column has
// not handled (`forge_done_at IS NULL`, FOR UPDATE SKIP LOCKED so nodes share the work), turns
// each run-level change into one delivery per target of the run, and marks the rows done in the
// SAME transaction. Job-level rows are only marked done: the summary reads the jobs when it is
// sent. A run's targets:
//   - `provider`: the run's source, when its provider implements `reportRunStatus`;
//   - `webhook`: the run's source, and for a run a generic source fanned out the generic source
//     too, when it has a run-status webhook (source_status_webhooks).
import { Type } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { notify, PLAN_EACH_EXECUTION, sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { reportedState } from './state.ts';
import { enqueueDeliveries, type NewDelivery } from './store.ts';
import { sourcesWithWebhooks } from './webhook-config.ts';

/** NOTIFY channel the reporter sends when it enqueued deliveries (wakes the senders of every node). */
export const FORGE_STATUS_CHANNEL = 'svc_forge_status';
/** The feed's channel (migration 0600). */
export const RUN_STATUS_CHANNEL = 'svc_run_status';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const FeedRow = Type.Object({
  seq: Type.Number(),
  org_id: Type.String(),
  run_id: Type.String(),
  job_id: Nullable(Type.String()),
  status: Type.String(),
  at: Type.Number(),
});

const RunRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  source_id: Nullable(Type.String()),
  delivery_id: Nullable(Type.String()),
  finished: Type.Boolean(),
  provider_kind: Nullable(Type.String()),
});

export interface FeedDeps {
  pool: DatabasePool;
  /** Whether providers of this kind report run status (a signed-in provider with `reportRunStatus`). */
  reports(providerKind: string): boolean;
}

/** `<delivery id>[#generation]:<registration uuid>`: a run a generic delivery fanned out. */
const FAN_OUT_KEY = /^(.+?)(?:#\d+)?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const GenericRowKeyed = Type.Object({ org_id: Type.String(), delivery_id: Type.String(), source_id: Type.String(), provider_kind: Type.String() });

/**
 * The generic source whose delivery started each run that a generic fan-out started, by run id:
 * one statement for the whole batch (a statement per run was a round trip per webhook's run).
 */
async function genericSourcesOf(
  tx: CommonQueryMethods,
  runs: ReadonlyArray<{ id: string; org_id: string; delivery_id: string | null }>,
): Promise<Map<string, { source_id: string; provider_kind: string }>> {
  const wanted = runs.flatMap((run) => {
    const match = run.delivery_id === null ? null : FAN_OUT_KEY.exec(run.delivery_id);
    return match === null ? [] : [{ runId: run.id, orgId: run.org_id, deliveryId: match[1]! }];
  });
  const found = new Map<string, { source_id: string; provider_kind: string }>();
  if (wanted.length === 0) return found;
  const rows = await tx.any(sqlTyped(GenericRowKeyed)`${PLAN_EACH_EXECUTION}
    SELECT d.org_id, d.delivery_id, d.source_id::text AS source_id, d.provider_kind
    FROM webhook_deliveries d
    JOIN unnest(${sql.array(wanted.map((w) => w.orgId), 'text')}, ${sql.array(wanted.map((w) => w.deliveryId), 'text')}) AS w(org_id, delivery_id)
      ON d.org_id = w.org_id AND d.delivery_id = w.delivery_id
    WHERE d.provider_kind = 'generic' AND d.source_id IS NOT NULL`);
  const byDelivery = new Map(rows.map((r) => [`${r.org_id}\u0000${r.delivery_id}`, r]));
  for (const w of wanted) {
    const row = byDelivery.get(`${w.orgId}\u0000${w.deliveryId}`);
    if (row !== undefined) found.set(w.runId, { source_id: row.source_id, provider_kind: row.provider_kind });
  }
  return found;
}

/**
 * One batch: claims up to `limit` feed rows, enqueues their deliveries, marks them done. Returns
 * how many rows it handled (fewer than `limit`: the feed is drained for now) and deliveries made.
 */
export async function drainFeedBatch(deps: FeedDeps, limit: number): Promise<{ rows: number; enqueued: number }> {
  return deps.pool.transaction(async (tx) => {
    const rows = await tx.any(sqlTyped(FeedRow)`
      SELECT seq::float8 AS seq, org_id, run_id::text AS run_id, job_id::text AS job_id, status, at FROM run_status_feed
      WHERE forge_done_at IS NULL ORDER BY seq LIMIT ${limit} FOR UPDATE SKIP LOCKED`);
    if (rows.length === 0) return { rows: 0, enqueued: 0 };
    const runLevel = rows.filter((r) => r.job_id === null);
    const deliveries: NewDelivery[] = [];
    if (runLevel.length > 0) {
      const runIds = [...new Set(runLevel.map((r) => r.run_id))];
      const runs = await tx.any(sqlTyped(RunRow)`${PLAN_EACH_EXECUTION}
        SELECT r.id::text AS id, r.org_id, r.source_id::text AS source_id, r.delivery_id, r.finished_at IS NOT NULL AS finished, s.provider_kind
        FROM runs r LEFT JOIN sources s ON s.id = r.source_id
        WHERE r.id = ANY(${sql.array(runIds, 'uuid')})`);
      // Per run: its webhook sources (own source, then the generic source that fanned it out).
      const targets = new Map<string, { run: (typeof runs)[number]; webhookSources: Array<{ id: string; kind: string }> }>();
      const generics = await genericSourcesOf(tx, runs);
      for (const run of runs) {
        const sources: Array<{ id: string; kind: string }> = [];
        if (run.source_id !== null && run.provider_kind !== null) sources.push({ id: run.source_id, kind: run.provider_kind });
        const generic = generics.get(run.id);
        if (generic !== undefined && generic.source_id !== run.source_id) sources.push({ id: generic.source_id, kind: generic.provider_kind });
        targets.set(run.id, { run, webhookSources: sources });
      }
      const withWebhooks = await sourcesWithWebhooks(tx, [...new Set([...targets.values()].flatMap((t) => t.webhookSources.map((s) => s.id)))]);
      for (const row of runLevel) {
        const target = targets.get(row.run_id);
        if (target === undefined) continue; // the run is gone
        const { run } = target;
        const reported = reportedState(row.status, run.finished);
        const base = { orgId: row.org_id, runId: row.run_id, feedSeq: row.seq, changedAt: row.at, runStatus: row.status, state: reported.state, conclusion: reported.conclusion };
        if (run.source_id !== null && run.provider_kind !== null && deps.reports(run.provider_kind)) {
          deliveries.push({ ...base, target: 'provider', sourceId: run.source_id, providerKind: run.provider_kind });
        }
        for (const source of target.webhookSources) {
          if (withWebhooks.has(source.id)) deliveries.push({ ...base, target: 'webhook', sourceId: source.id, providerKind: source.kind });
        }
      }
    }
    const enqueued = await enqueueDeliveries(tx, deliveries);
    await tx.query(sql.unsafe`${PLAN_EACH_EXECUTION}
      UPDATE run_status_feed SET forge_done_at = clock_timestamp() WHERE seq = ANY(${sql.array(rows.map((r) => r.seq), 'int8')})`);
    if (enqueued > 0) await notify(tx, FORGE_STATUS_CHANNEL, '');
    return { rows: rows.length, enqueued };
  });
}

/**
 * Whether unhandled feed rows remain: after a batch that was not full, they are rows another
 * claim holds (the relay forwarder locks the same rows for its own column), worth a quick retry.
 */
export async function feedPending(pool: DatabasePool): Promise<boolean> {
  return (await pool.oneFirst(sqlTyped(Type.Object({ pending: Type.Boolean() }))`
    SELECT EXISTS (SELECT 1 FROM run_status_feed WHERE forge_done_at IS NULL) AS pending`)) as boolean;
}
