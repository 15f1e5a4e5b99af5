// Job retries (docs/run-states.md "Retries"). When an attempt of a job fails for a cause its
// lock `retry` policy lists, and attempts remain, a NEW attempt of the same job is created: a new
// `jobs` row (attempt n+1, `first_attempt_id` naming attempt 1) that waits out the back-off in
// `waiting` and is released by the run-control worker (`retry_at`, gates.ts). The failed attempt
// keeps its status (a terminal status never changes, and spec "Queued job when its agent
// disconnects" still holds: the failed attempt is never re-dispatched), its logs and steps, and
// is marked `retried_as`; progression and the run outcome look only at the newest attempt.
// A retried attempt records no `job_complete` fact: only the job's last attempt does. Attempt n
// is shown as `<name> (attempt n)` (display names are unique within a run).
import type { CommonQueryMethods } from 'slonik';
import { randomUUID } from 'node:crypto';
import type { LockJob, LockRetry, LockWorkflow } from '../../../schemas/lock.ts';
import { notify, sql } from '../../services/db/index.ts';
import { RUN_CONTROL_CHANNEL } from './notify.ts';
import { jobFailedOnlyByTests } from '../test-results/queries.ts';

/** Why an attempt failed, as far as a retry policy cares. */
export type RetryCause = 'agent-lost' | 'exit-code' | 'failed-tests';

/**
 * What the failure says: the cause known at the call site, and the exit code of the command that
 * failed the job's step, as a protocol 5 agent reports it (`job.status` `exitCode`, status.ts).
 */
export interface FailureFacts {
  agentLost?: boolean;
  exitCode?: number;
}

/** Seconds to wait before attempt `attempt + 1`: delay × factor^(attempt-1), at most maxDelaySeconds. */
export function backoffSeconds(policy: LockRetry, attempt: number): number {
  const { delaySeconds, factor, maxDelaySeconds } = policy.backoff;
  return Math.min(maxDelaySeconds, Math.round(delaySeconds * factor ** Math.max(0, attempt - 1)));
}

interface FailedAttempt {
  id: string;
  run_id: string;
  kind: string;
  name: string;
  status: string;
  attempt: number;
  first_attempt_id: string | null;
  retried_as: string | null;
  cancel_requested_at: unknown;
  definition: LockJob | null;
  lock_entry: LockWorkflow;
  run_status: string;
  cancelled_by: string | null;
  reason: string | null;
}

const CAUSE_TEXT: Record<RetryCause, string> = { 'agent-lost': 'agent lost', 'exit-code': 'exit code', 'failed-tests': 'failed tests' };

/** The first cause of the policy this failure meets, or null. */
async function matchingCause(tx: CommonQueryMethods, policy: LockRetry, jobId: string, facts: FailureFacts): Promise<RetryCause | null> {
  if (facts.agentLost === true) return policy.agentLost ? 'agent-lost' : null;
  if (policy.failedTests && (await jobFailedOnlyByTests(tx, jobId))) return 'failed-tests';
  if (facts.exitCode !== undefined && policy.exitCodes.includes(facts.exitCode)) return 'exit-code';
  return null;
}

/**
 * Called inside the transaction that recorded `jobId` as failed (its run locked). Creates the
 * next attempt when the job's policy says so; returns its id, or null (the failure stands).
 */
export async function retryFailedAttempt(tx: CommonQueryMethods, jobId: string, facts: FailureFacts): Promise<string | null> {
  const job = (await tx.maybeOne(sql.unsafe`
    SELECT j.id::text AS id, j.run_id::text AS run_id, j.kind, j.name, j.status, j.attempt, j.first_attempt_id::text AS first_attempt_id,
           j.retried_as::text AS retried_as, j.cancel_requested_at, j.definition, j.reason,
           r.lock_entry, r.status AS run_status, r.cancelled_by
    FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ${jobId} FOR UPDATE OF j`)) as FailedAttempt | null;
  if (job === null || job.kind !== 'job' || job.status !== 'failed' || job.retried_as !== null) return null;
  // A cancel (of the job or its run) or a finished run ends the job, whatever its policy says.
  if (job.cancel_requested_at !== null || job.cancelled_by !== null || ['completed', 'failed', 'cancelled', 'skipped'].includes(job.run_status)) return null;
  const entry = job.definition ?? job.lock_entry.jobs.find((j) => j.name === job.name);
  const policy = entry?.retry;
  if (policy === undefined || job.attempt >= policy.maxAttempts) return null;
  const cause = await matchingCause(tx, policy, jobId, facts);
  if (cause === null) return null;
  const next = job.attempt + 1;
  const delay = backoffSeconds(policy, job.attempt);
  const id = randomUUID();
  const retryAt = (await tx.oneFirst(sql.unsafe`SELECT (now() + ${delay} * interval '1 second')::text AS at`)) as string;
  const why = (job.reason ?? 'failed').slice(0, 500);
  const causeText = cause === 'exit-code' ? `exit code ${facts.exitCode}` : CAUSE_TEXT[cause];
  const reason = `Retry ${next} of ${policy.maxAttempts} (${causeText}: ${why}): not before ${new Date(retryAt).toISOString()}`;
  // Gated, ready now: the run-control worker keeps it waiting until `retry_at`, then passes it
  // through the job's other gates (an approval given to attempt 1 covers its retries).
  await tx.query(sql.unsafe`
    INSERT INTO jobs (id, run_id, org_id, name, display_name, kind, matrix, needs, runs_on, status, reason, generated_by, definition,
                      gated, ready_at, concurrency_group, attempt, first_attempt_id, retry_at, retry_cause)
    SELECT ${id}, run_id, org_id, name,
           (SELECT f.display_name FROM jobs f WHERE f.id = coalesce(jobs.first_attempt_id, jobs.id)) || ${` (attempt ${next})`}, kind, matrix, needs, runs_on, 'waiting', ${reason}, generated_by, definition,
           true, now(), concurrency_group, ${next}, coalesce(first_attempt_id, id), ${retryAt}::timestamptz, ${cause}
    FROM jobs WHERE id = ${jobId}`);
  await tx.query(sql.unsafe`UPDATE jobs SET retried_as = ${id}, updated_at = now() WHERE id = ${jobId}`);
  await notify(tx, RUN_CONTROL_CHANNEL, '');
  return id;
}
