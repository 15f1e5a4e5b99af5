// `svc-admin cluster nodes [--json]`: the orchestrators sharing this database, live first: node
// id, address, version, leader, alive or dead, and when it last heart-beat. A node is alive while
// its last beat is younger than three beats (cluster.heartbeatMs), as the orchestrator shows it.
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { aliveWindowMs } from '../../../kernel/orchestrator/cluster/subsystem.ts';
import { listClusterNodes, type ClusterNode } from '../../../kernel/orchestrator/cluster/membership.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

/** `4s`, `12m`, `3h`, `2d`. */
export function ago(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  if (s < 120 * 60) return `${Math.floor(s / 60)}m`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

export default class ClusterNodes extends SvcCommand {
  static override description = 'List the orchestrator nodes of the cluster: leader, alive or dead, last heartbeat (reads the orchestrator database)';
  static override flags = { ...databaseFlag };

  async run(): Promise<{ nodes: ClusterNode[] }> {
    const { flags } = await this.parse(ClusterNodes);
    const config = await adminConfig();
    const nodes = [...(await withDatabase(databaseUrl(config, flags['database-url']), (pool) => listClusterNodes(pool, aliveWindowMs(config.cluster.heartbeatMs))))];
    if (!this.jsonEnabled()) {
      if (nodes.length === 0) this.log('no cluster nodes (no orchestrator has started on this database)');
      for (const n of nodes) {
        const state = n.alive ? 'alive' : n.stoppedAt === null ? 'dead' : 'dead (stopped)';
        this.log(`${n.nodeId}  ${n.address}  ${n.version}  leader=${n.leader ? 'yes' : 'no'}  ${state}  last seen ${ago(n.lastSeenAgoMs)} ago`);
      }
    }
    return { nodes };
  }
}
