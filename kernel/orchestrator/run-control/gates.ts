// The gates a ready job passes before `queued` (docs/run-control.md), in this order:
//   1. its own approval (lock `jobs[].approval`, when it applies to the run);
//   2. the required reviewers of each secret context it uses (one of them approves);
//   3. the longest wait timer of those contexts, counted from when the job became ready;
//   4. its concurrency group (`max` jobs of the group at once, first ready first served);
//   5. the concurrency limit of each context (jobs using it queued or running at once).
// One job per transaction: its run is locked, then the job; group and context counts are taken
// under a transaction-scoped advisory lock on that group or context, so two nodes passing two
// jobs of one group at once cannot both take the last slot.
import type { CommonQueryMethods } from 'slonik';
import type { LockApproval, LockApprovalClause, LockJob, LockWorkflow } from '../../../schemas/lock.ts';
import { sql } from '../../services/db/index.ts';
import { notifyJobsQueued } from '../dispatch/notify.ts';
import { lockRunForProgress } from '../dispatch/progression.ts';
import { declaredContexts } from '../secrets/release.ts';
import { approvalApplies, ensureHold, type HoldRow, type NewHold } from './approvals.ts';
import { describeClauses } from './principals.ts';

/** Statuses in which a job holds a concurrency slot. */
export const SLOT_STATUSES = ['queued', 'dispatched', 'running', 'recovering'] as const;
const SLOTS = sql.fragment`('queued', 'dispatched', 'running', 'recovering')`;

export type GateOutcome =
  | { kind: 'queued' }
  | { kind: 'held'; reason: string }
  | { kind: 'waiting'; reason: string; retryAt?: Date }
  | { kind: 'cancel-older'; jobIds: string[]; reason: string }
  | { kind: 'skip' };

interface GateJob {
  id: string;
  /** Attempt 1 of this job: holds are the job's, not one attempt's (an approval covers its retries). */
  first_attempt_id: string | null;
  retry_at: Date | number | null;
  attempt: number;
  run_id: string;
  org_id: string;
  name: string;
  status: string;
  ready_at: Date | number;
  concurrency_group: string | null;
  reason: string | null;
  definition: LockJob | null;
  lock_entry: LockWorkflow;
  trust_tier: string;
  is_fork: string;
}

interface ContextRules {
  name: string;
  required_reviewers: string[];
  wait_timer_seconds: number;
  concurrency_limit: number | null;
}

async function lockKey(tx: CommonQueryMethods, key: string): Promise<void> {
  await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${key}, 0))`);
}

/** Hold gate: approved → pass; pending → the job is `held`; ended → the job was already cancelled. */
async function holdGate(tx: CommonQueryMethods, job: GateJob, hold: NewHold, what: string): Promise<GateOutcome | null> {
  const row: HoldRow = await ensureHold(tx, hold);
  if (row.status === 'approved') return null;
  if (row.status !== 'pending') return { kind: 'skip' };
  const reason = `Awaiting approval (${what}): ${row.reason ?? `needs ${describeClauses(row.clauses)}`}`;
  await tx.query(sql.unsafe`UPDATE jobs SET status = 'held', reason = ${reason}, updated_at = now() WHERE id = ${job.id} AND status = 'waiting'`);
  return { kind: 'held', reason };
}

function jobApproval(job: GateJob, entry: LockJob | undefined): LockApproval | undefined {
  const approval = entry?.approval;
  if (approval === undefined) return undefined;
  return approvalApplies(approval, { trustTier: job.trust_tier, isFork: job.is_fork }) ? approval : undefined;
}

async function approvalGates(tx: CommonQueryMethods, job: GateJob, entry: LockJob | undefined, contexts: readonly ContextRules[]): Promise<GateOutcome | null> {
  const approval = jobApproval(job, entry);
  if (approval !== undefined) {
    const hold: NewHold = {
      orgId: job.org_id,
      runId: job.run_id,
      jobId: job.first_attempt_id ?? job.id,
      level: 'job',
      clauses: approval.clauses,
      ...(approval.reason !== undefined ? { reason: approval.reason } : {}),
      ...(approval.timeoutSeconds !== undefined ? { timeoutSeconds: approval.timeoutSeconds } : {}),
    };
    const out = await holdGate(tx, job, hold, `job ${job.name}`);
    if (out !== null) return out;
  }
  for (const context of contexts) {
    if (context.required_reviewers.length === 0) continue;
    const clauses: LockApprovalClause[] = [{ users: [...context.required_reviewers].sort(), teams: [], roles: [], count: 1 }];
    const hold: NewHold = {
      orgId: job.org_id,
      runId: job.run_id,
      jobId: job.first_attempt_id ?? job.id,
      level: 'context',
      context: context.name,
      clauses,
      reason: `secret context ${context.name} requires a reviewer (${context.required_reviewers.join(', ')}) to approve before its secrets are released`,
    };
    const out = await holdGate(tx, job, hold, `secret context ${context.name}`);
    if (out !== null) return out;
  }
  return null;
}

/** A retry waits out its back-off first (dispatch/retry.ts); the reason it was created with says why. */
function retryGate(job: GateJob, now: Date): GateOutcome | null {
  if (job.retry_at === null) return null;
  const at = new Date(job.retry_at);
  if (now >= at) return null;
  return { kind: 'waiting', reason: job.reason ?? `Retry ${job.attempt}: not before ${at.toISOString()}`, retryAt: at };
}

function waitTimerGate(job: GateJob, contexts: readonly ContextRules[], now: Date): GateOutcome | null {
  const longest = contexts.reduce<ContextRules | null>((a, c) => (c.wait_timer_seconds > (a?.wait_timer_seconds ?? 0) ? c : a), null);
  if (longest === null) return null;
  const releaseAt = new Date(new Date(job.ready_at).getTime() + longest.wait_timer_seconds * 1000);
  if (now >= releaseAt) return null;
  return { kind: 'waiting', reason: `Wait timer of secret context ${longest.name} (${longest.wait_timer_seconds} s): released at ${releaseAt.toISOString()}`, retryAt: releaseAt };
}

async function groupGate(tx: CommonQueryMethods, job: GateJob, entry: LockJob | undefined): Promise<GateOutcome | null> {
  const conc = entry?.concurrency;
  if (conc === undefined) return null;
  const group = job.concurrency_group;
  if (group === null) return { kind: 'waiting', reason: 'Waiting for the concurrency group key the workflow filter computes' };
  await lockKey(tx, `svc-job-group:${job.org_id}:${group}`);
  if (conc.cancelInProgress) {
    const older = (await tx.any(sql.unsafe`
      SELECT id::text AS id FROM jobs WHERE org_id = ${job.org_id} AND concurrency_group = ${group} AND id <> ${job.id}
        AND status IN ${SLOTS} AND cancel_requested_at IS NULL AND created_at <= (SELECT created_at FROM jobs WHERE id = ${job.id})`)) as readonly { id: string }[];
    if (older.length > 0) return { kind: 'cancel-older', jobIds: older.map((o) => o.id), reason: `Cancelled: a newer job (${job.id}) in concurrency group ${group} (cancelInProgress)` };
  }
  const max = conc.max ?? 1;
  const active = (await tx.oneFirst(sql.unsafe`
    SELECT count(*)::int FROM jobs WHERE org_id = ${job.org_id} AND concurrency_group = ${group} AND status IN ${SLOTS}`)) as number;
  const ahead = (await tx.oneFirst(sql.unsafe`
    SELECT count(*)::int FROM jobs WHERE org_id = ${job.org_id} AND concurrency_group = ${group} AND status = 'waiting' AND ready_at IS NOT NULL
      AND (ready_at, id) < (${sql.timestamp(new Date(job.ready_at))}, ${job.id}::uuid)`)) as number;
  if (active + ahead < max) return null;
  return { kind: 'waiting', reason: `Waiting for a slot in concurrency group ${group}: ${active} of ${max} taken${ahead > 0 ? `, ${ahead} ahead in line` : ''}` };
}

async function contextLimitGate(tx: CommonQueryMethods, job: GateJob, contexts: readonly ContextRules[]): Promise<GateOutcome | null> {
  for (const context of contexts) {
    if (context.concurrency_limit === null) continue;
    await lockKey(tx, `svc-context-limit:${context.name}`);
    const active = (await tx.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM jobs WHERE held_contexts @> ${sql.array([context.name], 'text')} AND status IN ${SLOTS}`)) as number;
    if (active >= context.concurrency_limit) {
      return { kind: 'waiting', reason: `Waiting: secret context ${context.name} allows ${context.concurrency_limit} job(s) at once and ${active} hold it` };
    }
  }
  return null;
}

/**
 * Passes one ready job through its gates inside `tx`; returns where it stopped. A job that
 * passes every gate is `queued` and holds its contexts.
 */
export async function passJobGates(tx: CommonQueryMethods, jobId: string, now = new Date()): Promise<GateOutcome> {
  const runId = (await tx.maybeOneFirst(sql.unsafe`SELECT run_id::text FROM jobs WHERE id = ${jobId}`)) as string | null;
  if (runId === null) return { kind: 'skip' };
  const run = await lockRunForProgress(tx, runId);
  if (run === null || run.status === 'held' || (run.concurrency_state === 'waiting')) return { kind: 'skip' };
  const job = (await tx.maybeOne(sql.unsafe`
    SELECT j.id::text AS id, j.run_id::text AS run_id, j.org_id, j.name, j.status, j.ready_at, j.concurrency_group, j.definition,
           j.first_attempt_id::text AS first_attempt_id, j.retry_at, j.attempt, j.reason, r.lock_entry, r.trust_tier, r.is_fork
    FROM jobs j JOIN runs r ON r.id = j.run_id
    WHERE j.id = ${jobId} AND j.status = 'waiting' AND j.ready_at IS NOT NULL FOR UPDATE OF j`)) as GateJob | null;
  if (job === null) return { kind: 'skip' };
  const entry = job.definition ?? job.lock_entry.jobs.find((j) => j.name === job.name);
  const names = declaredContexts(job.lock_entry, entry as unknown as Record<string, unknown> | undefined);
  const contexts = names.length === 0
    ? []
    : ((await tx.any(sql.unsafe`
        SELECT name, required_reviewers, wait_timer_seconds, concurrency_limit FROM secret_contexts WHERE name = ANY(${sql.array(names, 'text')}) ORDER BY name`)) as unknown as ContextRules[]);
  const stopped =
    retryGate(job, now) ??
    (await approvalGates(tx, job, entry, contexts)) ??
    waitTimerGate(job, contexts, now) ??
    (await groupGate(tx, job, entry)) ??
    (await contextLimitGate(tx, job, contexts));
  if (stopped !== null) {
    if (stopped.kind === 'waiting') {
      await tx.query(sql.unsafe`UPDATE jobs SET reason = ${stopped.reason}, updated_at = now() WHERE id = ${job.id} AND reason IS DISTINCT FROM ${stopped.reason}`);
    }
    return stopped;
  }
  await tx.query(sql.unsafe`
    UPDATE jobs SET status = 'queued', queued_at = now(), reason = NULL, held_contexts = ${sql.array(names, 'text')}, updated_at = now()
    WHERE id = ${job.id}`);
  await notifyJobsQueued(tx);
  return { kind: 'queued' };
}
