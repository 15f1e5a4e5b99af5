// A minimal run index fed by `execution.status` and `job.status.forward`, for the dashboard. The
// orchestrator's own records are authoritative; an older update never overwrites a newer one.
import { sql, type DatabasePool } from '../services/db/index.ts';

export interface RunStatusUpdate {
  runId: string;
  workflow: string;
  repository: string;
  status: string;
  updatedAt: string;
}

export interface JobStatusUpdate {
  runId: string;
  jobId: string;
  job: string;
  status: string;
  updatedAt: string;
}

export async function recordRunStatus(pool: DatabasePool, orgId: string, u: RunStatusUpdate): Promise<void> {
  await pool.query(sql.unsafe`
    insert into relay_runs (org_id, run_id, workflow, repository, status, updated_at)
    values (${orgId}, ${u.runId}, ${u.workflow}, ${u.repository}, ${u.status}, ${u.updatedAt}::timestamptz)
    on conflict (org_id, run_id) do update set
      workflow = excluded.workflow, repository = excluded.repository, status = excluded.status, updated_at = excluded.updated_at
    where relay_runs.updated_at <= excluded.updated_at`);
}

export async function recordJobStatus(pool: DatabasePool, orgId: string, u: JobStatusUpdate): Promise<void> {
  await pool.query(sql.unsafe`
    insert into relay_jobs (org_id, run_id, job_id, job, status, updated_at)
    values (${orgId}, ${u.runId}, ${u.jobId}, ${u.job}, ${u.status}, ${u.updatedAt}::timestamptz)
    on conflict (org_id, job_id) do update set
      run_id = excluded.run_id, job = excluded.job, status = excluded.status, updated_at = excluded.updated_at
    where relay_jobs.updated_at <= excluded.updated_at`);
}
