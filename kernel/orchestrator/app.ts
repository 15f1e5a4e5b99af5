// The orchestrator's start sequence: subsystem graph check → config → logger/metrics → master key
// → database and migrations → sealed stores healed and checked → plugin sign-in → HTTP →
// subsystems (in graph order) → listen. The kernel never names a concrete plugin: the composition
// root passes built-ins and their config slices in.
import { createHmac } from 'node:crypto';
import { createServer } from 'node:net';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { SvcConfig } from '../../schemas/config.ts';
import { createPluginHost, type SvcPlugin } from '../../core/plugins/index.ts';
import { loadConfig } from '../services/config/index.ts';
import { loadMasterKeys, type MasterKeys } from '../services/crypto/master-keys.ts';
import { migrate, resolveDatabase } from '../services/db/index.ts';
import { createHttpServer, listen, startMetricsListener } from '../services/http/index.ts';
import { createLogger } from '../../core/logging.ts';
import { PROCESS_LOG_RING } from '../../core/log-ring.ts';
import { createMetrics } from '../services/metrics.ts';
import { orderSubsystems, startSubsystems, type ServiceRef } from '../../core/wiring/index.ts';
import type { OrchestratorContext, Subsystem } from './context.ts';
import type { PluginEnvironment, PluginSelection } from '../../core/plugins/selection.ts';
import { dataDirMasterKey } from './master-key-file.ts';
import { registerOpenApi } from './openapi/document.ts';
import { openConfigHolder } from './config/holder.ts';
import { healSealedStores } from './sealed-stores.ts';
import { registerSpecMetrics } from './spec-metrics.ts';
import { startTracing } from '../../core/tracing/index.ts';

import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from './database.ts';

export { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from './database.ts';

export type { PluginEnvironment, PluginSelection } from '../../core/plugins/selection.ts';

export interface StartOrchestratorOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  plugins: (env: PluginEnvironment) => PluginSelection;
  subsystems?: readonly Subsystem[];
  logger?: Logger;
}

export interface Orchestrator {
  readonly url: string;
  /** The separate metrics listener (`metrics.port`), when configured. */
  readonly metricsUrl?: string;
  readonly ctx: OrchestratorContext;
  /** Ids of the started subsystems, in start order. */
  readonly subsystems: readonly string[];
  /** A service a started subsystem provides (service-refs.ts); an SvcError naming the ref otherwise. */
  get<T>(ref: ServiceRef<T>): T;
  stop(): Promise<void>;
}

async function freePort(host: string): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * `{base_url}`: `server.publicUrl` when set; else the provenance issuer when its path is where
 * this server's routes live (`server.basePath`); else this server's own address. An issuer whose
 * path a proxy strips needs `server.publicUrl` set to it explicitly.
 */
function defaultPublicUrl(config: SvcConfig, port: number): string {
  if (config.server.publicUrl) return config.server.publicUrl.replace(/\/$/, '');
  const basePath = (config.server.basePath ?? '').replace(/\/$/, '');
  const issuer = config.orchestrator.provenanceIssuer?.replace(/\/$/, '');
  if (issuer && new URL(issuer).pathname.replace(/\/$/, '') === basePath) return issuer;
  return ownUrl(config, port);
}

/**
 * This node's own address (not a load balancer's): the listener's host and port. The node URL
 * shows a wildcard bind as this machine's host name, so other nodes can reach it.
 */
function ownUrl(config: SvcConfig, port: number, wildcardHost = '127.0.0.1'): string {
  const basePath = (config.server.basePath ?? '').replace(/\/$/, '');
  const host = config.server.host === '0.0.0.0' || config.server.host === '::' ? wildcardHost : config.server.host;
  const shown = host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}${basePath}`;
}

async function masterKeysFor(config: SvcConfig, dataDir: string, logger: Logger): Promise<MasterKeys> {
  const keys = await loadMasterKeys(config.secrets);
  if (keys.current) return keys;
  const key = await dataDirMasterKey(dataDir, logger);
  return { current: key, all: [{ name: 'current', key }] };
}

export async function startOrchestrator(options: StartOrchestratorOptions): Promise<Orchestrator> {
  // A broken graph (missing need, ref provided twice, cycle) refuses before anything opens.
  orderSubsystems(options.subsystems ?? []);
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const base = await loadConfig({ env, cwd });
  // Local layers only until the database is open; the shared version is layered in after migrate.
  let config = base.config;
  const logger = options.logger ?? createLogger({ level: config.server.logLevel, name: 'svc-orchestrator', ring: PROCESS_LOG_RING });
  const metrics = createMetrics();
  registerSpecMetrics(metrics);
  // OTEL_* (docs/tracing.md): off unless an OTLP endpoint is named; bad values stop the start.
  const tracing = await startTracing(env, 'svc-orchestrator');
  const dataDir = resolve(cwd, config.dataDir);
  const nodeId = config.instance.id ?? `orch-${hostname()}`;

  const stops: Array<() => Promise<void> | void> = [];
  const stopAll = async (): Promise<void> => {
    for (const fn of stops.reverse()) {
      try {
        await fn();
      } catch (error) {
        logger.warn({ err: error }, 'a stop step failed');
      }
    }
    stops.length = 0;
  };
  // Pushed first, so it runs last: spans of work finishing during the stop are exported.
  stops.push(() => tracing.shutdown());

  try {
    const masterKeys = await masterKeysFor(config, dataDir, logger);
    // Statements that repeat (the periodic passes, per-delivery work off the ingest pool) are
    // named, so PostgreSQL stops parsing and planning them on every run (named-statements.ts).
    const database = await resolveDatabase({ url: config.database.url, dataDir, logger, pool: { namedStatements: 'repeated' } });
    stops.push(() => database.close());
    await migrate(database.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger });
    // Every sealed store before anything opens one: values under SVC_SECRET_KEY_OLD are re-sealed
    // under SVC_SECRET_KEY; a value neither opens stops the boot naming its store and row.
    await healSealedStores(database.pool, masterKeys, logger);
    // The newest shared config version (docs/config.md) joins the layers before plugins sign in.
    const configHolder = await openConfigHolder({ base, env, cwd, pool: database.pool, keys: masterKeys.all, logger });
    config = configHolder.current;

    const port = config.server.port === 0 ? await freePort(config.server.host) : config.server.port;
    const publicUrl = defaultPublicUrl(config, port);
    const nodeUrl = ownUrl(config, port, hostname());
    const current = masterKeys.current as Buffer;
    const pluginEnv: PluginEnvironment = {
      config,
      publicUrl,
      dataDir,
      derivedSecret: (purpose) => createHmac('sha256', current).update(`svc-derived:${purpose}`).digest('base64url'),
    };
    const chosen = options.plugins(pluginEnv);
    const host = createPluginHost({
      baseDir: config.plugins.modules.length > 0 && env['SVC_CONFIG_FILE'] ? resolve(cwd, env['SVC_CONFIG_FILE'], '..') : cwd,
      config: { ...chosen.config, ...config.plugins.config },
      selection: chosen.selection,
      logger,
      metrics: metrics.registry,
    });
    await host.signInAll({ builtIns: chosen.builtIns, modules: config.plugins.modules });
    stops.push(() => host.close());

    // With `metrics.port`, /metrics moves to a listener of its own (below).
    const http = createHttpServer({ logger, metrics, metricsRoute: config.metrics.port === undefined });
    stops.push(() => http.close());
    // Before any route: the OpenAPI generator collects routes as they are added.
    await registerOpenApi(http);

    const ctx: OrchestratorContext = {
      get config() {
        return configHolder.current;
      },
      configHolder,
      logger,
      metrics,
      db: database.pool,
      databaseUrl: database.url,
      host,
      http,
      masterKeys,
      nodeId,
      publicUrl: () => publicUrl,
      nodeUrl: () => nodeUrl,
      tracing,
    };

    // A storage that serves its own pre-signed URLs (filesystem) mounts them here.
    if (host.has('storage', chosen.selection['storage'] ?? '')) {
      const storage = host.get('storage', chosen.selection['storage'] as string);
      if (storage.httpRoutes) await http.register(storage.httpRoutes);
    }

    const started = await startSubsystems(options.subsystems ?? [], ctx, logger);
    stops.push(() => started.stop());

    const bound = await listen(http, { port, host: config.server.host });
    let metricsUrl: string | undefined;
    if (config.metrics.port !== undefined) {
      const listener = await startMetricsListener({ logger, metrics, port: config.metrics.port, host: config.server.host });
      stops.push(() => listener.close());
      metricsUrl = listener.url;
    }
    logger.info({ url: publicUrl, bound: bound.url, metrics: metricsUrl, nodeId, subsystems: started.order }, 'orchestrator listening');
    return { url: publicUrl, ...(metricsUrl === undefined ? {} : { metricsUrl }), ctx, subsystems: started.order, get: (ref) => started.get(ref), stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
