// What follows a job reaching a terminal state: dependents whose needs all completed become
// `queued`; dependents of a failed, cancelled or skipped job become `skipped` (transitively); a
// run whose jobs are all terminal gets its final status. Runs are serialized by a row lock on
// `runs`, so two nodes finishing two jobs of one run at once cannot both miss the last step.
// The lock is FOR NO KEY UPDATE: it must not conflict with the KEY SHARE locks foreign keys
// (run_events, job inserts) take on the run, or two finishing jobs deadlock upgrading them.
// Scheduling pseudo-jobs (docs/scheduling.md): a need on a dynamic entry waits for its generator
// job and every job it generated; `svc:hooks` is released once every other job is terminal and
// is never skipped by their failure; a skipped `svc:filter` (filter false) skips the run.
// Coalesced builds (spec Delivery guarantee 5, docs/ingest.md): jobs of other runs waiting on a
// build key (`jobs.waits_for_build`, no `svc:build` in their needs) wait until the build job's
// terminal fact is recorded, which releases them (completed) or skips them (otherwise).
import { emitJobComplete, emitWorkflowComplete } from '../events/completion.ts';
import type { CommonQueryMethods } from 'slonik';
import { notify, sql } from '../../services/db/index.ts';
import { generatorEntryOf } from '../scheduling/names.ts';
import { notifyJobsQueued, RUN_CONTROL_CHANNEL } from './notify.ts';
import { retryFailedAttempt, type FailureFacts } from './retry.ts';

export const TERMINAL_JOB_STATUSES = ['completed', 'failed', 'cancelled', 'skipped'] as const;
const TERMINAL = new Set<string>(TERMINAL_JOB_STATUSES);
const TERMINAL_RUN = new Set(['completed', 'failed', 'cancelled', 'skipped']);

interface JobState {
  id: string;
  name: string;
  kind?: string;
  gated?: boolean;
  ready_at?: unknown;
  generated_by?: string | null;
  status: string;
  needs: readonly string[];
  reason: string | null;
  waits_for_build?: string | null;
}

/** Reason of jobs (and runs) skipped because the coalesced build they waited for did not complete. */
export const BUILD_FAILED_REASON = 'build failed';
const BUILD_JOB_NAME = 'svc:build';

export interface ProgressionResult {
  queued: string[];
  skipped: string[];
  /** The run's final status when this call finished it. */
  runFinished: string | null;
}

/**
 * Records a job's terminal fact once (`job_complete`); a build job's also settles its coalesced
 * waiters. A failure given its `facts` may instead be retried (retry.ts): then the next attempt
 * stands for the job and this attempt records no fact.
 */
export async function recordJobComplete(
  tx: CommonQueryMethods,
  runId: string,
  jobId: string,
  status: string,
  payload: Record<string, unknown> = {},
  facts?: FailureFacts,
): Promise<void> {
  if (status === 'failed' && facts !== undefined && (await retryFailedAttempt(tx, jobId, facts)) !== null) {
    await tx.query(sql.unsafe`
      UPDATE approval_holds SET status = 'cancelled', outcome = 'cancelled: the attempt failed and the job is retried', decided_by = 'svc:job-ended', decided_at = now()
      WHERE job_id = ${jobId} AND level = 'step' AND status = 'pending'`);
    return;
  }
  const inserted = await tx.maybeOne(sql.unsafe`
    INSERT INTO run_events (run_id, job_id, kind, status, payload)
    VALUES (${runId}, ${jobId}, 'job_complete', ${status}, ${sql.jsonb(payload as never)})
    ON CONFLICT DO NOTHING RETURNING 1 AS one`);
  if (inserted === null) return;
  // A job that ended (failed, timed out, lost its agent) while a step of it awaited approval:
  // that hold ends with the job, so a later approval is recorded as ignored and runs nothing.
  await tx.query(sql.unsafe`
    UPDATE approval_holds SET status = 'cancelled', outcome = ${`cancelled: the job ended ${status}`}, decided_by = 'svc:job-ended', decided_at = now()
    WHERE job_id = ${jobId} AND level = 'step' AND status = 'pending'`);
  await settleBuildWaiters(tx, runId, jobId, status);
  await emitJobComplete(tx, runId, jobId, status);
}

/**
 * A build job reached `status` (once): the waiting jobs of OTHER runs coalesced on its key are
 * released (completed: they no longer wait, progression queues those whose needs are met) or
 * skipped with BUILD_FAILED_REASON and their runs finished. Other runs are locked in id order
 * after this run's lock; a run waits on one key and owns no build then, so no lock cycle. A
 * held run is not progressed on success (its approval does that).
 */
async function settleBuildWaiters(tx: CommonQueryMethods, runId: string, jobId: string, status: string): Promise<void> {
  const build = (await tx.maybeOne(sql.unsafe`
    SELECT org_id, build_key FROM jobs WHERE id = ${jobId} AND kind = 'build' AND build_key IS NOT NULL`)) as { org_id: string; build_key: string } | null;
  if (build === null) return;
  const runs = (await tx.any(sql.unsafe`
    SELECT DISTINCT run_id::text AS run_id FROM jobs
    WHERE org_id = ${build.org_id} AND waits_for_build = ${build.build_key} AND status = 'waiting' AND run_id <> ${runId}
    ORDER BY run_id`)) as ReadonlyArray<{ run_id: string }>;
  const reason = status === 'failed' ? BUILD_FAILED_REASON : `${BUILD_FAILED_REASON}: the build job was ${status}`;
  for (const { run_id: other } of runs) {
    const run = await lockRunForProgress(tx, other);
    if (run === null) continue;
    if (status === 'completed') {
      await tx.query(sql.unsafe`
        UPDATE jobs SET waits_for_build = NULL, updated_at = now()
        WHERE run_id = ${other} AND waits_for_build = ${build.build_key} AND status = 'waiting'`);
      if (run.status !== 'held') await progressRun(tx, other);
      continue;
    }
    const skipped = (await tx.any(sql.unsafe`
      UPDATE jobs SET status = 'skipped', reason = ${reason}, finished_at = now(), updated_at = now()
      WHERE run_id = ${other} AND waits_for_build = ${build.build_key} AND status = 'waiting'
      RETURNING id::text AS id`)) as ReadonlyArray<{ id: string }>;
    for (const job of skipped) await recordJobComplete(tx, other, job.id, 'skipped', { reason });
    await progressRun(tx, other);
  }
}

/** The filter said no: the reason every other job (and the run) is skipped with. */
function filterVerdict(jobs: readonly JobState[]): string | undefined {
  const filter = jobs.find((j) => j.kind === 'filter' && j.status === 'skipped');
  return filter === undefined ? undefined : (filter.reason ?? 'workflow filter returned false');
}

/** Verdict on a waiting job from its needs' instances. */
function verdict(job: JobState, byName: Map<string, JobState[]>, all: readonly JobState[]): { kind: 'ready' } | { kind: 'wait' } | { kind: 'skip'; reason: string } {
  const skipped = filterVerdict(all);
  if (skipped !== undefined) return { kind: 'skip', reason: skipped };
  if (job.kind === 'hooks') {
    return all.every((j) => j === job || TERMINAL.has(j.status)) ? { kind: 'ready' } : { kind: 'wait' };
  }
  // Waiting for another run's build: only that build's completion releases it.
  if (job.waits_for_build != null && !job.needs.includes(BUILD_JOB_NAME)) return { kind: 'wait' };
  let ready = true;
  for (const need of job.needs) {
    const instances = byName.get(need) ?? [];
    if (instances.length === 0) return { kind: 'skip', reason: `needs ${need} which does not exist in this run` };
    const bad = instances.find((i) => i.status === 'failed' || i.status === 'cancelled' || i.status === 'skipped');
    if (bad) return { kind: 'skip', reason: `needs ${need} which ${bad.status}${bad.name !== need ? ` (${bad.name})` : ''}` };
    if (!instances.every((i) => i.status === 'completed')) ready = false;
  }
  return ready ? { kind: 'ready' } : { kind: 'wait' };
}

/** The reason jobs were skipped for a coalesced build that did not complete, if they were. */
function buildFailure(jobs: readonly JobState[]): string | undefined {
  return jobs.find((j) => j.status === 'skipped' && j.reason?.startsWith(BUILD_FAILED_REASON) === true)?.reason ?? undefined;
}

/** Final run status from its terminal jobs (the workflow hooks job aside). */
export function runOutcome(jobs: readonly JobState[], cancelRequested: boolean): string {
  if (filterVerdict(jobs) !== undefined) return 'skipped';
  if (cancelRequested || jobs.some((j) => j.status === 'cancelled')) return 'cancelled';
  if (jobs.some((j) => j.status === 'failed') || buildFailure(jobs) !== undefined) return 'failed';
  return 'completed';
}

/** Takes the run's progression lock; call before locking any of its jobs (one lock order everywhere). */
export async function lockRunForProgress(
  tx: CommonQueryMethods,
  runId: string,
): Promise<{ status: string; cancelled_by: string | null; reason: string | null; concurrency_state: string | null } | null> {
  return (await tx.maybeOne(sql.unsafe`SELECT status, cancelled_by, reason, concurrency_state FROM runs WHERE id = ${runId} FOR NO KEY UPDATE`)) as {
    status: string;
    cancelled_by: string | null;
    reason: string | null;
    concurrency_state: string | null;
  } | null;
}

/**
 * Where a job whose needs are met goes (docs/run-control.md): nowhere while its run is held or
 * waits for a concurrency slot (the filter, which computes the group key, aside); to the
 * run-control gates when it is gated; else `queued`.
 */
function readyTarget(run: { status: string; concurrency_state: string | null }, job: JobState): 'stay' | 'gate' | 'queue' {
  if (run.status === 'held') return 'stay';
  if (run.concurrency_state === 'waiting' && job.kind !== 'filter') return 'stay';
  return job.gated === true ? 'gate' : 'queue';
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
    SELECT id::text AS id, name, kind, generated_by, status, needs, reason, waits_for_build, gated, ready_at FROM jobs
    WHERE run_id = ${runId} AND retried_as IS NULL ORDER BY created_at, id`)) as readonly JobState[];
  const states = jobs.map((j) => ({ ...j }));
  const byName = new Map<string, JobState[]>();
  const add = (name: string, job: JobState) => {
    const list = byName.get(name) ?? [];
    list.push(job);
    byName.set(name, list);
  };
  for (const job of states) {
    add(job.name, job);
    // A dynamic entry stands for its generator job and every job it generated.
    if (job.generated_by != null) add(job.generated_by, job);
    const entry = job.kind === 'generate' ? generatorEntryOf(job.name) : undefined;
    if (entry !== undefined) add(entry, job);
  }
  const toGate: string[] = [];
  // A skip can unblock no one but can skip further dependents: iterate to a fixed point.
  for (let changed = true, rounds = 0; changed && rounds <= states.length; rounds += 1) {
    changed = false;
    for (const job of states) {
      if (job.status !== 'waiting') continue;
      const v = verdict(job, byName, states);
      if (v.kind === 'skip') {
        job.status = 'skipped';
        job.reason = v.reason;
        result.skipped.push(job.id);
        changed = true;
      } else if (v.kind === 'ready') {
        const target = readyTarget(run, job);
        if (target === 'gate' && job.ready_at == null && !toGate.includes(job.id)) toGate.push(job.id);
        if (target !== 'queue') continue;
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
  if (toGate.length > 0) {
    await tx.query(sql.unsafe`
      UPDATE jobs SET ready_at = now(), updated_at = now() WHERE id = ANY(${sql.array(toGate, 'uuid')}) AND status = 'waiting' AND ready_at IS NULL`);
    await notify(tx, RUN_CONTROL_CHANNEL, '');
  }
  if (!TERMINAL_RUN.has(run.status) && states.every((j) => TERMINAL.has(j.status))) {
    const work = states.filter((j) => j.kind !== 'hooks');
    let status = runOutcome(work, run.cancelled_by !== null);
    const failed = work.filter((j) => j.status === 'failed').map((j) => j.name);
    let reason =
      status === 'failed'
        ? failed.length > 0
          ? `job${failed.length > 1 ? 's' : ''} failed: ${[...new Set(failed)].join(', ')}`
          : (buildFailure(work) ?? null)
        : status === 'skipped'
          ? (filterVerdict(work) ?? null)
          : null;
    const hooks = states.find((j) => j.kind === 'hooks' && j.status === 'failed');
    if (hooks !== undefined) {
      // A failed workflow hook fails the run; the reason keeps what happened before it.
      const before = status === 'completed' ? undefined : (reason ?? run.reason ?? status);
      reason = [before, hooks.reason ?? 'workflow hooks failed'].filter((p) => p !== undefined && p !== '').join('; ');
      status = 'failed';
    }
    await tx.query(sql.unsafe`
      UPDATE runs SET status = ${status}, reason = coalesce(${reason}, reason), finished_at = now(), updated_at = now() WHERE id = ${runId}`);
    const completed = await tx.maybeOne(sql.unsafe`
      INSERT INTO run_events (run_id, job_id, kind, status, payload)
      VALUES (${runId}, NULL, 'workflow_complete', ${status}, ${sql.jsonb({ jobs: states.map((j) => ({ id: j.id, name: j.name, status: j.status })) })})
      ON CONFLICT DO NOTHING RETURNING 1 AS one`);
    if (completed !== null) await emitWorkflowComplete(tx, runId, status);
    result.runFinished = status;
  }
  return result;
}
