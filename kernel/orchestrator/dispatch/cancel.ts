// Cancelling runs and jobs. Jobs no agent holds are cancelled at once; an agent holding one is
// sent `job.cancel` (through NOTIFY, so the node that holds the agent's socket delivers it) and
// later reports `cancelled`.
import type { CommonQueryMethods } from 'slonik';
import type { OrchestratorContext } from '../context.ts';
import { notify, sql, type DatabasePool } from '../../services/db/index.ts';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { AGENT_COMMANDS_CHANNEL } from './notify.ts';
import { progressRun, recordJobComplete } from './progression.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Payload on AGENT_COMMANDS_CHANNEL. */
export interface AgentCommand {
  agentId: string;
  jobId: string;
  reason: string;
  force: boolean;
}

export interface CancelResult {
  /** Jobs cancelled now plus jobs whose agent was told to cancel. */
  cancelledJobs: number;
}

function checkId(kind: string, id: string): void {
  if (!UUID.test(id)) throw new InputError('SVC_ERR_DISPATCH_ID_INVALID', `"${String(id).slice(0, 80)}" is not a ${kind} id (a UUID)`);
}

function checkBy(cancelledBy: string): void {
  if (typeof cancelledBy !== 'string' || cancelledBy.length === 0 || cancelledBy.length > 200) {
    throw new InputError('SVC_ERR_DISPATCH_CANCELLED_BY', 'cancelledBy must name who cancelled (1 to 200 characters)');
  }
}

async function cancelWhere(tx: CommonQueryMethods, runId: string, filter: ReturnType<typeof sql.fragment>, cancelledBy: string, force: boolean, why?: string): Promise<number> {
  const reason = why ?? `Cancelled by ${cancelledBy}`;
  // Nobody runs these: cancelled now. A recovering job's agent is away; it is told on return.
  const now = (await tx.any(sql.unsafe`
    UPDATE jobs SET status = 'cancelled', reason = ${reason}, cancelled_by = ${cancelledBy}, cancel_requested_at = now(),
           finished_at = now(), recovery_deadline = NULL, updated_at = now()
    WHERE run_id = ${runId} AND ${filter} AND status IN ('waiting', 'held', 'queued', 'recovering') RETURNING id::text AS id`)) as readonly { id: string }[];
  for (const row of now) await recordJobComplete(tx, runId, row.id, 'cancelled', { reason });
  // Their approval holds end with them: a later approval finds nothing pending and starts nothing.
  if (now.length > 0) {
    await tx.query(sql.unsafe`
      UPDATE approval_holds SET status = 'cancelled', outcome = ${`cancelled: ${reason}`}, decided_by = ${cancelledBy}, decided_at = now()
      WHERE job_id = ANY(${sql.array(now.map((r) => r.id), 'uuid')}) AND status = 'pending'`);
  }
  const held = (await tx.any(sql.unsafe`
    UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, now()), cancelled_by = coalesce(cancelled_by, ${cancelledBy}), updated_at = now()
    WHERE run_id = ${runId} AND ${filter} AND status IN ('dispatched', 'running') AND agent_id IS NOT NULL
    RETURNING id::text AS id, agent_id`)) as readonly { id: string; agent_id: string }[];
  for (const row of held) {
    const command: AgentCommand = { agentId: row.agent_id, jobId: row.id, reason, force };
    await notify(tx, AGENT_COMMANDS_CHANNEL, command);
  }
  // A step waiting for approval on a running job: its hold ends now, so an approval arriving
  // while the agent stops the job is recorded as ignored and runs nothing.
  if (held.length > 0) {
    await tx.query(sql.unsafe`
      UPDATE approval_holds SET status = 'cancelled', outcome = ${`cancelled: ${reason}`}, decided_by = ${cancelledBy}, decided_at = now()
      WHERE job_id = ANY(${sql.array(held.map((r) => r.id), 'uuid')}) AND status = 'pending'`);
  }
  return now.length + held.length;
}

async function lockRun(tx: CommonQueryMethods, runId: string): Promise<{ status: string }> {
  const run = (await tx.maybeOne(sql.unsafe`SELECT status FROM runs WHERE id = ${runId} FOR NO KEY UPDATE`)) as { status: string } | null;
  if (run === null) throw new NotFoundError('SVC_ERR_DISPATCH_RUN_NOT_FOUND', `no run has id ${runId}`);
  return run;
}

export interface CancelRunOptions {
  force?: boolean;
  /** Reason recorded on the run and its cancelled jobs; default `Cancelled by <who>`. */
  reason?: string;
}

/**
 * Cancels a run inside the caller's transaction. The workflow hooks job (`svc:hooks`) is not
 * cancelled unless forced or no job of the run was ever dispatched: it runs onCancel/cleanup
 * once the other jobs have stopped (docs/scheduling.md).
 */
export async function cancelRunTx(tx: CommonQueryMethods, runId: string, cancelledBy: string, options: CancelRunOptions = {}): Promise<CancelResult> {
  const run = await lockRun(tx, runId);
  if (['completed', 'failed', 'cancelled', 'skipped'].includes(run.status)) return { cancelledJobs: 0 };
  const force = options.force ?? false;
  await tx.query(sql.unsafe`
    UPDATE runs SET cancelled_by = coalesce(cancelled_by, ${cancelledBy}), reason = coalesce(${options.reason ?? null}, reason), updated_at = now()
    WHERE id = ${runId}`);
  // Cancelling a run that awaits approval rejects its hold (spec "Lock acceptance").
  await tx.query(sql.unsafe`
    UPDATE approval_holds SET status = 'cancelled', outcome = ${`cancelled: ${options.reason ?? `Cancelled by ${cancelledBy}`}`}, decided_by = ${cancelledBy}, decided_at = now()
    WHERE run_id = ${runId} AND job_id IS NULL AND status = 'pending'`);
  const keepHooks = force
    ? sql.fragment`TRUE`
    : sql.fragment`(kind <> 'hooks' OR NOT EXISTS (SELECT 1 FROM jobs o WHERE o.run_id = ${runId} AND o.kind <> 'hooks' AND o.attempts > 0))`;
  const cancelledJobs = await cancelWhere(tx, runId, keepHooks, cancelledBy, force, options.reason);
  // A run that started no job (or whose every job is now terminal) ends here.
  await progressRun(tx, runId);
  return { cancelledJobs };
}

export async function cancelRunIn(pool: DatabasePool, runId: string, cancelledBy: string, options: CancelRunOptions = {}): Promise<CancelResult> {
  checkId('run', runId);
  checkBy(cancelledBy);
  return pool.transaction((tx) => cancelRunTx(tx, runId, cancelledBy, options));
}

export async function cancelJobIn(pool: DatabasePool, jobId: string, cancelledBy: string, options: { force?: boolean; reason?: string } = {}): Promise<CancelResult> {
  checkId('job', jobId);
  checkBy(cancelledBy);
  return pool.transaction(async (tx) => {
    const job = (await tx.maybeOne(sql.unsafe`SELECT run_id::text AS run_id FROM jobs WHERE id = ${jobId}`)) as { run_id: string } | null;
    if (job === null) throw new NotFoundError('SVC_ERR_DISPATCH_JOB_NOT_FOUND', `no job has id ${jobId}`);
    await lockRun(tx, job.run_id);
    const cancelledJobs = await cancelWhere(tx, job.run_id, sql.fragment`id = ${jobId}`, cancelledBy, options.force ?? false, options.reason);
    await progressRun(tx, job.run_id);
    return { cancelledJobs };
  });
}

/** Cancels a run: queued/waiting jobs at once, held jobs through their agents. */
export function cancelRun(ctx: Pick<OrchestratorContext, 'db'>, runId: string, cancelledBy: string): Promise<CancelResult> {
  return cancelRunIn(ctx.db, runId, cancelledBy);
}

export function cancelJob(ctx: Pick<OrchestratorContext, 'db'>, jobId: string, cancelledBy: string): Promise<CancelResult> {
  return cancelJobIn(ctx.db, jobId, cancelledBy);
}
