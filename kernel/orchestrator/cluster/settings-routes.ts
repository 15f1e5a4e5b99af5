// `GET` / `PATCH /api/v1/admin/cluster-settings` (docs/cluster.md). The PATCH body is strict:
// an unknown field, a value out of range or an empty body is a 400 and nothing is written.
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { AdminAuth } from '../admin-auth/require-scope.ts';
import { ClusterSettingsPatch, type ClusterSettingsValues } from '../../../schemas/http/settings.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { patchClusterSettings, type ClusterSettingsService } from './settings.ts';

/** An onRequest hook admitting only admin bearers holding `scope` (AdminAuth.requireScope). */
export type ScopeGuard = (scope: 'cluster.read' | 'cluster.write') => onRequestAsyncHookHandler;

/** Who a change is recorded as: the admin token's name, or the bootstrap token. */
export function actorOf(auth: AdminAuth, request: FastifyRequest): string {
  const principal = auth.principalOf(request);
  if (principal === undefined) return 'admin API';
  return principal.kind === 'bootstrap' ? 'bootstrap admin token' : `admin token "${principal.name}"`;
}

export function clusterSettingsRoutes(options: {
  pool: DatabasePool;
  settings: ClusterSettingsService;
  /** This node's config values: the row is created from them if no node made it yet. */
  seed: ClusterSettingsValues;
  nodeId: string;
  guard: ScopeGuard;
  /** Who the change is recorded as (the admin principal when known). */
  actor?: (request: FastifyRequest) => string;
}) {
  return async function routes(app: FastifyInstance): Promise<void> {
    app.get('/api/v1/admin/cluster-settings', { onRequest: options.guard('cluster.read') }, async () => options.settings.refresh());
    app.patch('/api/v1/admin/cluster-settings', { onRequest: options.guard('cluster.write'), schema: { body: ClusterSettingsPatch } }, async (request) => {
      const by = options.actor?.(request) ?? 'admin API';
      const saved = await patchClusterSettings(options.pool, request.body as ClusterSettingsPatch, options.seed, `${by} via node ${options.nodeId}`);
      // This node applies it now; the others on the NOTIFY.
      await options.settings.refresh();
      return saved;
    });
  };
}
