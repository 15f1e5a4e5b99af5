// Operator routes for shared config (docs/config.md): read the running shared config and the
// version history, write a version, roll back, reload, export. Bearer admin token with scope
// config.read (reads, redacted export) or config.write (writes, reload, plain export), checked
// in onRequest by the one admin authentication (admin-auth/), so 401/403 come before 400.
import type { FastifyInstance } from 'fastify';
import type { Static } from 'typebox';
import {
  ConfigVersionParams,
  ConfigVersionsQuery,
  ExportConfigQuery,
  PutConfigBody,
  ReloadConfigQuery,
  RollbackConfigBody,
  type ConfigVersionDetail,
  type RollbackConfigBody as RollbackBody,
  type EffectiveSharedConfig,
} from '../../../schemas/http/config.ts';
import { NotFoundError } from '../../../core/errors.ts';
import { redactConfig } from '../../services/config/index.ts';
import type { MasterKeys } from '../../services/crypto/master-keys.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { AdminAuth } from '../admin-auth/index.ts';
import { adminActor, audited } from '../audit/audited.ts';
import { SHARED_CONFIG_PATHS, isUnder, sharedFieldsOf } from './fields.ts';
import type { ConfigHolder } from './holder.ts';
import type { ConfigReloader } from './reload.ts';
import { latestConfigVersion, listConfigVersions, readConfigVersion, rollbackConfigVersion, writeConfigVersion } from './versions.ts';

export interface ConfigRoutesOptions {
  pool: DatabasePool;
  masterKeys: MasterKeys;
  holder: ConfigHolder;
  reloader: ConfigReloader;
  auth: AdminAuth;
}

export function configRoutes(options: ConfigRoutesOptions) {
  const { pool, masterKeys, holder, reloader } = options;
  const keys = masterKeys.all;
  const read = options.auth.requireScope('config.read');
  const write = options.auth.requireScope('config.write');

  return async function routes(app: FastifyInstance): Promise<void> {
    app.get('/admin/config', { onRequest: read }, async (): Promise<EffectiveSharedConfig> => {
      const snapshot = holder.snapshot;
      const localOverrides = [...snapshot.sources]
        .filter(([path, layer]) => (layer.startsWith('file ') || layer.startsWith('env ')) && SHARED_CONFIG_PATHS.some((shared) => isUnder(path, shared)))
        .map(([path]) => path)
        .sort();
      return { version: snapshot.version, config: redactConfig(sharedFieldsOf(snapshot.config)), localOverrides, pending: [...snapshot.pending] };
    });

    app.get('/admin/config/versions', { onRequest: read, schema: { querystring: ConfigVersionsQuery } }, async (request) => {
      const query = request.query as Static<typeof ConfigVersionsQuery>;
      return { versions: await listConfigVersions(pool, query.limit ?? 100) };
    });

    app.get('/admin/config/versions/:version', { onRequest: read, schema: { params: ConfigVersionParams } }, async (request): Promise<ConfigVersionDetail> => {
      const { version } = request.params as Static<typeof ConfigVersionParams>;
      const found = await readConfigVersion(pool, keys, version);
      if (found === undefined) throw new NotFoundError('SVC_ERR_CONFIG_VERSION_NOT_FOUND', `there is no config version ${version}; list them with "svc-admin config history"`);
      return { ...found.summary, config: redactConfig(found.config) };
    });

    app.put('/admin/config', { onRequest: write, schema: { body: PutConfigBody } }, async (request, reply) => {
      const body = request.body as PutConfigBody;
      const written = await audited(pool, adminActor(options.auth.principalOf(request)), 'admin-api', { action: 'config.set', target: 'config', detail: (v) => `version ${v.version}` }, () =>
        writeConfigVersion(pool, masterKeys.current as Buffer, { config: body.config, createdBy: 'api:set', description: body.description }),
      );
      reply.code(201);
      return written;
    });

    app.post('/admin/config/rollback', { onRequest: write, schema: { body: RollbackConfigBody } }, async (request, reply) => {
      const body = request.body as RollbackBody;
      const written = await audited(pool, adminActor(options.auth.principalOf(request)), 'admin-api', { action: 'config.rollback', target: `config:version ${body.version}`, detail: (v) => `new version ${v.version}` }, () =>
        rollbackConfigVersion(pool, keys, body.version, 'api:rollback', body.description),
      );
      reply.code(201);
      return written;
    });

    app.post('/admin/config/reload', { onRequest: write, schema: { querystring: ReloadConfigQuery } }, async (request, reply) => {
      const query = request.query as Static<typeof ReloadConfigQuery>;
      const outcome = await reloader.trigger(query.source ?? 'http');
      reply.code(outcome.success ? 200 : outcome.result === 'failed' ? 422 : 409);
      return outcome;
    });

    // A plain export carries the secrets themselves: it needs config.write; a redacted one config.read.
    // requireScopeBy keeps both scopes visible to the OpenAPI document (openapi/document.ts).
    const exportScope = options.auth.requireScopeBy((request) => {
      const asked = (request.query as { redacted?: unknown } | undefined)?.redacted;
      return asked === 'true' || asked === true ? 'config.read' : 'config.write';
    }, ['config.read', 'config.write']);
    app.get('/admin/config/export', { onRequest: exportScope, schema: { querystring: ExportConfigQuery } }, async (request) => {
      const redacted = (request.query as Static<typeof ExportConfigQuery>).redacted === true;
      const latest = await latestConfigVersion(pool, keys);
      const document = latest === undefined ? sharedFieldsOf(holder.current) : latest.config;
      return { version: latest?.summary.version ?? null, redacted, config: redacted ? redactConfig(document) : document };
    });
  };
}
