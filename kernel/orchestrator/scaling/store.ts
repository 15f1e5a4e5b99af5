// The scale_ups table (migration 0800): what the scaling subsystem asked for, and the state of
// each agent it started. Every statement here is safe with several nodes on one database: a row
// is only advanced by the node that started its agent (node_id), and a job's waiting scale-up is
// unique (partial index), so two leaders in a hand-over cannot both scale one job up.
import type { CommonQueryMethods } from 'slonik';
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { emitInternalEvent, SCALE_UP_EVENT } from '../events/emit.ts';
import type { OnlineAgent, ScalerUsage, WaitingScaleUp } from './plan.ts';

export const LIVE_STATES = ['starting', 'connected', 'busy'] as const;

export interface ScaleUpRow {
  id: string;
  scaler: string;
  plugin: string;
  node_id: string;
  job_id: string | null;
  agent_id: string | null;
  labels: string[];
  state: string;
  reason: string | null;
  created_at: number;
}

const COLUMNS = sql.fragment`id::text AS id, scaler, plugin, node_id, job_id::text AS job_id, agent_id, labels, state, reason, created_at`;

/** Connected agents that can still take a job: an ephemeral agent that took one is spent. */
export async function availableAgents(pool: DatabasePool): Promise<OnlineAgent[]> {
  const rows = (await pool.any(sql.unsafe`
    SELECT a.id, a.labels, a.ephemeral, a.protocol_version FROM agents a
    WHERE a.connected AND NOT (a.ephemeral AND EXISTS (SELECT 1 FROM jobs j WHERE j.agent_id = a.id))`)) as readonly {
    id: string;
    labels: string[];
    ephemeral: boolean;
    protocol_version: number | null;
  }[];
  return rows.map((r) => ({ id: r.id, labels: new Set(r.labels), ephemeral: r.ephemeral, protocol: r.protocol_version }));
}

/** Scale-ups still waiting for their agent to take a job (any node), oldest first. */
export async function waitingScaleUps(pool: DatabasePool): Promise<WaitingScaleUp[]> {
  const rows = (await pool.any(sql.unsafe`
    SELECT job_id::text AS job_id, agent_id, scaler FROM scale_ups WHERE state IN ('starting', 'connected') ORDER BY created_at`)) as readonly { job_id: string | null; agent_id: string | null; scaler: string }[];
  return rows.map((r) => ({ jobId: r.job_id, agentId: r.agent_id, scaler: r.scaler }));
}

/** Per scaler: agents alive or starting, and scale-ups in the last minute (every node's). */
export async function scalerUsage(pool: DatabasePool): Promise<Map<string, ScalerUsage>> {
  const rows = (await pool.any(sql.unsafe`
    SELECT scaler,
           count(*) FILTER (WHERE state IN ('starting', 'connected', 'busy'))::int AS live,
           count(*) FILTER (WHERE created_at > now() - interval '60 seconds')::int AS recent
    FROM scale_ups WHERE state IN ('starting', 'connected', 'busy') OR created_at > now() - interval '60 seconds'
    GROUP BY scaler`)) as readonly { scaler: string; live: number; recent: number }[];
  return new Map(rows.map((r) => [r.scaler, { live: r.live, startedLastMinute: r.recent }]));
}

/**
 * Records a scale-up before the scaler is asked, so a crash in between leaves a row the reaper
 * ends, never an agent nobody counts. Null when the job is no longer queued or already has one.
 */
export async function claimScaleUp(
  pool: DatabasePool,
  row: { scaler: string; plugin: string; nodeId: string; jobId: string; labels: readonly string[]; gate: readonly string[] },
): Promise<string | null> {
  const inserted = (await pool.maybeOne(sql.unsafe`
    INSERT INTO scale_ups (scaler, plugin, node_id, job_id, labels, gate)
    SELECT ${row.scaler}, ${row.plugin}, ${row.nodeId}, ${row.jobId}::uuid, ${sql.array([...row.labels], 'text')}, ${sql.array([...row.gate], 'text')}
    WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ${row.jobId}::uuid AND status = 'queued')
    ON CONFLICT (job_id) WHERE state IN ('starting', 'connected') DO NOTHING
    RETURNING id::text AS id`)) as { id: string } | null;
  return inserted?.id ?? null;
}

/**
 * Registration and the scale-up's agent id are serialized per agent id: whichever commits second
 * sees the other, so an agent that registers before its scale-up learns its id is still checked.
 */
async function lockAgentId(tx: CommonQueryMethods, agentId: string): Promise<void> {
  await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${`svc-scaled-agent:${agentId}`}, 0))`);
}

/** Labels of `gate` an agent's registered labels lack. */
export const missingLabels = (gate: readonly string[], labels: readonly string[]): string[] => gate.filter((l) => !labels.includes(l));

export interface ScaleUpEvent {
  scaler: string;
  plugin: string;
  nodeId: string;
  jobId: string;
  /** The full gate the agent must register with (auto labels and the scaler's labels). */
  mandatoryLabels: readonly string[];
  /** The scaler's custom labels: what the plugin was asked to give the agent. */
  labels: readonly string[];
}

/**
 * Records the agent a scaler started and emits the scale-up event in the same transaction (both
 * or neither). When the agent already registered (it was quicker than the scaler's answer) its
 * labels are checked here: the labels of the gate it lacks are returned, else none.
 */
export async function setAgent(pool: DatabasePool, id: string, agentId: string, event: ScaleUpEvent): Promise<string[]> {
  return pool.transaction(async (tx) => {
    await lockAgentId(tx, agentId);
    await tx.query(sql.unsafe`UPDATE scale_ups SET agent_id = ${agentId} WHERE id = ${id}::uuid`);
    const job = (await tx.maybeOne(sql.unsafe`SELECT org_id, run_id::text AS run_id FROM jobs WHERE id = ${event.jobId}::uuid`)) as { org_id: string; run_id: string } | null;
    if (job !== null) {
      await emitInternalEvent(tx, {
        name: SCALE_UP_EVENT,
        source: 'orchestrator',
        orgId: job.org_id,
        runId: job.run_id,
        jobId: event.jobId,
        payload: {
          scaler: event.scaler,
          plugin: event.plugin,
          scaleUpId: id,
          agentId,
          count: 1,
          mandatoryLabels: [...event.mandatoryLabels],
          labels: [...event.labels],
          jobId: event.jobId,
          runId: job.run_id,
          nodeId: event.nodeId,
          reason: `job ${event.jobId}`,
        },
      });
    }
    const agent = (await tx.maybeOne(sql.unsafe`SELECT labels FROM agents WHERE id = ${agentId} AND connected`)) as { labels: string[] } | null;
    return agent === null ? [] : missingLabels(event.mandatoryLabels, agent.labels);
  });
}

/**
 * Registration check (dispatch's registration transaction): an agent of a live scale-up must
 * carry the scale-up's whole gate. Null when it does, or when no scaler started it; else the
 * scaler, the gate and what is missing (also recorded as the scale-up's reason).
 */
export async function mandatoryLabelsGap(
  tx: CommonQueryMethods,
  agentId: string,
  labels: readonly string[],
): Promise<{ scaler: string; gate: string[]; missing: string[] } | null> {
  await lockAgentId(tx, agentId);
  const row = (await tx.maybeOne(sql.unsafe`
    SELECT id::text AS id, scaler, gate FROM scale_ups
    WHERE agent_id = ${agentId} AND state IN ('starting', 'connected', 'busy') AND gate IS NOT NULL`)) as { id: string; scaler: string; gate: string[] } | null;
  if (row === null) return null;
  const missing = missingLabels(row.gate, labels);
  if (missing.length === 0) return null;
  await tx.query(sql.unsafe`UPDATE scale_ups SET reason = ${`refused at registration: registered without ${missing.join(', ')}`} WHERE id = ${row.id}::uuid`);
  return { scaler: row.scaler, gate: row.gate, missing };
}

export async function endScaleUp(pool: DatabasePool, id: string, state: 'failed' | 'reaped' | 'exited', reason: string): Promise<void> {
  await pool.query(sql.unsafe`
    UPDATE scale_ups SET state = ${state}, reason = ${reason}, ended_at = now()
    WHERE id = ${id}::uuid AND state IN ('starting', 'connected', 'busy')`);
}

/**
 * Advances this node's rows from what the agents and jobs tables say: registered → connected,
 * took a job → busy, disconnected after registering → exited. Returns the rows that exited
 * (their processes are stopped to be sure).
 */
export async function advanceRows(pool: DatabasePool, nodeId: string): Promise<ScaleUpRow[]> {
  await pool.query(sql.unsafe`
    UPDATE scale_ups s SET state = 'connected', connected_at = now()
    FROM agents a
    WHERE s.node_id = ${nodeId} AND s.state = 'starting' AND a.id = s.agent_id AND a.connected`);
  await pool.query(sql.unsafe`
    UPDATE scale_ups s SET state = 'busy', busy_at = now(), connected_at = coalesce(s.connected_at, now())
    WHERE s.node_id = ${nodeId} AND s.state IN ('starting', 'connected') AND s.agent_id IS NOT NULL
      AND EXISTS (SELECT 1 FROM jobs j WHERE j.agent_id = s.agent_id)`);
  return (await pool.any(sql.unsafe`
    UPDATE scale_ups s SET state = 'exited', ended_at = now(),
           reason = CASE WHEN s.state = 'busy' THEN 'ended after its job' ELSE 'disconnected before taking a job' END
    FROM agents a
    WHERE s.node_id = ${nodeId} AND s.state IN ('connected', 'busy') AND a.id = s.agent_id AND NOT a.connected
    RETURNING s.id::text AS id, s.scaler, s.plugin, s.node_id, s.job_id::text AS job_id, s.agent_id, s.labels, s.state, s.reason, s.created_at`)) as unknown as ScaleUpRow[];
}

/** This node's rows still waiting for their agent to take a job. */
export async function waitingRowsOf(pool: DatabasePool, nodeId: string): Promise<ScaleUpRow[]> {
  return (await pool.any(sql.unsafe`
    SELECT ${COLUMNS} FROM scale_ups WHERE node_id = ${nodeId} AND state IN ('starting', 'connected') ORDER BY created_at`)) as unknown as ScaleUpRow[];
}

/**
 * Rows this node left live in an earlier process: that plugin instance (and its children's
 * handles) is gone, so nothing here can stop or count them. Ended as reaped, with why.
 */
export async function endOrphans(pool: DatabasePool, nodeId: string): Promise<ScaleUpRow[]> {
  return (await pool.any(sql.unsafe`
    UPDATE scale_ups SET state = 'reaped', ended_at = now(),
           reason = 'orphaned: the orchestrator process that started it ended'
    WHERE node_id = ${nodeId} AND state IN ('starting', 'connected', 'busy')
    RETURNING ${COLUMNS}`)) as unknown as ScaleUpRow[];
}

/** Claims one waiting row for reaping (null when it took a job or ended meanwhile). */
export async function claimReap(pool: DatabasePool, id: string, reason: string): Promise<boolean> {
  const row = await pool.maybeOne(sql.unsafe`
    UPDATE scale_ups SET state = 'reaped', reason = coalesce(reason || '; ', '') || ${reason}, ended_at = now()
    WHERE id = ${id}::uuid AND state IN ('starting', 'connected')
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE agent_id IS NOT NULL AND j.agent_id = scale_ups.agent_id)
    RETURNING id`);
  return row !== null;
}
