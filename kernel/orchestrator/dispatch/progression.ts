// What follows a job reaching a terminal state: dependents whose needs all completed become
// `queued`; dependents of a failed, cancelled or skipped job become `skipped` (transitively); a
// run whose jobs are all terminal gets its final status. Runs are serialized by a row lock on
// `runs`, so two nodes finishing two jobs of one run at once cannot both miss the last step.
// The lock is FOR NO KEY UPDATE: it must not conflict with the KEY SHARE locks foreign keys
// (run_events, job inserts) take on the run, or two finishing jobs deadlock upgrading them.
import type { CommonQueryMethods } from 'slonik';
import { sql } from '../../services/db/index.ts';
import { notifyJobsQueued } from './notify.ts';

export const TERMINAL_JOB_STATUSES = ['completed', 'failed', 'cancelled', 'skipped'] as const;
const TERMINAL = new Set<string>(TERMINAL_JOB_STATUSES);
const TERMINAL_RUN = new Set(['completed', 'failed', 'cancelled', 'skipped']);

interface JobState {
  id: string;
  name: string;
  status: string;
  needs: readonly string[];
  reason: string | null;
}

export interface ProgressionResult {
  queued: string[];
  skipped: string[];
  /** The run's final status when this call finished it. */
  runFinished: string | null;
}

/** Records a job's terminal fact once (`job_complete`). */
export async function recordJobComplete(tx: CommonQueryMethods, runId: string, jobId: string, status: string, payload: Record<string, unknown> = {}): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO run_events (run_id, job_id, kind, status, payload)
    VALUES (${runId}, ${jobId}, 'job_complete', ${status}, ${sql.jsonb(payload as never)})
    ON CONFLICT DO NOTHING`);
}

/** Verdict on a waiting job from its needs' instances. */
function verdict(job: JobState, byName: Map<string, JobState[]>): { kind: 'ready' } | { kind: 'wait' } | { kind: 'skip'; reason: string } {
  let ready = true;
  for (const need of job.needs) {
    const instances = byName.get(need) ?? [];
    if (instances.length === 0) return { kind: 'skip', reason: `needs ${need} which does not exist in this run` };
    const bad = instances.find((i) => i.status === 'failed' || i.status === 'cancelled' || i.status === 'skipped');
    if (bad) return { kind: 'skip', reason: `needs ${need} which ${bad.status}` };
    if (!instances.every((i) => i.status === 'completed')) ready = false;
  }
  return ready ? { kind: 'ready' } : { kind: 'wait' };
}

/** Final run status from its terminal jobs. */
export function runOutcome(jobs: readonly JobState[], cancelRequested: boolean): string {
  if (cancelRequested || jobs.some((j) => j.status === 'cancelled')) return 'cancelled';
  if (jobs.some((j) => j.status === 'failed')) return 'failed';
  return 'completed';
}

/** Takes the run's progression lock; call before locking any of its jobs (one lock order everywhere). */
export async function lockRunForProgress(tx: CommonQueryMethods, runId: string): Promise<{ status: string; cancelled_by: string | null } | null> {
  return (await tx.maybeOne(sql.unsafe`SELECT status, cancelled_by FROM runs WHERE id = ${runId} FOR NO KEY UPDATE`)) as { status: string; cancelled_by: string | null } | null;
}

/**
 * Locks the runs of the jobs `where` selects, in id order, before any of those jobs is locked:
 * every path takes run locks before job locks, so cancel, status reports, sweeps and
 * disconnects cannot deadlock one another.
 */
export async function lockRunsOfJobs(tx: CommonQueryMethods, where: ReturnType<typeof sql.fragment>): Promise<void> {
  await tx.query(sql.unsafe`
    SELECT r.id FROM runs r WHERE r.id IN (SELECT run_id FROM jobs WHERE ${where}) ORDER BY r.id FOR NO KEY UPDATE OF r`);
}

/** Moves `runId` forward as far as its job states allow. Call inside a transaction. */
export async function progressRun(tx: CommonQueryMethods, runId: string): Promise<ProgressionResult> {
  const result: ProgressionResult = { queued: [], skipped: [], runFinished: null };
  const run = await lockRunForProgress(tx, runId);
  if (run === null) return result;
  const jobs = (await tx.any(sql.unsafe`
    SELECT id::text AS id, name, status, needs, reason FROM jobs WHERE run_id = ${runId} ORDER BY created_at, id`)) as readonly JobState[];
  const states = jobs.map((j) => ({ ...j }));
  const byName = new Map<string, JobState[]>();
  for (const job of states) {
    const list = byName.get(job.name) ?? [];
    list.push(job);
    byName.set(job.name, list);
  }
  // A skip can unblock no one but can skip further dependents: iterate to a fixed point.
  for (let changed = true, rounds = 0; changed && rounds <= states.length; rounds += 1) {
    changed = false;
    for (const job of states) {
      if (job.status !== 'waiting') continue;
      const v = verdict(job, byName);
      if (v.kind === 'skip') {
        job.status = 'skipped';
        job.reason = v.reason;
        result.skipped.push(job.id);
        changed = true;
      } else if (v.kind === 'ready') {
        job.status = 'queued';
        result.queued.push(job.id);
        changed = true;
      }
    }
  }
  for (const job of states.filter((j) => result.skipped.includes(j.id))) {
    await tx.query(sql.unsafe`
      UPDATE jobs SET status = 'skipped', reason = ${job.reason}, finished_at = now(), updated_at = now()
      WHERE id = ${job.id} AND status = 'waiting'`);
    await recordJobComplete(tx, runId, job.id, 'skipped', { reason: job.reason });
  }
  if (result.queued.length > 0) {
    await tx.query(sql.unsafe`
      UPDATE jobs SET status = 'queued', queued_at = now(), updated_at = now()
      WHERE id = ANY(${sql.array(result.queued, 'uuid')}) AND status = 'waiting'`);
    await notifyJobsQueued(tx);
  }
  if (!TERMINAL_RUN.has(run.status) && states.every((j) => TERMINAL.has(j.status))) {
    const status = runOutcome(states, run.cancelled_by !== null);
    const failed = states.filter((j) => j.status === 'failed').map((j) => j.name);
    const reason = status === 'failed' ? `job${failed.length > 1 ? 's' : ''} failed: ${[...new Set(failed)].join(', ')}` : null;
    await tx.query(sql.unsafe`
      UPDATE runs SET status = ${status}, reason = coalesce(${reason}, reason), finished_at = now(), updated_at = now() WHERE id = ${runId}`);
    await tx.query(sql.unsafe`
      INSERT INTO run_events (run_id, job_id, kind, status, payload)
      VALUES (${runId}, NULL, 'workflow_complete', ${status}, ${sql.jsonb({ jobs: states.map((j) => ({ id: j.id, name: j.name, status: j.status })) })})
      ON CONFLICT DO NOTHING`);
    result.runFinished = status;
  }
  return result;
}
