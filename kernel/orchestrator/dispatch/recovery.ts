// Spec "Queued job when its agent disconnects". A static agent's jobs wait in `recovering` for
// twice the agent's maximum reconnect delay; an ephemeral agent's started job fails at once and
// its unstarted job is requeued (bounded by the dispatch-attempt limit). The sweeper that fails
// expired windows is one UPDATE, safe on every node at once.
import type { CommonQueryMethods } from 'slonik';
import type { AgentRegister } from '../../../schemas/wire/agent.ts';
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { notifyJobsQueued } from './notify.ts';
import { lockRunsOfJobs, progressRun, recordJobComplete } from './progression.ts';

export function recoveryWindowMs(maxReconnectDelayMs: number): number {
  return 2 * maxReconnectDelayMs;
}

/** Failure text when a static agent's recovery window ran out. */
export function recoveryExpiredReason(agentId: string, windowMs: number): string {
  return `Agent ${agentId} did not reconnect within the recovery window (${formatWindow(windowMs)})`;
}

function formatWindow(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}

async function failJobs(tx: CommonQueryMethods, rows: readonly { id: string; run_id: string; reason: string }[]): Promise<void> {
  const runs = new Set<string>();
  for (const row of rows) {
    // A lost agent fails the attempt; a job whose retry policy lists `agent-lost` gets a new one.
    await recordJobComplete(tx, row.run_id, row.id, 'failed', { reason: row.reason }, { agentLost: true });
    runs.add(row.run_id);
  }
  for (const runId of runs) await progressRun(tx, runId);
}

export interface DisconnectResult {
  recovering: string[];
  failed: string[];
  requeued: string[];
}

/**
 * Handles the loss of session `sessionId` of `agentId`. Does nothing when the agent already
 * holds a newer session (it reconnected, maybe to another node).
 */
export async function handleAgentDisconnect(
  pool: DatabasePool,
  options: { agentId: string; sessionId: string; ephemeral: boolean; maxReconnectDelayMs: number; maxDispatchAttempts: number },
): Promise<DisconnectResult> {
  const result: DisconnectResult = { recovering: [], failed: [], requeued: [] };
  const { agentId } = options;
  return pool.transaction(async (tx) => {
    const current = await tx.maybeOne(sql.unsafe`
      UPDATE agents SET connected = false, last_seen_at = now() WHERE id = ${agentId} AND session_id = ${options.sessionId} RETURNING id`);
    if (current === null) return result;
    if (!options.ephemeral) {
      const window = recoveryWindowMs(options.maxReconnectDelayMs);
      const rows = (await tx.any(sql.unsafe`
        UPDATE jobs SET status = 'recovering', recovery_deadline = now() + ${window} * interval '1 millisecond', updated_at = now()
        WHERE agent_id = ${agentId} AND status IN ('dispatched', 'running') RETURNING id::text AS id`)) as readonly { id: string }[];
      result.recovering = rows.map((r) => r.id);
      return result;
    }
    await lockRunsOfJobs(tx, sql.fragment`agent_id = ${agentId} AND status IN ('dispatched', 'running', 'recovering')`);
    const started = `Agent ${agentId} (ephemeral) disconnected while the job was running`;
    const failed = (await tx.any(sql.unsafe`
      UPDATE jobs SET status = 'failed', reason = ${started}, finished_at = now(), updated_at = now()
      WHERE agent_id = ${agentId} AND status IN ('running', 'recovering') RETURNING id::text AS id, run_id::text AS run_id, reason`)) as readonly {
      id: string;
      run_id: string;
      reason: string;
    }[];
    const exhausted = `Agent ${agentId} (ephemeral) disconnected before starting the job, and the job reached the dispatch-attempt limit (${options.maxDispatchAttempts})`;
    const failedUnstarted = (await tx.any(sql.unsafe`
      UPDATE jobs SET status = 'failed', reason = ${exhausted}, finished_at = now(), updated_at = now()
      WHERE agent_id = ${agentId} AND status = 'dispatched' AND attempts >= ${options.maxDispatchAttempts}
      RETURNING id::text AS id, run_id::text AS run_id, reason`)) as readonly { id: string; run_id: string; reason: string }[];
    const requeued = (await tx.any(sql.unsafe`
      UPDATE jobs SET status = 'queued', agent_id = NULL, dispatched_at = NULL, queued_at = now(),
             reason = ${`Requeued: agent ${agentId} (ephemeral) disconnected before starting the job`}, updated_at = now()
      WHERE agent_id = ${agentId} AND status = 'dispatched' RETURNING id::text AS id`)) as readonly { id: string }[];
    await failJobs(tx, [...failed, ...failedUnstarted]);
    if (requeued.length > 0) await notifyJobsQueued(tx);
    result.failed = [...failed, ...failedUnstarted].map((r) => r.id);
    result.requeued = requeued.map((r) => r.id);
    return result;
  });
}

export interface ReattachResult {
  /** Jobs the agent still holds and may keep running. */
  reattached: string[];
  /** Jobs it reported that are no longer its to run (ended here, or cancel requested): stop them. */
  stop: Array<{ jobId: string; reason: string }>;
  /** Jobs it held but did not report: they failed. */
  lost: string[];
}

/** At registration: the agent's in-flight jobs go back to `dispatched`/`running`. Inside the registration transaction. */
export async function reattachJobs(tx: CommonQueryMethods, agentId: string, inFlight: AgentRegister['inFlightJobs']): Promise<ReattachResult> {
  const result: ReattachResult = { reattached: [], stop: [], lost: [] };
  const reported = new Map(inFlight.map((j) => [j.jobId, j.status]));
  await lockRunsOfJobs(tx, sql.fragment`agent_id = ${agentId} AND status IN ('dispatched', 'running', 'recovering')`);
  const held = (await tx.any(sql.unsafe`
    SELECT id::text AS id, run_id::text AS run_id, status, started_at, cancel_requested_at FROM jobs
    WHERE agent_id = ${agentId} AND status IN ('dispatched', 'running', 'recovering') FOR UPDATE`)) as readonly {
    id: string;
    run_id: string;
    status: string;
    started_at: number | null;
    cancel_requested_at: number | null;
  }[];
  const lost: Array<{ id: string; run_id: string; reason: string }> = [];
  for (const job of held) {
    const status = reported.get(job.id);
    reported.delete(job.id);
    if (status === undefined) {
      lost.push({ id: job.id, run_id: job.run_id, reason: `Agent ${agentId} reconnected without this job in flight` });
      continue;
    }
    const next = status === 'running' || job.started_at !== null || job.status === 'running' ? 'running' : 'dispatched';
    await tx.query(sql.unsafe`
      UPDATE jobs SET status = ${next}, recovery_deadline = NULL, updated_at = now() WHERE id = ${job.id}`);
    result.reattached.push(job.id);
    if (job.cancel_requested_at !== null) result.stop.push({ jobId: job.id, reason: 'cancel requested while the agent was away' });
  }
  for (const row of lost) {
    await tx.query(sql.unsafe`
      UPDATE jobs SET status = 'failed', reason = ${row.reason}, finished_at = now(), recovery_deadline = NULL, updated_at = now() WHERE id = ${row.id}`);
  }
  await failJobs(tx, lost);
  result.lost = lost.map((l) => l.id);
  // Reported jobs this agent no longer owns (window expired, cancelled, re-dispatched).
  for (const [jobId] of reported) result.stop.push({ jobId, reason: 'this job is no longer assigned to this agent' });
  return result;
}

/** Fails every `recovering` job whose window has passed. Safe to run on several nodes at once. */
export async function sweepExpiredRecoveries(pool: DatabasePool, maxReconnectDelayMs: number): Promise<string[]> {
  const window = recoveryWindowMs(maxReconnectDelayMs);
  return pool.transaction(async (tx) => {
    await lockRunsOfJobs(tx, sql.fragment`status = 'recovering' AND recovery_deadline < now()`);
    const rows = (await tx.any(sql.unsafe`
      UPDATE jobs SET status = 'failed',
        reason = 'Agent ' || coalesce(agent_id, '(unknown)') || ${` did not reconnect within the recovery window (${formatWindow(window)})`},
        finished_at = now(), updated_at = now()
      WHERE id IN (SELECT id FROM jobs WHERE status = 'recovering' AND recovery_deadline < now() FOR UPDATE SKIP LOCKED)
      RETURNING id::text AS id, run_id::text AS run_id, reason`)) as readonly { id: string; run_id: string; reason: string }[];
    await failJobs(tx, rows);
    return rows.map((r) => r.id);
  });
}
