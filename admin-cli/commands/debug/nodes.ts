// How debug-bundle and diagnose reach orchestrator nodes: the live nodes of the cluster from the
// nodes table (each node records its own address, `node_url`), or one node's address; each
// node's `GET /api/v1/admin/debug` with the admin token. A node that does not answer, refuses
// the token or answers something unexpected is reported as such, never thrown.
import { Type } from 'typebox';
import { NodeDebug } from '../../../schemas/http/debug.ts';
import { compileSchema } from '../../../schemas/validate.ts';
import { messageOf } from '../../../core/errors.ts';
import type { SvcConfig } from '../../../schemas/config.ts';
import { pino } from 'pino';
import { createDatabase, sqlTyped, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { aliveWindowMs } from '../../../kernel/orchestrator/cluster/subsystem.ts';

const checkDebug = compileSchema(NodeDebug);
export const NODE_TIMEOUT_MS = 15_000;
const quiet = pino({ level: 'silent' });

export interface NodeTarget {
  /** Node id from the nodes table; null for a node named only by its address. */
  nodeId: string | null;
  url: string;
}

export type NodeAnswer = { target: NodeTarget; ok: true; debug: NodeDebug } | { target: NodeTarget; ok: false; reason: string };

const LiveNode = Type.Object({ node_id: Type.String(), url: Type.String() });

export async function liveNodes(pool: DatabasePool, config: SvcConfig): Promise<NodeTarget[]> {
  const window = aliveWindowMs(config.cluster.heartbeatMs);
  const rows = await pool.any(sqlTyped(LiveNode)`
    select node_id, coalesce(node_url, address) as url from cluster_nodes
    where stopped_at is null and last_seen_at > now() - ${window} * interval '1 millisecond' order by node_id`);
  return rows.map((r) => ({ nodeId: r.node_id, url: r.url }));
}

/** This machine's orchestrator: its listener when a fixed port is configured, else its public URL. */
export function localNodeUrl(config: SvcConfig): string | undefined {
  const base = (config.server.basePath ?? '').replace(/\/$/, '');
  if (config.server.port !== 0) return `http://127.0.0.1:${config.server.port}${base}`;
  return config.server.publicUrl;
}

export async function askNode(target: NodeTarget, token: string): Promise<NodeAnswer> {
  const url = new URL('api/v1/admin/debug', target.url.endsWith('/') ? target.url : `${target.url}/`);
  let response: Response;
  try {
    response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(NODE_TIMEOUT_MS) });
  } catch (error) {
    return { target, ok: false, reason: `unreachable: ${messageOf(error)}${(error as { cause?: unknown }).cause ? ` (${messageOf((error as { cause?: unknown }).cause)})` : ''}` };
  }
  const body = (await response.json().catch(() => undefined)) as unknown;
  if (response.status === 401 || response.status === 403) return { target, ok: false, reason: `refused the admin token (HTTP ${response.status})` };
  if (!response.ok) {
    const code = (body as { error?: { code?: unknown } } | undefined)?.error?.code;
    return { target, ok: false, reason: `answered HTTP ${response.status}${typeof code === 'string' ? ` ${code}` : ''} (an older version without ${url.pathname}?)` };
  }
  if (!checkDebug.check(body)) return { target, ok: false, reason: 'answered an unexpected body' };
  return { target, ok: true, debug: body };
}

/** The orchestrator database as it is: no migration is applied (a diagnosis must not change it). */
export async function withPlainDatabase<T>(url: string, fn: (pool: DatabasePool) => Promise<T>): Promise<T> {
  const pool = await createDatabase({ url, logger: quiet, maxPoolSize: 2, connectionTimeoutMs: 10_000 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}
