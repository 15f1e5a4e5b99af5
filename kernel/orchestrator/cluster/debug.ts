// This node's debug information, served at `GET /api/v1/admin/debug` (scope cluster.read) for
// `svc-admin debug-bundle` and `svc-admin diagnose`: versions (package, Node, migration level,
// lock and wire schema versions), health (database, relay link, leader, memory), the effective
// config with every secret redacted, and the node's recent log lines from the in-memory ring
// (core/log-ring.ts; lines are redacted by the logger before they reach it).
import { readdir } from 'node:fs/promises';
import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify';
import { Type } from 'typebox';
import type { NodeDebug, NodeVersions } from '../../../schemas/http/debug.ts';
import { COMPILE_SCHEMA_VERSION, LOCK_SCHEMA_VERSION } from '../../../schemas/lock.ts';
import { MIN_PROTOCOL_VERSION, PROTOCOL_VERSION } from '../../../schemas/wire/relay.ts';
import { PROCESS_LOG_RING, type LogRing } from '../../../core/log-ring.ts';
import { KERNEL_VERSION } from '../../../core/plugins/version.ts';
import { messageOf } from '../../../core/errors.ts';
import { redactConfigDeep } from '../../services/config/redact-deep.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { OrchestratorContext } from '../context.ts';
import { relayLinkStateOf } from '../relay-link/link-state.ts';

export const DEBUG_ROUTE = '/api/v1/admin/debug';

const Migration = Type.Object({ latest: Type.Union([Type.String(), Type.Null()]), applied: Type.Number() });

/** Newest applied migration and how many are applied, against how many files this build has. */
export async function migrationLevel(pool: DatabasePool, dir: string, table = 'svc_migrations'): Promise<Pick<NodeVersions, 'migration' | 'migrationsApplied' | 'migrationsKnown'>> {
  const known = (await readdir(dir)).filter((f) => f.endsWith('.sql')).length;
  const row = await pool.one(sqlTyped(Migration)`select max(name) as latest, count(*)::int as applied from ${sql.identifier([table])}`);
  return { migration: row.latest, migrationsApplied: row.applied, migrationsKnown: known };
}

export function staticVersions(): Omit<NodeVersions, 'migration' | 'migrationsApplied' | 'migrationsKnown'> {
  return {
    package: KERNEL_VERSION,
    node: process.version,
    lockSchema: LOCK_SCHEMA_VERSION,
    compileSchema: COMPILE_SCHEMA_VERSION,
    wireProtocol: PROTOCOL_VERSION,
    minWireProtocol: MIN_PROTOCOL_VERSION,
  };
}

export interface DebugSources {
  ctx: OrchestratorContext;
  migrationsDir: string;
  isLeader: () => boolean;
  ring?: LogRing;
}

export async function collectNodeDebug(sources: DebugSources): Promise<NodeDebug> {
  const { ctx } = sources;
  let database: NodeDebug['health']['database'];
  let migration: Pick<NodeVersions, 'migration' | 'migrationsApplied' | 'migrationsKnown'> = { migration: null, migrationsApplied: 0, migrationsKnown: 0 };
  try {
    migration = await migrationLevel(ctx.db, sources.migrationsDir);
    const behind = migration.migrationsApplied < migration.migrationsKnown;
    database = behind
      ? { status: 'warn', message: `${migration.migrationsApplied} of ${migration.migrationsKnown} migrations applied` }
      : { status: 'pass', message: `connected; migration ${migration.migration ?? '(none)'}` };
  } catch (error) {
    database = { status: 'fail', message: `database query failed: ${messageOf(error)}` };
  }
  const link = relayLinkStateOf(ctx);
  const linkStatus = link.configured && !link.connected ? 'warn' : 'pass';
  const status = database.status === 'fail' ? 'fail' : database.status === 'warn' || linkStatus === 'warn' ? 'warn' : 'pass';
  const memory = process.memoryUsage();
  return {
    nodeId: ctx.nodeId,
    nodeUrl: ctx.nodeUrl(),
    publicUrl: ctx.publicUrl(),
    pid: process.pid,
    collectedAt: new Date().toISOString(),
    versions: { ...staticVersions(), ...migration },
    health: {
      status,
      uptimeSeconds: Math.round(process.uptime()),
      database,
      relayLink: { configured: link.configured, connected: link.connected },
      leader: sources.isLeader(),
      memory: { rssBytes: memory.rss, heapUsedBytes: memory.heapUsed },
    },
    config: redactConfigDeep(ctx.config),
    logs: (sources.ring ?? PROCESS_LOG_RING).lines(),
  };
}

/** `guard`: the admin-auth hook (scope cluster.read). */
export function debugRoutes(sources: DebugSources, guard: onRequestAsyncHookHandler) {
  return async function routes(app: FastifyInstance): Promise<void> {
    app.get(DEBUG_ROUTE, { onRequest: guard }, async () => collectNodeDebug(sources));
  };
}
