// The scale_ups table (migration 0800): what the scaling subsystem asked for, and the state of
// each agent it started. Every statement here is safe with several nodes on one database: a row
// is only advanced by the node that started its agent (node_id), and a job's waiting scale-up is
// unique (partial index), so two leaders in a hand-over cannot both scale one job up.
import { sql, type DatabasePool } from '../../services/db/index.ts';
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
    SELECT a.id, a.labels, a.ephemeral FROM agents a
    WHERE a.connected AND NOT (a.ephemeral AND EXISTS (SELECT 1 FROM jobs j WHERE j.agent_id = a.id))`)) as readonly { id: string; labels: string[]; ephemeral: boolean }[];
  return rows.map((r) => ({ id: r.id, labels: new Set(r.labels), ephemeral: r.ephemeral }));
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
export async function claimScaleUp(pool: DatabasePool, row: { scaler: string; plugin: string; nodeId: string; jobId: string; labels: readonly string[] }): Promise<string | null> {
  const inserted = (await pool.maybeOne(sql.unsafe`
    INSERT INTO scale_ups (scaler, plugin, node_id, job_id, labels)
    SELECT ${row.scaler}, ${row.plugin}, ${row.nodeId}, ${row.jobId}::uuid, ${sql.array([...row.labels], 'text')}
    WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ${row.jobId}::uuid AND status = 'queued')
    ON CONFLICT (job_id) WHERE state IN ('starting', 'connected') DO NOTHING
    RETURNING id::text AS id`)) as { id: string } | null;
  return inserted?.id ?? null;
}

export async function setAgent(pool: DatabasePool, id: string, agentId: string): Promise<void> {
  await pool.query(sql.unsafe`UPDATE scale_ups SET agent_id = ${agentId} WHERE id = ${id}::uuid`);
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
    UPDATE scale_ups SET state = 'reaped', reason = ${reason}, ended_at = now()
    WHERE id = ${id}::uuid AND state IN ('starting', 'connected')
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE agent_id IS NOT NULL AND j.agent_id = scale_ups.agent_id)
    RETURNING id`);
  return row !== null;
}
