// Run detail for `svc runs show` (relayed as `run.show.request`): the run, its lineage and
// timings, and each job with its agent and steps. Only runs of the asking org are visible; a run
// of another org reads as not found, so its existence does not leak.
import { Type, type Static } from 'typebox';
import type { RunJobView, RunView } from '../../../../schemas/wire/relay.ts';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { InputError, NotFoundError } from '../../../../core/errors.ts';
import { Nullable } from '../run-record.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const TERMINAL_RUN_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled', 'skipped']);

const Time = Nullable(Type.Number());

export function checkRunId(runId: string): string {
  if (typeof runId !== 'string' || !UUID.test(runId)) {
    throw new InputError('SVC_ERR_RUNS_ID_INVALID', `"${String(runId).slice(0, 80)}" is not a run id (a UUID, as "svc runs show" and the dashboard print it)`);
  }
  return runId.toLowerCase();
}

export function runNotFound(runId: string, orgId: string): NotFoundError {
  return new NotFoundError('SVC_ERR_RUNS_NOT_FOUND', `no run ${runId} in org ${orgId}`);
}

const RunRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  workflow: Type.String(),
  repository: Type.String(),
  workflow_repository: Type.String(),
  workflow_sha: Type.String(),
  sha: Type.String(),
  ref: Nullable(Type.String()),
  event_name: Type.String(),
  actor: Type.String(),
  trust_tier: Type.String(),
  delivery_id: Nullable(Type.String()),
  parent_run_id: Nullable(Type.String()),
  original_run_id: Nullable(Type.String()),
  triggered_by: Nullable(Type.String()),
  cancelled_by: Nullable(Type.String()),
  created_at: Type.Number(),
  started_at: Time,
  finished_at: Time,
});

const JobRow = Type.Object({
  id: Type.String(),
  name: Type.String(),
  display_name: Type.String(),
  kind: Type.String(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  agent_id: Nullable(Type.String()),
  needs: Type.Array(Type.String()),
  runs_on: Type.Array(Type.String()),
  attempts: Type.Number(),
  queued_at: Time,
  started_at: Time,
  finished_at: Time,
});

const StepRow = Type.Object({
  job_id: Type.String(),
  index: Type.Number(),
  name: Type.String(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  started_at: Time,
  finished_at: Time,
});

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export type RunRecord = Static<typeof RunRow>;

/** The run row of `orgId`, or NotFoundError. */
export async function findRun(pool: DatabasePool, orgId: string, runId: string): Promise<RunRecord> {
  const id = checkRunId(runId);
  const row = await pool.maybeOne(sqlTyped(RunRow)`
    select id::text as id, org_id, status, reason, workflow, repository, workflow_repository, workflow_sha, sha, ref, event_name,
      actor, trust_tier, delivery_id, parent_run_id::text as parent_run_id, original_run_id::text as original_run_id, triggered_by,
      cancelled_by, created_at, started_at, finished_at
    from runs where id = ${id} and org_id = ${orgId}`);
  if (row === null) throw runNotFound(id, orgId);
  return row;
}

/** The run's jobs in a stable order (creation, then id): the order logs and `show` use. */
export async function jobsOfRun(pool: DatabasePool, runId: string): Promise<Array<Static<typeof JobRow>>> {
  return [
    ...(await pool.any(sqlTyped(JobRow)`
      select id::text as id, name, display_name, kind, status, reason, agent_id, needs, runs_on, attempts, queued_at, started_at, finished_at
      from jobs where run_id = ${runId} order by created_at, id`)),
  ];
}

export async function loadRunView(pool: DatabasePool, orgId: string, runId: string): Promise<RunView> {
  const run = await findRun(pool, orgId, runId);
  const jobs = await jobsOfRun(pool, run.id);
  const steps = jobs.length === 0 ? [] : await pool.any(sqlTyped(StepRow)`
    select job_id::text as job_id, index, name, status, reason, started_at, finished_at
    from job_steps where job_id = any(${sql.array(jobs.map((j) => j.id), 'uuid')}) order by job_id, index`);
  const stepsByJob = new Map<string, RunJobView['steps']>();
  for (const s of steps) {
    const list = stepsByJob.get(s.job_id) ?? [];
    list.push({ index: s.index, name: s.name, status: s.status, reason: s.reason, startedAt: iso(s.started_at), finishedAt: iso(s.finished_at) });
    stepsByJob.set(s.job_id, list);
  }
  const started = run.started_at ?? jobs.reduce<number | null>((min, j) => (j.started_at !== null && (min === null || j.started_at < min) ? j.started_at : min), null);
  return {
    runId: run.id,
    orgId: run.org_id,
    status: run.status,
    reason: run.reason,
    workflow: run.workflow,
    repository: run.repository,
    workflowRepository: run.workflow_repository,
    workflowSha: run.workflow_sha,
    sha: run.sha,
    ref: run.ref,
    eventName: run.event_name,
    actor: run.actor,
    trustTier: run.trust_tier,
    deliveryId: run.delivery_id,
    parentRunId: run.parent_run_id,
    originalRunId: run.original_run_id,
    triggeredBy: run.triggered_by,
    cancelledBy: run.cancelled_by,
    createdAt: new Date(run.created_at).toISOString(),
    startedAt: iso(started),
    finishedAt: iso(run.finished_at),
    durationMs: run.finished_at === null ? null : Math.max(0, Math.round(run.finished_at - (started ?? run.created_at))),
    jobs: jobs.map((j) => ({
      jobId: j.id,
      name: j.name,
      displayName: j.display_name,
      kind: j.kind,
      status: j.status,
      reason: j.reason,
      agentId: j.agent_id,
      needs: j.needs,
      runsOn: j.runs_on,
      attempts: j.attempts,
      queuedAt: iso(j.queued_at),
      startedAt: iso(j.started_at),
      finishedAt: iso(j.finished_at),
      steps: stepsByJob.get(j.id) ?? [],
    })),
  };
}
