// Reports from the agent that owns a job: `job.status`, `step.status`, `log.chunk`,
// `job.context`. Only the owning agent (`jobs.agent_id`) may report; anything else is refused
// and changes nothing.
import type { Static } from 'typebox';
import type { DatabaseTransactionConnection } from 'slonik';
import type { JobContext, JobStatus, LogChunk, StepStatus } from '../../../schemas/wire/agent.ts';
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { NotAllowedError } from '../../../core/errors.ts';
import { lockRunForProgress, progressRun, recordJobComplete, type ProgressionResult } from './progression.ts';
import { applySchedulingReport } from '../scheduling/report.ts';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function notOwner(jobId: string, agentId: string): NotAllowedError {
  return new NotAllowedError('SVC_ERR_DISPATCH_NOT_OWNER', `agent ${agentId} does not own job ${jobId}`, { details: { jobId } });
}

const ts = (iso: string | undefined) => (iso === undefined ? null : sql.timestamp(new Date(iso)));

export interface StatusOutcome {
  /** The job reached a terminal status with this report. */
  terminal: boolean;
  /** The report repeated a terminal status already recorded: nothing changed. */
  duplicate: boolean;
  progression: ProgressionResult | null;
}

export async function applyJobStatus(pool: DatabasePool, agentId: string, message: Static<typeof JobStatus>): Promise<StatusOutcome> {
  if (!UUID.test(message.jobId)) throw notOwner(message.jobId, agentId);
  return pool.transaction(async (tx) => {
    const runId = (await tx.maybeOneFirst(sql.unsafe`SELECT run_id::text FROM jobs WHERE id = ${message.jobId}`)) as string | null;
    if (runId === null) throw notOwner(message.jobId, agentId);
    await lockRunForProgress(tx, runId);
    const job = (await tx.maybeOne(sql.unsafe`
      SELECT run_id::text AS run_id, org_id, name, kind, status, agent_id FROM jobs WHERE id = ${message.jobId} FOR UPDATE`)) as {
      run_id: string;
      org_id: string;
      name: string;
      kind: string;
      status: string;
      agent_id: string | null;
    } | null;
    if (job === null || job.agent_id !== agentId) throw notOwner(message.jobId, agentId);
    if (TERMINAL.has(job.status) || job.status === 'skipped') {
      // Resent after a reconnect, or the job ended here first (recovery window, cancel).
      return { terminal: false, duplicate: true, progression: null };
    }
    if (job.status !== 'dispatched' && job.status !== 'running') throw notOwner(message.jobId, agentId);
    const terminal = TERMINAL.has(message.status);
    const startedAt = ts(message.startedAt);
    const finishedAt = ts(message.finishedAt);
    // Pseudo-jobs (filter verdict, generator output) may end differently than reported.
    const final = terminal
      ? await applySchedulingReport(tx, { id: message.jobId, runId: job.run_id, orgId: job.org_id, name: job.name, kind: job.kind }, message)
      : { status: message.status as string, reason: message.reason };
    // The failing command's exit code means something only on a failure (protocol 5 agents).
    const exitCode = final.status === 'failed' ? (message.exitCode ?? null) : null;
    await tx.query(sql.unsafe`
      UPDATE jobs SET status = ${final.status},
        started_at = coalesce(started_at, ${startedAt}, now()),
        finished_at = ${terminal ? sql.fragment`coalesce(${finishedAt}, now())` : sql.fragment`NULL`},
        reason = ${final.reason ?? null},
        outputs = ${message.outputs === undefined ? sql.fragment`outputs` : sql.jsonb(message.outputs as never)},
        exit_code = ${exitCode},
        recovery_deadline = NULL, updated_at = now()
      WHERE id = ${message.jobId}`);
    for (const [index, step] of message.steps.entries()) {
      const stepExit = step.status === 'failed' ? (step.exitCode ?? null) : null;
      await tx.query(sql.unsafe`
        INSERT INTO job_steps (job_id, index, name, status, reason, started_at, finished_at, exit_code)
        VALUES (${message.jobId}, ${index}, ${step.name}, ${step.status}, ${step.reason ?? null}, ${ts(step.startedAt)}, ${ts(step.finishedAt)}, ${stepExit})
        ON CONFLICT (job_id, index) DO UPDATE SET name = excluded.name, status = excluded.status, reason = excluded.reason,
          started_at = coalesce(excluded.started_at, job_steps.started_at), finished_at = coalesce(excluded.finished_at, job_steps.finished_at),
          exit_code = coalesce(excluded.exit_code, CASE WHEN excluded.status = 'failed' THEN job_steps.exit_code END)`);
    }
    await storePhases(tx, message.jobId, message.phases);
    if (!terminal) return { terminal: false, duplicate: false, progression: null };
    // A failed attempt may be retried (retry.ts): `failed-tests` reads the job's recorded test
    // results, `exitCodes` the failing command's exit code this report carries.
    const facts = exitCode === null ? {} : { exitCode };
    await recordJobComplete(tx, job.run_id, message.jobId, final.status, { reason: final.reason ?? null, agentId }, facts);
    return { terminal: true, duplicate: false, progression: await progressRun(tx, job.run_id) };
  });
}

/** The agent's set-up phases (protocol 5): each name once per job, the latest report wins. */
async function storePhases(tx: DatabaseTransactionConnection, jobId: string, phases: Static<typeof JobStatus>['phases']): Promise<void> {
  if (phases === undefined || phases.length === 0) return;
  // A phase that ends before it starts (clock steps on the agent) is kept as 0 ms long.
  await tx.query(sql.unsafe`
    INSERT INTO job_phases (job_id, name, started_at, finished_at)
    SELECT ${jobId}, p.name, p.started_at, greatest(p.started_at, p.finished_at)
    FROM unnest(${sql.array(phases.map((p) => p.name), 'text')}::text[], ${sql.array(phases.map((p) => p.startedAt), 'text')}::timestamptz[],
                ${sql.array(phases.map((p) => p.finishedAt), 'text')}::timestamptz[]) AS p(name, started_at, finished_at)
    ON CONFLICT (job_id, name) DO UPDATE SET started_at = excluded.started_at, finished_at = excluded.finished_at`);
}

export async function applyStepStatus(pool: DatabasePool, agentId: string, message: Static<typeof StepStatus>): Promise<void> {
  if (!UUID.test(message.jobId)) throw notOwner(message.jobId, agentId);
  const at = sql.timestamp(new Date(message.at));
  const terminal = message.status !== 'running';
  const exitCode = message.status === 'failed' ? (message.exitCode ?? null) : null;
  const row = await pool.maybeOne(sql.unsafe`
    INSERT INTO job_steps (job_id, index, name, status, reason, started_at, finished_at, exit_code)
    SELECT ${message.jobId}, ${message.index}, ${message.name}, ${message.status}, ${message.reason ?? null},
           ${terminal ? null : at}, ${terminal ? at : null}, ${exitCode}
    WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ${message.jobId} AND agent_id = ${agentId} AND status IN ('dispatched', 'running'))
    ON CONFLICT (job_id, index) DO UPDATE SET name = excluded.name, status = excluded.status, reason = excluded.reason,
      started_at = coalesce(job_steps.started_at, excluded.started_at), finished_at = coalesce(excluded.finished_at, job_steps.finished_at),
      exit_code = excluded.exit_code
    RETURNING job_id`);
  if (row === null) throw notOwner(message.jobId, agentId);
}

/** Idempotent on `seq`: a chunk resent after a reconnect is dropped. */
export async function appendLogChunk(pool: DatabasePool, agentId: string, message: Static<typeof LogChunk>): Promise<{ inserted: boolean }> {
  if (!UUID.test(message.jobId)) throw notOwner(message.jobId, agentId);
  const owned = await pool.maybeOne(sql.unsafe`SELECT 1 AS one FROM jobs WHERE id = ${message.jobId} AND agent_id = ${agentId}`);
  if (owned === null) throw notOwner(message.jobId, agentId);
  const row = await pool.maybeOne(sql.unsafe`
    INSERT INTO job_logs (job_id, seq, lines) VALUES (${message.jobId}, ${message.seq}, ${sql.jsonb(message.lines as never)})
    ON CONFLICT (job_id, seq) DO NOTHING RETURNING seq`);
  return { inserted: row !== null };
}

export async function storeJobContext(pool: DatabasePool, agentId: string, message: Static<typeof JobContext>): Promise<void> {
  if (!UUID.test(message.jobId)) throw notOwner(message.jobId, agentId);
  const context = { nodeVersion: message.nodeVersion, os: message.os, arch: message.arch, sandbox: message.sandbox };
  const row = await pool.maybeOne(sql.unsafe`
    UPDATE jobs SET context = ${sql.jsonb(context)}, updated_at = now()
    WHERE id = ${message.jobId} AND agent_id = ${agentId} AND status IN ('dispatched', 'running') RETURNING id`);
  if (row === null) throw notOwner(message.jobId, agentId);
}
