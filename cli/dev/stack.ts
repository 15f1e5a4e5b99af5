// The three roles of `svc dev` in this one process: relay, orchestrator, one agent.
//
// Why one process and not three children: one embedded PostgreSQL serves both the relay's and
// the orchestrator's databases (the embedded server is shared within a process and stops with
// its last user), Node and the modules load once (the cold start is dominated by initdb and
// module loading), and Ctrl-C has one owner that stops the parts in order (agent → orchestrator
// → relay → database). The roles keep their real composition: the same `startRelay`,
// `startOrchestrator` with the built-in plugins and subsystems, and `startAgent` with the agent's
// sandbox plugins that the separate programs use, each with its own environment; only their
// logs go to one file instead of three terminals. Step runners still run as child processes
// inside the agent's sandbox, as in production.
import { createServer } from 'node:net';
import { startTracing } from '../../core/tracing/index.ts';
import { platform } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { startAgent, type RunningAgent } from '../../agent/agent.ts';
import { parseAgentEnv, passEnvFromShell, resolveAgentId } from '../../agent/env.ts';
import { createPluginHost, type PluginHost } from '../../core/plugins/index.ts';
import type { SandboxExtensionPoint } from '../../core/extension-points/sandbox.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE, startOrchestrator, type Orchestrator } from '../../kernel/orchestrator/app.ts';
import { checkAgentToken, createAgentToken } from '../../kernel/orchestrator/dispatch/tokens.ts';
import { dataDirMasterKey } from '../../kernel/orchestrator/master-key-file.ts';
import { createSource, getSourceRow, secretAd, webhookUrl } from '../../kernel/orchestrator/sources/store.ts';
import { seal } from '../../kernel/services/crypto/sealing.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../kernel/orchestrator/subsystems.ts';
import { RELAY_EMBEDDED_DATABASE, migrateRelay, orgForToken, provisionOrg, rotateOrgToken, startRelay, type Relay } from '../../kernel/relay/index.ts';
import { createPat, patForToken } from '../../kernel/relay/pats/index.ts';
import { migrate, resolveDatabase, sql, type ResolvedDatabase } from '../../kernel/services/db/index.ts';
import { ConflictError, UnavailableError } from '../../core/errors.ts';
import { orchestratorPlugins } from '../../plugins/builtin.ts';
import { agentPlugins } from '../../plugins/sandboxes/index.ts';
import type { Reporter } from './reporter.ts';
import { readState, writeCliEnv, writeState, type DevPaths } from './state.ts';

export const DEV_ORG = 'dev';
export const DEFAULT_ORCHESTRATOR_PORT = 7700;
export const DEFAULT_RELAY_PORT = 7800;
/** Labels of the dev agent; the example's jobs run on `local`. */
export function devAgentLabels(): string[] {
  return ['local', platform()];
}

export interface StackOptions {
  paths: DevPaths;
  /** undefined: the default if free, else any free port; 0: any free port; n: exactly n. */
  orchestratorPort: number | undefined;
  relayPort: number | undefined;
  logger: Logger;
  reporter: Reporter;
  /** The environment the roles inherit, without any SVC_* variable. */
  baseEnv: NodeJS.ProcessEnv;
  /** The git source for the developer's repository (registered once, reused after). */
  source: { repository: string; remoteUrl: string; repoKey: string; secret: string };
}

export interface DevStack {
  relay: Relay;
  orchestrator: Orchestrator;
  agent: RunningAgent;
  agentLabels: string[];
  /** The orchestrator's database (svc dev's own small pool). */
  orchDb: ResolvedDatabase;
  relayDb: ResolvedDatabase;
  platformToken: string;
  issuer: string;
  sourceId: string;
  /** Where the hook posts: the relay's webhook URL for the dev org's git sources. */
  webhookUrl: string;
  /** Resolves when the relay routes this source (the orchestrator announced it). */
  waitForRoute(sourceId: string, timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function anyFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

/** The port to use: exact when asked (and free), else the default when free, else any free one. */
export async function choosePort(requested: number | undefined, fallback: number, flag: string): Promise<number> {
  if (requested === 0) return anyFreePort();
  if (requested !== undefined) {
    if (!(await portFree(requested))) throw new ConflictError('SVC_ERR_DEV_PORT_IN_USE', `port ${requested} (${flag}) is in use on 127.0.0.1: pass another ${flag}, or ${flag} 0 for any free port`);
    return requested;
  }
  return (await portFree(fallback)) ? fallback : anyFreePort();
}

async function sleep(ms: number): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

export async function startDevStack(options: StackOptions): Promise<DevStack> {
  const { paths, logger, reporter } = options;
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) {
      try {
        await stop();
      } catch (error) {
        logger.warn({ err: error }, 'a svc dev stop step failed');
      }
    }
    stops.length = 0;
  };

  try {
    // Ports first: a taken port is refused before anything is created.
    const relayPort = await choosePort(options.relayPort, DEFAULT_RELAY_PORT, '--relay-port');
    const orchestratorPort = await choosePort(options.orchestratorPort, DEFAULT_ORCHESTRATOR_PORT, '--port');
    if (relayPort === orchestratorPort) throw new ConflictError('SVC_ERR_DEV_PORT_IN_USE', `--port and --relay-port are both ${relayPort}: pick two ports`);
    // One embedded server, two databases. The relay's database is prepared here too, so its
    // org can be provisioned before anything listens.
    const [relayDb, orchDb] = await reporter.task('database', `starting PostgreSQL (embedded, ${join(paths.dataDir, 'postgres')})`, async () => {
      const relayDb = await resolveDatabase({ dataDir: paths.dataDir, database: RELAY_EMBEDDED_DATABASE, logger, pool: { maxPoolSize: 3 } });
      stops.push(() => relayDb.close());
      const orchDb = await resolveDatabase({ dataDir: paths.dataDir, logger, pool: { maxPoolSize: 3 } });
      stops.push(() => orchDb.close());
      await migrateRelay(relayDb.pool, logger);
      await migrate(orchDb.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger });
      return [relayDb, orchDb] as const;
    });

    const state = await readState(paths, DEV_ORG);
    const orgId = state.orgId;
    // The org and its platform token: reused while the relay still knows it; else minted again.
    let platformToken = state.platformToken;
    if (platformToken === undefined || (await orgForToken(relayDb.pool, platformToken)) !== orgId) {
      try {
        platformToken = (await provisionOrg(relayDb.pool, orgId)).token;
      } catch (error) {
        if (!(error instanceof ConflictError)) throw error;
        platformToken = (await rotateOrgToken(relayDb.pool, orgId)).token;
      }
      state.platformToken = platformToken;
      await writeState(paths, state);
    }
    // A personal access token for `svc runs show/logs` through the relay, kept the same way.
    let pat = state.pat;
    if (pat === undefined || (await patForToken(relayDb.pool, pat))?.orgId !== orgId) {
      pat = (await createPat(relayDb.pool, orgId, 'developer', 'svc dev')).token;
      state.pat = pat;
      await writeState(paths, state);
    }
    // The agent's token, kept the same way.
    let agentToken = state.agentToken;
    if (agentToken === undefined || !(await checkAgentToken(orchDb.pool, agentToken)).ok) {
      agentToken = (await createAgentToken(orchDb.pool, { description: 'svc dev agent' })).token;
      state.agentToken = agentToken;
      await writeState(paths, state);
    }

    const ensureSource = async ({ repository, remoteUrl, repoKey, secret }: StackOptions['source']): Promise<string> => {
      const current = await readState(paths, DEV_ORG);
      const known = current.sources[repoKey];
      let sourceId = known;
      const row = known === undefined ? null : await getSourceRow(orchDb.pool, known);
      const settings = { remoteUrl, repository };
      if (row === null) {
        const masterKey = await dataDirMasterKey(paths.dataDir, logger);
        const created = await createSource(orchDb.pool, masterKey, { orgId, providerKind: 'git', name: `svc dev: ${repository}`, settings, secret });
        sourceId = created.source.id;
        current.sources[repoKey] = sourceId;
        await writeState(paths, current);
      } else {
        // Sealed again at every start: the hook signs with hook.secret, which may have been
        // regenerated; and the data directory may have moved (the bare repository with it).
        const masterKey = await dataDirMasterKey(paths.dataDir, logger);
        await orchDb.pool.query(sql.unsafe`
          update sources set settings = settings || ${sql.jsonb(settings)}, secret_sealed = ${seal(masterKey, secret, secretAd(row.id))},
            previous_secret_sealed = null, updated_at = now()
          where id = ${row.id}`);
      }
      return sourceId as string;
    };

    const sourceId = await ensureSource(options.source);

    const relay = await reporter.task('relay', 'starting the relay', () =>
      startRelay({
        env: {
          ...options.baseEnv,
          SVC_DATA_DIR: paths.dataDir,
          SVC_RELAY_DATABASE_URL: relayDb.url,
          SVC_RELAY_PORT: String(relayPort),
          SVC_RELAY_HOST: '127.0.0.1',
        },
        logger: logger.child({ role: 'relay' }),
        // A laptop pushes seldom; replay buffered deliveries quickly after a restart.
        replayIntervalMs: 1_000,
      }),
    );
    stops.push(() => relay.stop());
    await writeCliEnv(paths, { platformUrl: relay.url, token: pat, org: orgId });

    const issuer = `http://127.0.0.1:${orchestratorPort}`;
    const orchestrator = await reporter.task('orchestrator', 'starting the orchestrator', () =>
      startOrchestrator({
        env: {
          ...options.baseEnv,
          SVC_DATA_DIR: paths.dataDir,
          SVC_DATABASE_URL: orchDb.url,
          SVC_SERVER_PORT: String(orchestratorPort),
          SVC_SERVER_HOST: '127.0.0.1',
          SVC_PLATFORM_URL: relay.url,
          SVC_PLATFORM_TOKEN: platformToken,
          SVC_ORCHESTRATOR_PROVENANCE_ISSUER: issuer,
          SVC_INSTANCE_ID: 'svc-dev',
        },
        plugins: orchestratorPlugins,
        subsystems: ORCHESTRATOR_SUBSYSTEMS,
        logger: logger.child({ role: 'orchestrator' }),
      }),
    );
    stops.push(() => orchestrator.stop());

    const agentLabels = devAgentLabels();
    const { agent, host } = await reporter.task('agent', 'starting the agent and waiting for it to register', async () => {
      const settings = parseAgentEnv({
        // The user's proxy and CA variables reach the jobs as from any agent (docs/agent.md).
        ...passEnvFromShell(process.env),
        SVC_ORCHESTRATOR_URL: orchestrator.url,
        SVC_AGENT_TOKEN: agentToken,
        SVC_AGENT_LABELS: agentLabels.join(','),
        SVC_AGENT_WORK_DIR: paths.agentWorkDir,
        SVC_AGENT_SANDBOX: 'process',
      });
      const agentLogger = logger.child({ role: 'agent' });
      const selection = agentPlugins(settings);
      const host: PluginHost = createPluginHost({ config: selection.config, logger: agentLogger });
      await host.signInAll({ builtIns: selection.builtIns });
      stops.push(() => host.close());
      const sandboxes = new Map<string, SandboxExtensionPoint>(host.list().filter((p) => p.kind === 'sandbox').map((p) => [p.id, host.get('sandbox', p.id)]));
      const agentId = await resolveAgentId(settings);
      // The shell's OTEL_* reach the agent as they reach the relay and orchestrator (docs/tracing.md).
      const agent = await startAgent({ settings, agentId, logger: agentLogger, sandboxes, tracing: await startTracing(options.baseEnv, 'svc-agent') });
      return { agent, host };
    });
    void host;
    stops.push(() => agent.stop());

    const waitForRoute = async (sourceId: string, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const row = await relayDb.pool.maybeOne(sql.unsafe`select 1 as one from relay_sources where org_id = ${orgId} and routing_key = ${`git:${sourceId}`}`);
        if (row !== null) return;
        await sleep(200);
      }
      throw new UnavailableError('SVC_ERR_DEV_ROUTE', `the relay did not learn source ${sourceId} within ${timeoutMs / 1000}s; see the log file ${paths.logFile}`);
    };

    const hookUrl = webhookUrl(relay.url, { orgId, providerKind: 'git', sourceId: null });
    return { relay, orchestrator, agent, agentLabels, orchDb, relayDb, platformToken, issuer, sourceId, webhookUrl: hookUrl, waitForRoute, stop: stopAll };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
