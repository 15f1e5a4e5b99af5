// The orchestrator's own events when work finishes (spec "Internal events"): `job_complete`
// (workflow, job, status, duration) and `workflow_complete` (workflow, status, duration). They are
// written in the transaction that records the completion, so a completion is announced exactly
// when it commits. Both carry the run's chain depth; past `events.maxChainDepth` the breaker
// records a refusal in the same transaction instead (a workflow triggered by its own completion
// stops there rather than looping).
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { isSvcError } from '../../../core/errors.ts';
import { sqlTyped } from '../../services/db/index.ts';
import { recordRefusal, type EventLimits } from './breaker.ts';
import { emitInternalEvent } from './emit.ts';

/** Completion statuses as triggers name them (`workflowComplete({ statuses })`). */
export type CompletionStatus = 'success' | 'failed' | 'cancelled' | 'skipped';

/** Run and job record statuses → the trigger vocabulary. */
export function completionStatusOf(recordStatus: string): CompletionStatus {
  if (recordStatus === 'completed') return 'success';
  if (recordStatus === 'cancelled') return 'cancelled';
  if (recordStatus === 'skipped') return 'skipped';
  return 'failed';
}

let limits: Pick<EventLimits, 'maxChainDepth'> = { maxChainDepth: 10 };

/** The events subsystem sets the configured limit at start (completions are written by dispatch). */
export function configureCompletionLimits(next: Pick<EventLimits, 'maxChainDepth'>): void {
  limits = { maxChainDepth: next.maxChainDepth };
}

const RunRow = Type.Object({
  org_id: Type.String(),
  repository: Type.String(),
  workflow_repository: Type.String(),
  workflow: Type.String(),
  sha: Type.String(),
  ref: Type.Union([Type.String(), Type.Null()]),
  chain_depth: Type.Number(),
  duration_ms: Type.Number(),
});

const JobRow = Type.Object({ name: Type.String(), kind: Type.String(), duration_ms: Type.Number() });

async function store(tx: CommonQueryMethods, name: 'workflow_complete' | 'job_complete', run: Static<typeof RunRow>, runId: string, jobId: string | null, payload: Record<string, unknown>): Promise<void> {
  try {
    await emitInternalEvent(tx, { name, payload, orgId: run.org_id, source: 'orchestrator', runId, jobId, chainDepth: run.chain_depth }, limits);
  } catch (error) {
    if (!isSvcError(error) || error.code !== 'SVC_ERR_EVENT_CHAIN_TOO_DEEP') throw error;
    await recordRefusal(tx, { orgId: run.org_id, name, runId, jobId, chainDepth: run.chain_depth, reason: 'chain_depth', detail: error.message });
  }
}

async function runOf(tx: CommonQueryMethods, runId: string): Promise<Static<typeof RunRow> | null> {
  return tx.maybeOne(sqlTyped(RunRow)`
    SELECT org_id, repository, workflow_repository, workflow, sha, ref, chain_depth,
      (extract(epoch FROM (clock_timestamp() - coalesce(started_at, created_at))) * 1000)::float8 AS duration_ms
    FROM runs WHERE id = ${runId}`);
}

/** `workflow_complete` for a run that just reached its final `recordStatus`. */
export async function emitWorkflowComplete(tx: CommonQueryMethods, runId: string, recordStatus: string): Promise<void> {
  const run = await runOf(tx, runId);
  if (run === null) return;
  await store(tx, 'workflow_complete', run, runId, null, {
    workflow: run.workflow,
    status: completionStatusOf(recordStatus),
    duration: Math.round(run.duration_ms),
    runId,
    repository: run.repository,
    workflowRepository: run.workflow_repository,
    sha: run.sha,
    ref: run.ref,
  });
}

/** `job_complete` for a lock job (pseudo-jobs such as `svc:build` are not announced). */
export async function emitJobComplete(tx: CommonQueryMethods, runId: string, jobId: string, recordStatus: string): Promise<void> {
  const job = await tx.maybeOne(sqlTyped(JobRow)`
    SELECT name, kind, (extract(epoch FROM (clock_timestamp() - coalesce(started_at, dispatched_at, queued_at, created_at))) * 1000)::float8 AS duration_ms
    FROM jobs WHERE id = ${jobId}`);
  if (job === null || job.kind !== 'job') return;
  const run = await runOf(tx, runId);
  if (run === null) return;
  await store(tx, 'job_complete', run, runId, jobId, {
    workflow: run.workflow,
    job: job.name,
    status: completionStatusOf(recordStatus),
    duration: Math.round(job.duration_ms),
    runId,
    jobId,
    repository: run.repository,
    sha: run.sha,
  });
}
