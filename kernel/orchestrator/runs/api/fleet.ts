// The dashboard's agents page (relayed as `fleet.request`): this orchestrator's agents — online,
// labels, last seen, and the job each is running when that job belongs to the asking org (an
// agent busy for another org shows no job) — and the identity signing keys' metadata (status,
// custody, created; never key material).
import { Type } from 'typebox';
import type { FleetAgent, FleetSigningKey } from '../../../../schemas/wire/relay.ts';
import { sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { listSigningKeys } from '../../identity/key-store.ts';

/** Agents listed at most (connected first). */
export const MAX_FLEET_AGENTS = 200;

const AgentRow = Type.Object({
  id: Type.String(),
  connected: Type.Boolean(),
  labels: Type.Array(Type.String()),
  last_seen_at: Type.Number(),
  run_id: Type.Union([Type.String(), Type.Null()]),
  display_name: Type.Union([Type.String(), Type.Null()]),
  job_status: Type.Union([Type.String(), Type.Null()]),
});

export async function readFleet(pool: DatabasePool, orgId: string): Promise<{ agents: FleetAgent[]; signingKeys: FleetSigningKey[] }> {
  const rows = await pool.any(sqlTyped(AgentRow, 'dashboard fleet')`
    SELECT a.id, a.connected, a.labels, a.last_seen_at, j.run_id::text AS run_id, j.display_name, j.status AS job_status
    FROM agents a
    LEFT JOIN LATERAL (
      SELECT run_id, display_name, status FROM jobs
      WHERE agent_id = a.id AND org_id = ${orgId} AND status IN ('dispatched', 'running', 'recovering')
      ORDER BY dispatched_at DESC NULLS LAST LIMIT 1
    ) j ON true
    ORDER BY a.connected DESC, a.last_seen_at DESC, a.id
    LIMIT ${MAX_FLEET_AGENTS}`);
  const agents = rows.map((r) => ({
    agentId: r.id,
    connected: r.connected,
    labels: [...r.labels],
    lastSeenAt: new Date(r.last_seen_at).toISOString(),
    currentJob: r.run_id !== null && r.display_name !== null && r.job_status !== null ? { runId: r.run_id, job: r.display_name, status: r.job_status } : null,
  }));
  const signingKeys = (await listSigningKeys(pool)).map((k) => ({ kid: k.kid, status: k.status, custody: k.custody, createdAt: k.createdAt }));
  return { agents, signingKeys };
}
