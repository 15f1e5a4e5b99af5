// A run's timeline (`run.timeline.request`, the dashboard's run page): per job, rows of where its
// time went, from the job's own timestamps (created, queued, dispatched, started, finished: the
// orchestrator's clock), the agent's set-up phases (job_phases, protocol 5 agents) and its steps
// (the agent's clock). Durations are whole milliseconds: timestamptz keeps microseconds and the
// pool reads them as epoch milliseconds, so nothing coarser than a millisecond is lost.
import { Type, type Static } from 'typebox';
import type { RunTimeline, RunTimelineJob, RunTimelineRow } from '../../../../schemas/wire/relay.ts';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { Nullable } from '../run-record.ts';
import { findRun } from './show.ts';

const Time = Nullable(Type.Number());

const JobRow = Type.Object({
  id: Type.String(),
  name: Type.String(),
  display_name: Type.String(),
  status: Type.String(),
  needs: Type.Array(Type.String()),
  created_at: Type.Number(),
  queued_at: Time,
  dispatched_at: Time,
  started_at: Time,
  finished_at: Time,
});

const PartRow = Type.Object({
  job_id: Type.String(),
  kind: Type.Union([Type.Literal('phase'), Type.Literal('step')]),
  name: Type.String(),
  status: Nullable(Type.String()),
  started_at: Time,
  finished_at: Time,
  /** A phase's part (`checkout.fetch`): after the phase that starts with it. */
  part: Type.Boolean(),
});

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function row(kind: RunTimelineRow['kind'], name: string, status: string | null, start: number, end: number | null, now: number): RunTimelineRow {
  return { kind, name, status, startedAt: new Date(start).toISOString(), finishedAt: iso(end), durationMs: Math.max(0, Math.round((end ?? now) - start)) };
}

/**
 * The orchestrator's rows of one job: waiting (created → queued), queued (→ dispatched),
 * dispatched (→ the agent reported it running). A row whose start is unknown is left out; one
 * whose end is unknown lasts while the job is still there, else it ended with the job.
 */
function jobRows(job: Static<typeof JobRow>, now: number): RunTimelineRow[] {
  const rows: RunTimelineRow[] = [];
  const end = (next: number | null): number | null => next ?? job.finished_at;
  // A job queued as it was created (no needs, no hold) waited for nothing: no row (now() is the
  // transaction's time, so both columns are equal then). Never queued: it waits still, or ended so.
  if (job.queued_at !== null ? job.queued_at - job.created_at >= 1 : job.dispatched_at === null) {
    rows.push(row('waiting', job.needs.length > 0 ? `needs ${job.needs.join(', ')}` : 'waiting', null, job.created_at, job.queued_at ?? job.finished_at, now));
  }
  if (job.queued_at !== null) rows.push(row('queued', 'queued', null, job.queued_at, end(job.dispatched_at ?? job.started_at), now));
  if (job.dispatched_at !== null) rows.push(row('dispatched', 'dispatched', null, job.dispatched_at, end(job.started_at), now));
  return rows;
}

/**
 * The timeline of a run of `orgId` (NotFoundError for another org's run, as `run.show`): jobs in
 * the order they started (else were dispatched, queued, created); a job's rows by start, a phase
 * before its parts (`checkout` before `checkout.fetch`), then by end.
 */
export async function loadRunTimeline(pool: DatabasePool, orgId: string, runId: string, now = Date.now()): Promise<RunTimeline> {
  const run = await findRun(pool, orgId, runId);
  const jobs = await pool.any(sqlTyped(JobRow)`
    select id::text as id, name, display_name, status, needs, created_at, queued_at, dispatched_at, started_at, finished_at
    from jobs where run_id = ${run.id} order by coalesce(started_at, dispatched_at, queued_at, created_at), created_at, id`);
  const ids = sql.array(
    jobs.map((j) => j.id),
    'uuid',
  );
  const parts =
    jobs.length === 0
      ? []
      : await pool.any(sqlTyped(PartRow)`
    select job_id::text as job_id, 'phase' as kind, name, null::text as status, started_at, finished_at, position('.' in name) > 0 as part
    from job_phases where job_id = any(${ids})
    union all
    select job_id::text, 'step', name, status, started_at, finished_at, false from job_steps where job_id = any(${ids})
    order by 1, 5 nulls last, 7, 6 nulls last, 3`);
  const partsOf = new Map<string, RunTimelineRow[]>();
  for (const p of parts) {
    if (p.started_at === null) continue;
    const list = partsOf.get(p.job_id) ?? [];
    list.push(row(p.kind, p.name, p.status, p.started_at, p.finished_at, now));
    partsOf.set(p.job_id, list);
  }
  const firstDispatch = jobs.reduce<number | null>((min, j) => (j.dispatched_at !== null && (min === null || j.dispatched_at < min) ? j.dispatched_at : min), null);
  const started = run.started_at ?? firstDispatch;
  const timelineJobs: RunTimelineJob[] = jobs.map((j) => ({
    jobId: j.id,
    name: j.name,
    displayName: j.display_name,
    status: j.status,
    needs: j.needs,
    createdAt: new Date(j.created_at).toISOString(),
    queuedAt: iso(j.queued_at),
    dispatchedAt: iso(j.dispatched_at),
    startedAt: iso(j.started_at),
    finishedAt: iso(j.finished_at),
    rows: [...jobRows(j, now), ...(partsOf.get(j.id) ?? [])],
  }));
  const queueEnd = started ?? (run.finished_at === null ? now : null);
  return {
    runId: run.id,
    createdAt: new Date(run.created_at).toISOString(),
    startedAt: iso(started),
    finishedAt: iso(run.finished_at),
    queueMs: queueEnd === null ? null : Math.max(0, Math.round(queueEnd - run.created_at)),
    runMs: started === null ? null : Math.max(0, Math.round((run.finished_at ?? now) - started)),
    jobs: timelineJobs,
  };
}
