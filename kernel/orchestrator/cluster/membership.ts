// Orchestrators sharing one PostgreSQL know each other through `cluster_nodes`: each node joins at
// start (checked against the cluster's join token), heart-beats its row, and marks it stopped on a
// clean stop. A node that dies simply stops heart-beating; listings show it as not alive after
// three missed beats. Nothing here decides correctness: dispatch uses SKIP LOCKED, events use
// leases and schedules the leader's advisory lock (leader.ts). Membership is for operators and
// for the join check.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import { Type } from 'typebox';
import { ClusterNode } from '../../../schemas/http/admin.ts';
import { AuthenticationError, InputError } from '../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

const JOIN_LOCK = createHash('sha256').update('svc-cluster:join').digest().readBigInt64BE(0);

export interface JoinOptions {
  nodeId: string;
  address: string;
  /** This node's own address (ctx.nodeUrl()), where svc-admin reaches each node; defaults to `address`. */
  nodeUrl?: string;
  joinToken: string | undefined;
  version: string;
  logger: Logger;
  /** A node is alive while its last beat is younger than this (default 30 s). */
  aliveWithinMs?: number;
}

const tokenHash = (token: string) => createHash('sha256').update(`svc-cluster-join:${token}`, 'utf8').digest('hex');

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

const Membership = Type.Object({ join_token_hash: Type.String() });
const Other = Type.Object({ node_id: Type.String() });

/** Joins (or re-joins after a restart) and returns this process's incarnation id. */
export async function joinCluster(pool: DatabasePool, options: JoinOptions): Promise<string> {
  if (options.nodeId.length === 0 || options.nodeId.length > 200 || /[\u0000-\u001f]/.test(options.nodeId)) {
    throw new InputError('SVC_ERR_CLUSTER_NODE_ID_INVALID', `node id ${JSON.stringify(options.nodeId.slice(0, 80))} must be 1-200 printable characters`);
  }
  const incarnation = randomUUID();
  const aliveMs = options.aliveWithinMs ?? 30_000;
  const others = await pool.transaction(async (tx) => {
    // Two nodes creating the cluster at once agree on one token.
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(${JOIN_LOCK.toString()}::bigint)`);
    const membership = await tx.maybeOne(sqlTyped(Membership)`SELECT join_token_hash FROM cluster_membership WHERE id = 1`);
    if (membership !== null) {
      if (options.joinToken === undefined) {
        throw new AuthenticationError('SVC_ERR_CLUSTER_JOIN_TOKEN_MISSING', 'this database belongs to a cluster with a join token; set SVC_CLUSTER_JOIN_TOKEN (cluster.joinToken) on this node to join it');
      }
      if (!sameHash(membership.join_token_hash, tokenHash(options.joinToken))) {
        throw new AuthenticationError('SVC_ERR_CLUSTER_JOIN_REFUSED', "this node's cluster.joinToken does not match the one the cluster was created with; set SVC_CLUSTER_JOIN_TOKEN to the cluster's token");
      }
    } else if (options.joinToken !== undefined) {
      await tx.query(sql.unsafe`INSERT INTO cluster_membership (id, join_token_hash, created_by) VALUES (1, ${tokenHash(options.joinToken)}, ${options.nodeId})`);
    }
    await tx.query(sql.unsafe`
      INSERT INTO cluster_nodes (node_id, address, node_url, incarnation, pid, version, leader, started_at, last_seen_at, stopped_at)
      VALUES (${options.nodeId}, ${options.address}, ${options.nodeUrl ?? options.address}, ${incarnation}, ${process.pid}, ${options.version}, false, now(), now(), NULL)
      ON CONFLICT (node_id) DO UPDATE SET address = EXCLUDED.address, node_url = EXCLUDED.node_url, incarnation = EXCLUDED.incarnation, pid = EXCLUDED.pid,
        version = EXCLUDED.version, leader = false, started_at = now(), last_seen_at = now(), stopped_at = NULL`);
    return tx.any(sqlTyped(Other)`
      SELECT node_id FROM cluster_nodes
      WHERE node_id <> ${options.nodeId} AND stopped_at IS NULL AND last_seen_at > now() - ${aliveMs} * interval '1 millisecond'`);
  });
  if (others.length > 0 && options.joinToken === undefined) {
    options.logger.warn({ nodes: others.map((o) => o.node_id) }, 'other orchestrators share this database but no cluster.joinToken is set; set SVC_CLUSTER_JOIN_TOKEN on every node');
  }
  return incarnation;
}

/** One beat: false when another process has taken this node id over since (two nodes share an id). */
export async function heartbeat(pool: DatabasePool, nodeId: string, incarnation: string, leader: boolean): Promise<boolean> {
  const row = await pool.maybeOne(sql.unsafe`
    UPDATE cluster_nodes SET last_seen_at = now(), leader = ${leader}
    WHERE node_id = ${nodeId} AND incarnation = ${incarnation} RETURNING 1 AS one`);
  return row !== null;
}

export async function leaveCluster(pool: DatabasePool, nodeId: string, incarnation: string): Promise<void> {
  await pool.query(sql.unsafe`UPDATE cluster_nodes SET stopped_at = now(), leader = false WHERE node_id = ${nodeId} AND incarnation = ${incarnation}`);
}

export { ClusterNode };

const ISO = (column: string) => sql.fragment`to_char(${sql.identifier([column])} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Every known node, live first; `alive` when it beat within `aliveWithinMs` and did not stop. */
export async function listClusterNodes(pool: DatabasePool, aliveWithinMs = 30_000): Promise<readonly ClusterNode[]> {
  return pool.any(sqlTyped(ClusterNode)`
    SELECT node_id AS "nodeId", address, version, pid,
      (leader AND stopped_at IS NULL AND last_seen_at > now() - ${aliveWithinMs} * interval '1 millisecond') AS leader,
      (stopped_at IS NULL AND last_seen_at > now() - ${aliveWithinMs} * interval '1 millisecond') AS alive,
      ${ISO('started_at')} AS "startedAt", ${ISO('last_seen_at')} AS "lastSeenAt",
      (extract(epoch FROM (now() - last_seen_at)) * 1000)::float8 AS "lastSeenAgoMs",
      CASE WHEN stopped_at IS NULL THEN NULL ELSE ${ISO('stopped_at')} END AS "stoppedAt"
    FROM cluster_nodes ORDER BY 6 DESC, node_id`);
}
