// The relay's start sequence: config → logger/metrics → its own database (embedded under
// `<dataDir>/relay` unless SVC_RELAY_DATABASE_URL) and migrations → routing table and buffer
// counters → HTTP (ingest routes, orchestrator WebSocket endpoint) → listen. Stop closes the
// orchestrator sockets first, so deliveries waiting on them fall through to the buffer while the
// database is still open.
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { loadConfig } from '../services/config/index.ts';
import { migrate, resolveDatabase, type DatabasePool } from '../services/db/index.ts';
import { createHttpServer, listen } from '../services/http/index.ts';
import { createLogger } from '../../core/logging.ts';
import { createMetrics, type SvcMetrics } from '../services/metrics.ts';
import { BufferStore } from './buffer-store.ts';
import { createDashboard } from './dashboard/index.ts';
import { DedupWindow } from './dedup-window.ts';
import { registerDeviceApiRoutes, registerDevicePage } from './device/index.ts';
import { registerIngestRoutes } from './ingest-routes.ts';
import { startTracing } from '../../core/tracing/index.ts';
import { OrchestratorEndpoint } from './orchestrator-endpoint.ts';
import { OrchestratorPool, type AckTimer } from './orchestrator-pool.ts';
import { registerPatRoutes } from './pats/routes.ts';
import { relayMetrics } from './relay-metrics.ts';
import { Replayer } from './replay.ts';
import { NegativeCache, RoutingTable } from './routing-table.ts';
import { acceptForms, registerSessionRoutes, registerStylesheet } from './sessions/index.ts';
import { createSso, startSso } from './sso/index.ts';
import { registerRefreshRoute } from './sso/refresh.ts';
import { registerSsoRoutes } from './sso/routes.ts';
import { registerPeopleRoutes } from './people/routes.ts';

export const RELAY_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
export const RELAY_MIGRATIONS_TABLE = 'relay_migrations';
/** Database name on an embedded server (kept apart from the orchestrator's `svc`). */
export const RELAY_EMBEDDED_DATABASE = 'svc_relay';

/** spec Limits: per-candidate orchestrator ack ceiling. */
export const ACK_TIMEOUT_MS = 5_000;
/** spec Limits: total relay budget per inbound webhook, from arrival. */
export const TOTAL_BUDGET_MS = 8_000;
/** spec Limits: relay dedup on identical body for the same source. */
export const DEDUP_WINDOW_MS = 60_000;
export const SEND_BUFFER_WATERMARK_BYTES = 8 * 1024 * 1024;

export interface StartRelayOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  logger?: Logger;
  /** Tuning, mostly for tests; defaults are the spec's values. */
  ackTimeoutMs?: number;
  /** The timer of the per-candidate ack ceiling (tests: see `AckTimer`). */
  ackTimer?: AckTimer;
  totalBudgetMs?: number;
  dedupWindowMs?: number;
  /** The duplicate window's clock (ms, monotonic); tests move it past the window (DedupWindowOptions.now). */
  dedupNow?: () => number;
  negativeCacheTtlMs?: number;
  watermarkBytes?: number;
  heartbeatMs?: number;
  helloTimeoutMs?: number;
  maxInvalidFrames?: number;
  replayIntervalMs?: number;
  sweepIntervalMs?: number;
  shedRetryAfterSeconds?: number;
  /** How long a dashboard/CLI request waits for the orchestrator's answer. */
  dashboardTimeoutMs?: number;
  /** Device login: least seconds between polls (RFC 8628 `interval`) and code lifetime. */
  deviceIntervalSeconds?: number;
  deviceCodeTtlSeconds?: number;
}

export interface Relay {
  /** `http://host:port` the relay listens on. */
  readonly url: string;
  readonly metrics: SvcMetrics;
  readonly db: DatabasePool;
  /** The relay's JSON logger (its stop is logged through it: core/lifecycle.ts). */
  readonly logger: Logger;
  /** Every route the relay serves, as `<METHOD> <url pattern>` (the route registry; people/access.ts covers each). */
  readonly routes: readonly string[];
  /** Drops expired buffered deliveries now (it also runs on a timer); returns how many. */
  sweepExpired(): Promise<number>;
  stop(): Promise<void>;
}

export async function migrateRelay(pool: DatabasePool, logger: Logger): Promise<void> {
  await migrate(pool, { dir: RELAY_MIGRATIONS_DIR, table: RELAY_MIGRATIONS_TABLE, logger });
}

export async function startRelay(options: StartRelayOptions = {}): Promise<Relay> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const { config } = await loadConfig({ env, cwd });
  const logger = options.logger ?? createLogger({ level: config.server.logLevel, name: 'svc-relay' });
  // A bad provider entry stops the start before anything listens (docs/sso.md).
  const sso = createSso(config.relay.sso, logger);
  const metrics = createMetrics();
  const rm = relayMetrics(metrics);
  // OTEL_* (docs/tracing.md): off unless an OTLP endpoint is named; bad values stop the start.
  const tracing = await startTracing(env, 'svc-relay');
  const ackTimeoutMs = options.ackTimeoutMs ?? ACK_TIMEOUT_MS;
  const totalBudgetMs = options.totalBudgetMs ?? TOTAL_BUDGET_MS;

  const stops: Array<() => Promise<void> | void> = [];
  const stopAll = async (): Promise<void> => {
    for (const fn of stops.reverse()) {
      try {
        await fn();
      } catch (error) {
        logger.warn({ err: error }, 'a relay stop step failed');
      }
    }
    stops.length = 0;
  };

  // Pushed first, so it runs last: spans of deliveries finishing during the stop are exported.
  stops.push(() => tracing.shutdown());
  try {
    const database = await resolveDatabase({
      url: config.relay.databaseUrl,
      // A sub directory, so the relay can share SVC_DATA_DIR with an orchestrator in another process.
      dataDir: join(resolve(cwd, config.dataDir), 'relay'),
      database: RELAY_EMBEDDED_DATABASE,
      logger,
      // Its run-index writes and dashboard reads repeat: named, parsed and planned once per connection.
      pool: { namedStatements: 'repeated' },
    });
    stops.push(() => database.close());
    await migrateRelay(database.pool, logger);
    if (sso !== undefined) await startSso(sso, database.pool, logger);

    const routing = new RoutingTable(database.pool);
    await routing.load();
    const buffer = new BufferStore(database.pool, {
      maxItems: config.relay.bufferMaxItems,
      maxBytes: config.relay.bufferMaxBytes,
      ttlMs: config.relay.bufferTtlMs,
    });
    buffer.onChange = (total) => rm.buffered.set(total);
    await buffer.load();

    const negativeCache = new NegativeCache({ ttlMs: options.negativeCacheTtlMs ?? 60_000 });
    const pool = new OrchestratorPool({
      watermarkBytes: options.watermarkBytes ?? SEND_BUFFER_WATERMARK_BYTES,
      metrics: rm,
      logger,
      ...(options.ackTimer !== undefined ? { ackTimer: options.ackTimer } : {}),
    });
    const replayer = new Replayer({
      buffer,
      pool,
      metrics: rm,
      logger,
      ackTimeoutMs,
      intervalMs: options.replayIntervalMs ?? 5_000,
      sweepIntervalMs: options.sweepIntervalMs ?? 60_000,
    });
    let replayStopped: Promise<void> | undefined;
    stops.push(() => (replayStopped ??= replayer.stop()));

    // Dashboard actions and `svc runs` routes, forwarded to an orchestrator (kernel/relay/dashboard).
    const dashboard = createDashboard({
      db: database.pool,
      pool,
      logger,
      ...(options.dashboardTimeoutMs !== undefined ? { timeoutMs: options.dashboardTimeoutMs } : {}),
      // The people directory names a person's provider by kind (`github`: a forge login).
      providerKind: (id) => sso?.providers.get(id)?.kind ?? id,
    });
    stops.push(() => dashboard.close());
    const endpoint = new OrchestratorEndpoint({
      db: database.pool,
      pool,
      routing,
      negativeCache,
      buffer,
      metrics: rm,
      socketMetrics: metrics,
      logger,
      heartbeatMs: options.heartbeatMs ?? 15_000,
      helloTimeoutMs: options.helloTimeoutMs ?? 10_000,
      maxInvalidFrames: options.maxInvalidFrames ?? 20,
      onReady: (connection) => {
        replayer.kick(connection.orgId);
        dashboard.connected(connection.orgId);
      },
      onResponse: (connection, message) => dashboard.handleResponse(connection, message),
    });

    const http = createHttpServer({ logger, metrics });
    const routes: string[] = [];
    http.addHook('onRoute', (route) => {
      for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push(`${method} ${route.url}`);
    });
    let stopping = false;
    // While stopping, answers close their connection so kept-alive clients do not hold the stop up.
    http.addHook('onSend', async (_request, reply) => {
      if (stopping) void reply.header('connection', 'close');
    });
    http.server.on('upgrade', (request, socket, head) => endpoint.handleUpgrade(request, socket, head));
    registerIngestRoutes(http, {
      routing,
      negativeCache,
      pool,
      buffer,
      dedup: new DedupWindow({
        windowMs: options.dedupWindowMs ?? DEDUP_WINDOW_MS,
        pendingMs: totalBudgetMs + 60_000,
        ...(options.dedupNow !== undefined ? { now: options.dedupNow } : {}),
      }),
      metrics: rm,
      logger,
      rateLimitPerOrgRpm: config.relay.rateLimitPerOrgRpm,
      rateLimitPerIpRpm: config.relay.rateLimitPerIpRpm,
      ackTimeoutMs,
      totalBudgetMs,
      shedRetryAfterSeconds: options.shedRetryAfterSeconds ?? 10,
      tracing,
    });
    dashboard.register(http); // dashboard actions + CLI run routes (kernel/relay/dashboard)
    // Browser sign-in, device login and self-service tokens; forms are parsed in this scope only.
    void http.register(async (scope) => {
      acceptForms(scope);
      registerStylesheet(scope);
      registerSessionRoutes(scope, { db: database.pool, logger, providers: sso === undefined ? [] : [...sso.providers.values()].map((p) => ({ id: p.id, displayName: p.displayName })) });
      if (sso !== undefined) registerSsoRoutes(scope, { db: database.pool, logger, sso });
      registerRefreshRoute(scope, { db: database.pool, logger, sso });
      registerPeopleRoutes(scope, { db: database.pool, logger });
      registerDevicePage(scope, { db: database.pool, logger });
      registerDeviceApiRoutes(scope, {
        db: database.pool,
        logger,
        ...(options.deviceIntervalSeconds !== undefined ? { intervalSeconds: options.deviceIntervalSeconds } : {}),
        ...(options.deviceCodeTtlSeconds !== undefined ? { ttlSeconds: options.deviceCodeTtlSeconds } : {}),
        ...(sso !== undefined ? { personTokenTtlSeconds: sso.tokenTtlSeconds } : {}),
      });
      registerPatRoutes(scope, { db: database.pool, logger });
    });
    // Runs before the database closes and after the sockets: in-flight webhooks still get buffered.
    stops.push(async () => {
      // In-flight webhooks finish within the total budget; past it, cut what is left.
      const force = setTimeout(() => http.server.closeAllConnections(), totalBudgetMs + 2_000);
      try {
        await http.close();
      } finally {
        clearTimeout(force);
      }
    });
    stops.push(async () => {
      stopping = true;
      replayStopped ??= replayer.stop();
      await endpoint.close();
    });

    const bound = await listen(http, { port: config.relay.port, host: config.relay.host });
    const shownHost = bound.host === '0.0.0.0' || bound.host === '::' ? '127.0.0.1' : bound.host.includes(':') ? `[${bound.host}]` : bound.host;
    const url = `http://${shownHost}:${bound.port}`;
    logger.info({ url, buffered: buffer.total }, 'relay listening');
    return { url, metrics, db: database.pool, logger, routes, sweepExpired: () => replayer.sweep(), stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
