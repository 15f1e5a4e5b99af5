// The scheduling part of `job.dispatch`'s jobConfig: the role of a pseudo-job and what it needs
// (the run's outcome for the workflow hooks, the generator to evaluate), and for a generated job
// the generator that made it (the runner re-evaluates it to find the job's closures).
import type { LockWorkflow } from '../../../schemas/lock.ts';
import type { JobDispatch } from '../../../schemas/wire/agent.ts';
import type { WorkflowOutcome } from '../../../schemas/wire/runner.ts';
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { generatorEntryOf, HOOKS_JOB_NAME, isInternalJobName } from './names.ts';
import { outputsOf } from './outputs.ts';
import { generatorOf } from './plan.ts';

type JobConfig = JobDispatch['jobConfig'];

export interface SchedulingRow {
  job_id: string;
  run_id: string;
  name: string;
  kind: string;
  generated_by: string | null;
  lock_entry: unknown;
}

interface OutcomeJob {
  name: string;
  kind: string;
  status: string;
  reason: string | null;
  failed_step: string | null;
}

/** The run's outcome so far, for the workflow hooks (every other job is terminal by now). */
export async function workflowOutcomeOf(pool: Pick<DatabasePool, 'any' | 'one'>, runId: string): Promise<WorkflowOutcome> {
  const run = (await pool.one(sql.unsafe`
    SELECT cancelled_by, reason, (extract(epoch FROM now() - created_at) * 1000)::bigint AS duration FROM runs WHERE id = ${runId}`)) as {
    cancelled_by: string | null;
    reason: string | null;
    duration: bigint | number;
  };
  const jobs = (await pool.any(sql.unsafe`
    SELECT j.name, j.kind, j.status, j.reason,
      (SELECT s.name FROM job_steps s WHERE s.job_id = j.id AND s.status = 'failed' ORDER BY s.index LIMIT 1) AS failed_step
    FROM jobs j WHERE j.run_id = ${runId} AND j.name <> ${HOOKS_JOB_NAME} ORDER BY j.finished_at NULLS LAST, j.created_at, j.id`)) as readonly OutcomeJob[];
  const duration = Math.max(0, Number(run.duration));
  if (run.cancelled_by !== null || jobs.some((j) => j.status === 'cancelled')) {
    return { status: 'cancelled', reason: run.reason ?? `Cancelled by ${run.cancelled_by ?? 'a job cancel'}`, duration };
  }
  const failed = jobs.find((j) => j.status === 'failed');
  if (failed === undefined) return { status: 'success', duration };
  return {
    status: 'failed',
    reason: `job ${failed.name} failed${failed.reason === null ? '' : `: ${failed.reason}`}`.slice(0, 10_000),
    failedJob: failed.name,
    ...(failed.failed_step === null ? {} : { failedStep: failed.failed_step }),
    duration,
  };
}

/** Fields to merge into jobConfig; empty for an ordinary lock job. */
export async function schedulingJobConfig(pool: Pick<DatabasePool, 'any' | 'one'>, row: SchedulingRow): Promise<Partial<JobConfig>> {
  const workflow = row.lock_entry as LockWorkflow;
  if (row.kind === 'filter') return { role: 'filter' };
  if (row.kind === 'hooks') {
    // The workflow hooks see every job's outputs through ctx.jobOutputs.
    const names = (await pool.any(sql.unsafe`SELECT DISTINCT name FROM jobs WHERE run_id = ${row.run_id}`)) as readonly { name: string }[];
    const lockNames = Array.isArray(workflow?.jobs) ? workflow.jobs.map((j) => j.name) : [];
    const needs = await outputsOf(pool, row.run_id, [...names.map((n) => n.name), ...lockNames].filter((n) => !isInternalJobName(n)));
    return { role: 'hooks', workflowOutcome: await workflowOutcomeOf(pool, row.run_id), needs };
  }
  const entryName = row.kind === 'generate' ? generatorEntryOf(row.name) : (row.generated_by ?? undefined);
  if (entryName === undefined) return {};
  const entry = Array.isArray(workflow?.jobs) ? workflow.jobs.find((j) => j.name === entryName) : undefined;
  const spec = entry === undefined ? undefined : generatorOf(entry);
  if (entry === undefined || spec === undefined) return row.kind === 'generate' ? { role: 'generate' } : {};
  const generator = { entry: entryName, ref: spec.ref, kind: spec.kind, needs: await outputsOf(pool, row.run_id, entry.needs) };
  return row.kind === 'generate' ? { role: 'generate', generator } : { generator };
}
