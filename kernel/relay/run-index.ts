// The relay's run index (docs/run-index.md), fed by `execution.status` and `job.status.forward`
// from the orchestrators of each org and read by `GET /v1/orgs/:orgId/runs` (`svc runs list`)
// without asking an orchestrator. The orchestrator's records are authoritative: an update older
// than the stored one never overwrites it (resends after a reconnect are harmless).
// `last_rerun_at` and `cancelled_by` are what the Platform tracks (spec "Other records"): the
// dashboard routes set them at once, the orchestrator's records confirm them.
import { Type } from 'typebox';
import type { RunReport, RunStatus, RunSummary } from '../../schemas/http/run-index.ts';
import type { ExecutionStatus, JobStatusForward } from '../../schemas/wire/relay.ts';
import { sql, sqlTyped, type DatabasePool } from '../services/db/index.ts';

export type RunStatusUpdate = Omit<ExecutionStatus, 'type'>;
export type JobStatusUpdate = Omit<JobStatusForward, 'type'>;

const orNull = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

/** Status messages of one org received together, written in one transaction (recordStatusBatch). */
export interface StatusBatch {
  runs: RunStatusUpdate[];
  jobs: JobStatusUpdate[];
}

/**
 * Writes a batch of `execution.status` / `job.status.forward` messages of one org in one
 * transaction with one statement per kind, not a commit per message: an orchestrator forwards
 * a status for nearly every webhook (issue 19: the run index's commits were a third of the
 * relay database's). Per run or job only the newest message counts, as when they are applied
 * one by one: the stored record's `updated_at` guard still drops anything older than it.
 * Messages of older orchestrators (no `createdAt` or `kind`) take their own statements.
 */
export async function recordStatusBatch(pool: DatabasePool, orgId: string, batch: StatusBatch): Promise<void> {
  const runs = newestPerKey(batch.runs, (u) => u.runId, (older, newer) => (newer.cancelledBy == null && older.cancelledBy != null ? { ...newer, cancelledBy: older.cancelledBy } : newer));
  const jobs = newestPerKey(batch.jobs, (u) => u.jobId);
  if (runs.length === 0 && jobs.length === 0) return;
  await pool.transaction(async (tx) => {
    const full = runs.filter((u) => u.createdAt !== undefined);
    for (const u of runs) if (u.createdAt === undefined) await tx.query(legacyRunStatement(orgId, u));
    if (full.length > 0) await tx.query(runsStatement(orgId, full));
    const reruns = rerunsOf(full);
    if (reruns.length > 0) {
      // A re-run (whichever way it was started) is the parent's latest re-run; greatest() skips a null.
      await tx.query(sql.unsafe`
        update relay_runs r set last_rerun_at = greatest(r.last_rerun_at, v.at)
        from ${sql.unnest(reruns, ['text', 'timestamptz'])} as v(parent, at)
        where r.org_id = ${orgId} and r.run_id = v.parent and r.last_rerun_at is distinct from greatest(r.last_rerun_at, v.at)`);
    }
    const withKind = jobs.filter((u) => u.kind !== undefined);
    for (const u of jobs) if (u.kind === undefined) await tx.query(legacyJobStatement(orgId, u));
    if (withKind.length > 0) await tx.query(jobsStatement(orgId, withKind));
  });
}

/**
 * The newest message per key (a later one wins a tie, as it would applied after), in arrival
 * order of the survivors. `merge` carries what the stored record would have kept from an older one.
 */
function newestPerKey<T extends { updatedAt: string }>(items: readonly T[], key: (item: T) => string, merge: (older: T, newer: T) => T = (_o, n) => n): T[] {
  const kept = new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    const seen = kept.get(k);
    if (seen === undefined) kept.set(k, item);
    else if (Date.parse(item.updatedAt) >= Date.parse(seen.updatedAt)) kept.set(k, merge(seen, item));
    else kept.set(k, merge(item, seen));
  }
  return [...kept.values()];
}

/** Each parent run with the newest creation time among its re-runs in the batch. */
function rerunsOf(runs: readonly RunStatusUpdate[]): Array<[string, string]> {
  const latest = new Map<string, string>();
  for (const u of runs) {
    if (u.parentRunId == null || u.createdAt === undefined) continue;
    const seen = latest.get(u.parentRunId);
    if (seen === undefined || Date.parse(u.createdAt) > Date.parse(seen)) latest.set(u.parentRunId, u.createdAt);
  }
  return [...latest.entries()];
}

function runsStatement(orgId: string, runs: readonly RunStatusUpdate[]) {
  const tuples = runs.map((u) => [
    u.runId, u.workflow, u.repository, u.status, u.updatedAt, orNull(u.reason), orNull(u.eventName), orNull(u.ref), orNull(u.sha), orNull(u.actor),
    u.createdAt!, orNull(u.startedAt), orNull(u.finishedAt), orNull(u.parentRunId), orNull(u.originalRunId), orNull(u.triggeredBy), orNull(u.cancelledBy),
  ]);
  const types = ['text', 'text', 'text', 'text', 'timestamptz', 'text', 'text', 'text', 'text', 'text', 'timestamptz', 'timestamptz', 'timestamptz', 'text', 'text', 'text', 'text'];
  return sql.unsafe`
    insert into relay_runs (org_id, run_id, workflow, repository, status, updated_at, reason, event_name, ref, sha, actor,
                            created_at, started_at, finished_at, parent_run_id, original_run_id, triggered_by, cancelled_by)
    select ${orgId}, v.* from ${sql.unnest(tuples, types)}
      as v(run_id, workflow, repository, status, updated_at, reason, event_name, ref, sha, actor, created_at, started_at, finished_at,
           parent_run_id, original_run_id, triggered_by, cancelled_by)
    on conflict (org_id, run_id) do update set
      workflow = excluded.workflow, repository = excluded.repository, status = excluded.status, updated_at = excluded.updated_at,
      reason = excluded.reason, event_name = excluded.event_name, ref = excluded.ref, sha = excluded.sha, actor = excluded.actor,
      created_at = excluded.created_at, started_at = excluded.started_at, finished_at = excluded.finished_at,
      parent_run_id = excluded.parent_run_id, original_run_id = excluded.original_run_id, triggered_by = excluded.triggered_by,
      -- The orchestrator's record wins; until it names someone, the dashboard's entry stays.
      cancelled_by = coalesce(excluded.cancelled_by, relay_runs.cancelled_by)
    where relay_runs.updated_at <= excluded.updated_at`;
}

function jobsStatement(orgId: string, jobs: readonly JobStatusUpdate[]) {
  const tuples = jobs.map((u) => [u.runId, u.jobId, u.job, u.status, u.updatedAt, u.kind!, orNull(u.reason), orNull(u.startedAt), orNull(u.finishedAt)]);
  const types = ['text', 'text', 'text', 'text', 'timestamptz', 'text', 'text', 'timestamptz', 'timestamptz'];
  return sql.unsafe`
    insert into relay_jobs (org_id, run_id, job_id, job, status, updated_at, kind, reason, started_at, finished_at)
    select ${orgId}, v.* from ${sql.unnest(tuples, types)} as v(run_id, job_id, job, status, updated_at, kind, reason, started_at, finished_at)
    on conflict (org_id, job_id) do update set
      run_id = excluded.run_id, job = excluded.job, status = excluded.status, updated_at = excluded.updated_at,
      kind = excluded.kind, reason = excluded.reason, started_at = excluded.started_at, finished_at = excluded.finished_at
    where relay_jobs.updated_at <= excluded.updated_at`;
}

/** An older orchestrator's run message: status only; first seen stands in for the creation time. */
function legacyRunStatement(orgId: string, u: RunStatusUpdate) {
  return sql.unsafe`
    insert into relay_runs (org_id, run_id, workflow, repository, status, updated_at, created_at)
    values (${orgId}, ${u.runId}, ${u.workflow}, ${u.repository}, ${u.status}, ${u.updatedAt}::timestamptz, ${u.updatedAt}::timestamptz)
    on conflict (org_id, run_id) do update set
      workflow = excluded.workflow, repository = excluded.repository, status = excluded.status, updated_at = excluded.updated_at
    where relay_runs.updated_at <= excluded.updated_at`;
}

/** An older orchestrator's job message: no kind, reason or times. */
function legacyJobStatement(orgId: string, u: JobStatusUpdate) {
  return sql.unsafe`
    insert into relay_jobs (org_id, run_id, job_id, job, status, updated_at)
    values (${orgId}, ${u.runId}, ${u.jobId}, ${u.job}, ${u.status}, ${u.updatedAt}::timestamptz)
    on conflict (org_id, job_id) do update set
      run_id = excluded.run_id, job = excluded.job, status = excluded.status, updated_at = excluded.updated_at
    where relay_jobs.updated_at <= excluded.updated_at`;
}

/** Where a page starts: strictly before this creation time (and, at that time, before this run id). */
export interface RunListCursor {
  createdAt: Date;
  runId?: string;
}

export interface RunListFilter {
  limit: number;
  status?: RunStatus;
  repository?: string;
  workflow?: string;
  /** A branch name (`main`) or a full ref (`refs/heads/main`). */
  branch?: string;
  before?: RunListCursor;
}

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const RunRow = Type.Object({
  run_id: Type.String(),
  org_id: Type.String(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  workflow: Type.String(),
  repository: Type.String(),
  ref: Nullable(Type.String()),
  sha: Nullable(Type.String()),
  event_name: Nullable(Type.String()),
  actor: Nullable(Type.String()),
  created_at: Type.Number(),
  started_at: Nullable(Type.Number()),
  finished_at: Nullable(Type.Number()),
  updated_at: Type.Number(),
  parent_run_id: Nullable(Type.String()),
  original_run_id: Nullable(Type.String()),
  triggered_by: Nullable(Type.String()),
  cancelled_by: Nullable(Type.String()),
  last_rerun_at: Nullable(Type.Number()),
});
const JobCountRow = Type.Object({ run_id: Type.String(), status: Type.String(), n: Type.Number() });

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The cursor of the page after one ending with `last`. */
export function cursorAfter(last: Pick<RunSummary, 'createdAt' | 'runId'>): string {
  return `${last.createdAt},${last.runId}`;
}

/** An org's runs from the index, newest first (created, then run id), with job counts by status. */
export async function listIndexedRuns(pool: DatabasePool, orgId: string, filter: RunListFilter): Promise<RunSummary[]> {
  const where = [sql.fragment`org_id = ${orgId}`];
  if (filter.status !== undefined) where.push(sql.fragment`status = ${filter.status}`);
  if (filter.repository !== undefined) where.push(sql.fragment`repository = ${filter.repository}`);
  if (filter.workflow !== undefined) where.push(sql.fragment`workflow = ${filter.workflow}`);
  if (filter.branch !== undefined) {
    const ref = filter.branch.startsWith('refs/') ? filter.branch : `refs/heads/${filter.branch}`;
    where.push(sql.fragment`ref = ${ref}`);
  }
  const before = filter.before;
  if (before !== undefined) {
    const at = before.createdAt.toISOString();
    where.push(before.runId === undefined ? sql.fragment`created_at < ${at}::timestamptz` : sql.fragment`(created_at, run_id) < (${at}::timestamptz, ${before.runId})`);
  }
  const rows = await pool.any(sqlTyped(RunRow)`
    select run_id, org_id, status, reason, workflow, repository, ref, sha, event_name, actor, created_at, started_at, finished_at,
      updated_at, parent_run_id, original_run_id, triggered_by, cancelled_by, last_rerun_at
    from relay_runs where ${sql.join(where, sql.fragment` and `)}
    order by created_at desc, run_id desc limit ${filter.limit}`);
  const counts = new Map<string, Record<string, number>>();
  if (rows.length > 0) {
    const byStatus = await pool.any(sqlTyped(JobCountRow)`
      select run_id, status, count(*)::int as n from relay_jobs
      where org_id = ${orgId} and run_id = any(${sql.array(rows.map((r) => r.run_id), 'text')})
      group by run_id, status order by run_id, status`);
    for (const c of byStatus) (counts.get(c.run_id) ?? counts.set(c.run_id, {}).get(c.run_id)!)[c.status] = c.n;
  }
  return rows.map((r) => ({
    runId: r.run_id,
    orgId: r.org_id,
    status: r.status,
    reason: r.reason,
    workflow: r.workflow,
    repository: r.repository,
    ref: r.ref,
    sha: r.sha,
    eventName: r.event_name,
    actor: r.actor,
    createdAt: new Date(r.created_at).toISOString(),
    startedAt: iso(r.started_at),
    finishedAt: iso(r.finished_at),
    updatedAt: new Date(r.updated_at).toISOString(),
    parentRunId: r.parent_run_id,
    originalRunId: r.original_run_id,
    triggeredBy: r.triggered_by,
    cancelledBy: r.cancelled_by,
    lastRerunAt: iso(r.last_rerun_at),
    jobs: counts.get(r.run_id) ?? {},
  }));
}

const ReportRow = Type.Object({
  workflow: Type.String(),
  status: Type.String(),
  n: Type.Number(),
});

/**
 * `svc report`: the org's runs created since `since`, per workflow: how many, counts by status,
 * the failure rate (failed among runs that ended completed or failed) and the median duration
 * of ended runs (started, else created, to finished). From the index only, no orchestrator.
 */
export async function reportIndexedRuns(pool: DatabasePool, orgId: string, since: Date): Promise<RunReport> {
  const rows = await pool.any(sqlTyped(ReportRow)`
    select workflow, status, count(*)::int as n
    from relay_runs where org_id = ${orgId} and created_at >= ${since.toISOString()}::timestamptz
    group by workflow, status order by workflow, status`);
  const durations = await pool.any(sqlTyped(Type.Object({ workflow: Type.String(), median_ms: Nullable(Type.Number()) }))`
    select workflow, (percentile_cont(0.5) within group (order by extract(epoch from finished_at - coalesce(started_at, created_at)) * 1000))::float8 as median_ms
    from relay_runs where org_id = ${orgId} and created_at >= ${since.toISOString()}::timestamptz and finished_at is not null
    group by workflow`);
  const medians = new Map(durations.map((d) => [d.workflow, d.median_ms]));
  const byWorkflow = new Map<string, Record<string, number>>();
  for (const r of rows) (byWorkflow.get(r.workflow) ?? byWorkflow.set(r.workflow, {}).get(r.workflow)!)[r.status] = r.n;
  const line = (workflow: string, statuses: Record<string, number>) => {
    const total = Object.values(statuses).reduce((a, b) => a + b, 0);
    const failed = statuses['failed'] ?? 0;
    const ended = failed + (statuses['completed'] ?? 0);
    const median = medians.get(workflow);
    return { workflow, total, statuses, failureRate: ended === 0 ? null : failed / ended, medianDurationMs: median === undefined || median === null ? null : Math.round(median) };
  };
  const workflows = [...byWorkflow].map(([w, st]) => line(w, st));
  const all: Record<string, number> = {};
  for (const w of workflows) for (const [st, n] of Object.entries(w.statuses)) all[st] = (all[st] ?? 0) + n;
  const failed = all['failed'] ?? 0;
  const ended = failed + (all['completed'] ?? 0);
  return {
    orgId,
    since: since.toISOString(),
    total: workflows.reduce((a, w) => a + w.total, 0),
    statuses: all,
    failureRate: ended === 0 ? null : failed / ended,
    workflows,
  };
}
