// The cluster subsystem: joins this node to the orchestrators sharing the database (checked
// against `cluster.joinToken`), heart-beats its row, runs the leader election, and serves
// `GET /api/v1/admin/cluster/nodes`. Provides `clusterServiceRef` (is this node the leader? the
// cluster-wide settings, kept current by NOTIFY: settings.ts, `/api/v1/admin/cluster-settings`).
import type { FastifyInstance } from 'fastify';
import { KERNEL_VERSION } from '../../../core/plugins/version.ts';
import { messageOf } from '../../../core/errors.ts';
import { provide } from '../../../core/wiring/index.ts';
import type { Subsystem } from '../context.ts';
import { adminAuthRef, clusterServiceRef } from '../service-refs.ts';
import { LeaderElection } from './leader.ts';
import type { ClusterService } from './service.ts';
import { heartbeat, joinCluster, leaveCluster, listClusterNodes } from './membership.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR } from '../database.ts';
import { debugRoutes } from './debug.ts';
import { createListener } from '../../services/db/index.ts';
import { startClusterSettings } from './settings.ts';
import { actorOf, clusterSettingsRoutes } from './settings-routes.ts';

export type { ClusterService };

/** A node is shown alive while its last beat is younger than three beats (at least 3 s). */
export const aliveWindowMs = (heartbeatMs: number) => Math.max(3_000, heartbeatMs * 3);

export const clusterSubsystem: Subsystem = {
  id: 'cluster',
  provides: [clusterServiceRef],
  needs: [adminAuthRef],
  async start(ctx, deps) {
    const logger = ctx.logger.child({ subsystem: 'cluster' });
    const { heartbeatMs, joinToken } = ctx.config.cluster;
    const incarnation = await joinCluster(ctx.db, { nodeId: ctx.nodeId, address: ctx.publicUrl(), nodeUrl: ctx.nodeUrl(), joinToken, version: KERNEL_VERSION, logger, aliveWithinMs: aliveWindowMs(heartbeatMs) });
    const handlers = new Set<(leader: boolean) => void>();
    const election = new LeaderElection({
      url: ctx.databaseUrl,
      logger,
      intervalMs: Math.min(heartbeatMs, 5_000),
      onChange: (leader) => {
        beat();
        for (const h of handlers) h(leader);
      },
    });
    let warned = false;
    const beat = (): void => {
      heartbeat(ctx.db, ctx.nodeId, incarnation, election.isLeader)
        .then((ours) => {
          if (!ours && !warned) logger.error({ nodeId: ctx.nodeId }, 'another process has joined with this node id; give each orchestrator its own SVC_INSTANCE_ID');
          warned = !ours;
        })
        .catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'cluster heartbeat failed'));
    };
    const timer = setInterval(beat, heartbeatMs);
    timer.unref();
    await election.start();
    deps.onStop(async () => {
      clearInterval(timer);
      await election.stop();
      await leaveCluster(ctx.db, ctx.nodeId, incarnation).catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'could not mark this node stopped'));
    });
    const seed = { maxDispatchAttempts: ctx.config.cluster.maxDispatchAttempts, sealedSecretsRetryBackoffMs: ctx.config.sealedSecretsRetryBackoffMs };
    const listener = await createListener({ url: ctx.databaseUrl, logger });
    deps.onStop(() => listener.close());
    const settings = await startClusterSettings({ pool: ctx.db, listener, seed, nodeId: ctx.nodeId, logger });
    const auth = deps.get(adminAuthRef);
    await ctx.http.register(clusterSettingsRoutes({ pool: ctx.db, settings, seed, nodeId: ctx.nodeId, guard: (scope) => auth.requireScope(scope), actor: (request) => actorOf(auth, request) }));
    await ctx.http.register(async (app: FastifyInstance) => {
      app.get('/api/v1/admin/cluster/nodes', { onRequest: deps.get(adminAuthRef).requireScope('cluster.read') }, async () => {
        return { nodes: await listClusterNodes(ctx.db, aliveWindowMs(heartbeatMs)) };
      });
    });
    // This node's versions, health, redacted config and recent logs (svc-admin debug-bundle, diagnose).
    await ctx.http.register(debugRoutes({ ctx, migrationsDir: ORCHESTRATOR_MIGRATIONS_DIR, isLeader: () => election.isLeader }, deps.get(adminAuthRef).requireScope('cluster.read')));
    const service: ClusterService = {
      nodeId: ctx.nodeId,
      settings,
      isLeader: () => election.isLeader,
      onLeaderChange(handler) {
        handlers.add(handler);
        return () => handlers.delete(handler);
      },
    };
    return [provide(clusterServiceRef, service)];
  },
};
