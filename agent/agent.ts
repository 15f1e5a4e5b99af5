// The agent: one connection to the orchestrator, the sandboxes it can run, and its jobs.
// Registration reports the in-flight jobs so a reconnect within the recovery window re-attaches
// them; an ephemeral agent runs one job and ends.
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { SandboxExtensionPoint } from '../core/extension-points/sandbox.ts';
import { KERNEL_VERSION } from '../core/plugins/version.ts';
import { SvcError, UnavailableError, messageOf } from '../core/errors.ts';
import { receivedCode } from '../core/error-codes.ts';
import type { AgentToOrchestrator, JobDispatch, OrchestratorToAgent } from '../schemas/wire/agent.ts';
import type { JobProgress } from '../schemas/wire/runner.ts';
import { PROTOCOL_VERSION } from '../schemas/wire/relay.ts';
import { AgentConnection } from './connection.ts';
import type { AgentSettings } from './env.ts';
import { DispatchedJob, SANDBOX_WIRE_NAMES, runnerSpawnRequest, type SandboxChoice } from './jobs/executor.ts';
import { pathWithNode } from './jobs/restore.ts';
import { WarmRunners } from './jobs/warm-runner.ts';
import { TreeCache } from './jobs/tree-cache.ts';
import { InFlightStore } from './jobs/in-flight.ts';
import { RepoStores } from './jobs/repo-store.ts';
import type { AgentMetricsServer } from './metrics.ts';
import { NO_TELEMETRY } from './telemetry.ts';
import type { Tracing } from '../core/tracing/index.ts';

/** Orchestrator request timeout (spec Limits: the agent's request timeout is 15 seconds). */
export const REQUEST_TIMEOUT_MS = 15_000;
export const AGENT_SDK_VERSION = KERNEL_VERSION;
/** Bounds of the agent's tree caches (least recently used entries go first). */
export const TREE_CACHE_LIMITS = {
  source: { maxEntries: 32, maxBytes: 512 * 1024 * 1024 },
  deps: { maxEntries: 16, maxBytes: 4 * 1024 * 1024 * 1024 },
} as const;
/** Bounds of the repository object stores (docs/agent.md "Repository stores"). */
export const REPO_STORE_LIMITS = { maxStores: 32, maxBytes: 8 * 1024 * 1024 * 1024, maxIdleMs: 7 * 24 * 3600_000, maxPacks: 64 } as const;
/**
 * Sandbox names on the wire (`agent.register.sandboxes`, `job.context.sandbox`) use the spec's
 * vocabulary, which the orchestrator turns into `svc:sandbox:<type>` labels.
 */
export { SANDBOX_WIRE_NAMES };
export const wireSandboxName = (plugin: string): string => SANDBOX_WIRE_NAMES[plugin] ?? plugin;

const here = dirname(fileURLToPath(import.meta.url));
/**
 * The package root (the step runner, sdk and node_modules live under it): one level up from
 * agent/ in the sources, two from dist/agent/ in the compiled tree.
 */
export const PACKAGE_ROOT = import.meta.url.endsWith('.ts') ? dirname(here) : dirname(dirname(here));
export const DEFAULT_RUNNER_PATH = join(here, 'runner', import.meta.url.endsWith('.ts') ? 'main.ts' : 'main.js');

export interface AgentOptions {
  settings: AgentSettings;
  agentId: string;
  logger: Logger;
  /** Sandbox plugins by name (`process`, `container`, `firecracker`). */
  sandboxes: ReadonlyMap<string, SandboxExtensionPoint>;
  runnerPath?: string;
  /**
   * Keep one step runner started ahead of the next job (process sandbox only; default true).
   * See docs/agent.md "Warm spare runner".
   */
  warmRunner?: boolean;
  /** Keep extracted source and dependency trees between jobs (default true). */
  treeCaches?: boolean;
  /** Keep a git object store per repository for checkouts (default true). */
  repoStores?: boolean;
  /** Test hook for reconnect timing. */
  baseReconnectDelayMs?: number;
  /** Test hook: quiet time before a step's "still running" line (default 60 s). */
  quietNoticeMs?: number;
  /** Spans of traced jobs (core/tracing startTracing on OTEL_*, docs/tracing.md); the agent shuts it down when it stops. */
  tracing?: Tracing;
}

export interface AgentEnd {
  /** Exit code for the program: 0 for a clean stop or a finished ephemeral job. */
  code: number;
  error?: SvcError;
}

export interface RunningAgent {
  readonly agentId: string;
  readonly connection: AgentConnection;
  readonly sandboxes: readonly string[];
  /** `http://host:port/metrics` when SVC_AGENT_METRICS_PORT is set. */
  readonly metricsUrl: string | undefined;
  jobs(): ReadonlyMap<string, DispatchedJob>;
  /** Resolves when the agent ends by itself (fatal refusal, ephemeral job done) or after stop(). */
  readonly ended: Promise<AgentEnd>;
  stop(): Promise<void>;
}

export async function startAgent(options: AgentOptions): Promise<RunningAgent> {
  const { settings, logger } = options;
  await mkdir(settings.workDir, { recursive: true });
  const choices = new Map<string, SandboxChoice>();
  for (const [name, sandbox] of options.sandboxes) {
    const availability = await sandbox.available().catch((error: unknown) => ({ available: false as const, missing: name, message: messageOf(error) }));
    if (!availability.available) logger.warn({ sandbox: name, missing: availability.missing }, availability.message);
    choices.set(name, { name, sandbox, availability });
  }
  const primary = choices.get(settings.sandbox);
  if (primary === undefined || !primary.availability.available) {
    const why = primary === undefined ? 'is not installed in this agent' : `cannot run here: ${primary.availability.available ? '' : primary.availability.message}`;
    throw new UnavailableError('SVC_ERR_AGENT_SANDBOX_UNAVAILABLE', `SVC_AGENT_SANDBOX=${settings.sandbox} ${why}`);
  }
  const runnable = [...choices.values()].filter((c) => c.availability.available).map((c) => c.name);
  const unavailable = [...choices.values()].flatMap((c) =>
    c.availability.available ? [] : [{ sandbox: wireSandboxName(c.name), missing: c.availability.missing.slice(0, 200), message: c.availability.message.slice(0, 1000) }],
  );
  const runnerPath = options.runnerPath ?? DEFAULT_RUNNER_PATH;
  // Extracted source and dependency trees between jobs; runners read linked node_modules there.
  const cacheRoot = join(settings.workDir, 'cache');
  const caches =
    options.treeCaches === false
      ? undefined
      : {
          source: new TreeCache({ root: join(cacheRoot, 'source'), ...TREE_CACHE_LIMITS.source }),
          deps: new TreeCache({ root: join(cacheRoot, 'deps'), ...TREE_CACHE_LIMITS.deps }),
        };
  // A job's `.git` borrows the store's objects (alternates): the stores must be readable in its sandbox.
  const repos = options.repoStores === false ? undefined : new RepoStores({ root: join(settings.workDir, 'git'), logger, ...REPO_STORE_LIMITS });
  const readPaths = [process.execPath, PACKAGE_ROOT, ...(caches === undefined ? [] : [cacheRoot]), ...(repos === undefined ? [] : [repos.root])];
  // Node's compile cache for step runners, kept across jobs (Node keys entries by file and content).
  const compileCacheDir = join(settings.workDir, 'runner-cache');
  await mkdir(compileCacheDir, { recursive: true });
  await mkdir(join(settings.workDir, 'jobs'), { recursive: true });
  if (caches !== undefined) await mkdir(cacheRoot, { recursive: true });
  if (repos !== undefined) await mkdir(repos.root, { recursive: true });
  const warm =
    options.warmRunner !== false && settings.sandbox === 'process'
      ? new WarmRunners({
          logger,
          slotsRoot: join(settings.workDir, 'slots'),
          sandbox: primary.sandbox,
          spawn: { request: (workspace) => runnerSpawnRequest({ runnerPath, readPaths, compileCacheDir, passedEnv: settings.passedEnv }, workspace) },
          oneShot: settings.ephemeral,
          ...(runnerPath === DEFAULT_RUNNER_PATH ? { warmUp: { runnerPath, env: { PATH: pathWithNode(), HOME: settings.workDir, LANG: 'C.UTF-8', NODE_COMPILE_CACHE: compileCacheDir } } } : {}),
        })
      : undefined;

  // Opt-in (SVC_AGENT_METRICS_PORT): prom-client is loaded only then, and before any job so the
  // process metrics (GC, event-loop delay) cover the whole run.
  let metrics: AgentMetricsServer | undefined;
  if (settings.metrics !== undefined) {
    const { startAgentMetrics } = await import('./metrics.ts');
    const { host, port } = settings.metrics;
    metrics = await startAgentMetrics({ host, port, logger }).catch((error: unknown) => {
      throw new UnavailableError('SVC_ERR_AGENT_METRICS_LISTEN', `SVC_AGENT_METRICS_PORT: cannot listen on ${host}:${port}: ${messageOf(error)}`);
    });
  }
  const telemetry = metrics?.telemetry ?? NO_TELEMETRY;

  const jobs = new Map<string, DispatchedJob>();
  // A static agent keeps each running job's dispatch under <workDir>/in-flight/, sealed under its
  // token (jobs/in-flight.ts), so that after a crash or SIGKILL the restarted agent, same id,
  // reports them at registration and resumes them after their last finished step (the step
  // checkpoints beside each record; docs/agent.md "When an agent restarts mid-job"). The runner
  // child dies with the old agent (IPC disconnect).
  const inFlight = new InFlightStore(settings.workDir, options.agentId, settings.token);
  if (!settings.ephemeral && !inFlight.sealed) logger.warn({ dir: inFlight.dir }, 'no agent token: in-flight job records (which hold released secrets) are kept unsealed, readable by this user only');
  const resumable = settings.ephemeral ? new Map<string, JobDispatch>() : await inFlight.load(logger);
  const pending = new Map<string, { resolve: (m: OrchestratorToAgent) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  let jobsTaken = 0;
  let endResolve!: (end: AgentEnd) => void;
  const ended = new Promise<AgentEnd>((resolve) => (endResolve = resolve));
  let stopping = false;

  const connection: AgentConnection = new AgentConnection({
    connectUrl: settings.connectUrl,
    token: settings.token,
    logger,
    maxReconnectDelayMs: settings.maxReconnectDelayMs,
    ...(options.baseReconnectDelayMs === undefined ? {} : { baseReconnectDelayMs: options.baseReconnectDelayMs }),
    register: () => ({
      type: 'agent.register',
      protocolVersion: PROTOCOL_VERSION,
      agentId: options.agentId,
      labels: settings.labels,
      os: platform(),
      arch: arch(),
      ephemeral: settings.ephemeral,
      sandboxes: runnable.map(wireSandboxName),
      // Why an installed sandbox is not offered: the orchestrator names it to a job that needs it.
      ...(unavailable.length === 0 ? {} : { unavailableSandboxes: unavailable }),
      sdkVersion: AGENT_SDK_VERSION,
      inFlightJobs: [
        ...[...jobs.values()].filter((j) => j.status === 'running').map((j) => ({ jobId: j.jobId, status: 'running' as const })),
        ...[...resumable.keys()].map((jobId) => ({ jobId, status: 'running' as const })),
      ],
    }),
    onMessage: (message) => onMessage(message),
  });
  const send = (message: AgentToOrchestrator) => connection.send(message);

  const request = (message: AgentToOrchestrator & { requestId: string }): Promise<OrchestratorToAgent> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(message.requestId);
        reject(new UnavailableError('SVC_ERR_AGENT_REQUEST_TIMEOUT', `the orchestrator did not answer ${message.type} within ${REQUEST_TIMEOUT_MS / 1000}s`));
      }, REQUEST_TIMEOUT_MS);
      pending.set(message.requestId, { resolve, reject, timer });
      send(message);
    });

  /** A resumed job's log seqs start here, above the old process's, so its lines are not dropped as resends. */
  const RESUMED_SEQ_BASE = 1_000_000;
  const runJob = (dispatch: JobDispatch, resumed = false) => {
    if (jobs.has(dispatch.jobId)) {
      logger.info({ jobId: dispatch.jobId }, 'job already running here; dispatch ignored');
      return;
    }
    if (stopping || (settings.ephemeral && jobsTaken > 0)) {
      logger.warn({ jobId: dispatch.jobId }, 'refusing a dispatch: this agent takes no more jobs');
      send({ type: 'job.status', jobId: dispatch.jobId, status: 'failed', steps: [], reason: 'the agent was stopping or had already run its one ephemeral job; dispatch again' });
      return;
    }
    jobsTaken++;
    logger.info({ jobId: dispatch.jobId, runId: dispatch.runId, workflow: dispatch.jobConfig.workflow, job: dispatch.jobConfig.job }, 'job dispatched');
    const execution = new DispatchedJob(dispatch, {
      logger,
      workRoot: settings.workDir,
      sandboxes: choices,
      defaultSandbox: settings.sandbox,
      runnerPath,
      readPaths,
      compileCacheDir,
      ...(caches === undefined ? {} : { caches }),
      ...(repos === undefined ? {} : { repos }),
      ...(warm === undefined ? {} : { warm: { sandbox: settings.sandbox, runners: warm } }),
      sdkVersion: AGENT_SDK_VERSION,
      telemetry,
      ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
      passedEnv: settings.passedEnv,
      ...(options.quietNoticeMs === undefined ? {} : { quietNoticeMs: options.quietNoticeMs }),
      ...(resumed && inFlight.progressOf(dispatch.jobId) !== undefined ? { resume: inFlight.progressOf(dispatch.jobId)! } : {}),
      ...(settings.ephemeral ? {} : { saveProgress: (progress: JobProgress) => inFlight.saveProgress(dispatch.jobId, progress) }),
      send: resumed ? (m) => send(m.type === 'log.chunk' ? { ...m, seq: m.seq + RESUMED_SEQ_BASE } : m) : send,
      request,
    });
    jobs.set(dispatch.jobId, execution);
    const saved = settings.ephemeral ? Promise.resolve() : inFlight.save(dispatch).catch((error: unknown) => logger.warn({ err: messageOf(error), jobId: dispatch.jobId }, 'could not record the in-flight job'));
    void execution.done.then(async () => {
      logger.info({ jobId: dispatch.jobId, status: execution.status }, 'job finished');
      telemetry.jobFinished(execution.status);
      jobs.delete(dispatch.jobId);
      await saved;
      await inFlight.remove(dispatch.jobId);
      if (settings.ephemeral && !stopping) {
        await connection.flush();
        await stop();
        endResolve({ code: 0 });
      }
    });
  };

  const onMessage = (message: OrchestratorToAgent) => {
    switch (message.type) {
      case 'agent.registered': {
        // Jobs the previous process held: reported in flight at registration, resumed here.
        const resumed = [...resumable.values()];
        resumable.clear();
        for (const dispatch of resumed) {
          logger.info({ jobId: dispatch.jobId }, 'resuming a job the previous agent process held');
          runJob(dispatch, true);
        }
        return;
      }
      case 'job.dispatch':
        runJob(message);
        return;
      case 'job.cancel': {
        const job = jobs.get(message.jobId);
        if (job === undefined) logger.info({ jobId: message.jobId }, 'cancel for a job this agent does not hold');
        else job.cancel(message.reason, message.force);
        return;
      }
      case 'approval.step.decision':
        // A held step's decision; a job this agent no longer holds needs none.
        jobs.get(message.jobId)?.stepDecision(message.index, message.status, message.reason);
        return;
      default: {
        const requestId = (message as { requestId?: string }).requestId;
        const waiter = requestId === undefined ? undefined : pending.get(requestId);
        if (waiter === undefined) {
          if (message.type === 'protocol.error') logger.warn({ code: message.error.code }, `orchestrator protocol error: ${message.error.message}`);
          return;
        }
        pending.delete(requestId!);
        clearTimeout(waiter.timer);
        if (message.type === 'protocol.error') waiter.reject(new SvcError(receivedCode(message.error.code), message.error.message));
        else waiter.resolve(message);
      }
    }
  };

  const stop = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    const closing = warm?.close().catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'stopping the spare step runner failed'));
    // Hand back in-flight work: cancel it and give it a bounded time to report.
    for (const job of jobs.values()) job.cancel('agent stopping', false);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([...jobs.values()].map((j) => j.done)), new Promise((r) => (timer = setTimeout(r, 30_000)))]);
    clearTimeout(timer);
    await connection.flush();
    for (const waiter of pending.values()) {
      clearTimeout(waiter.timer);
      waiter.reject(new UnavailableError('SVC_ERR_AGENT_STOPPING', 'the agent is stopping'));
    }
    pending.clear();
    await closing;
    await connection.stop();
    await metrics?.close();
    await options.tracing?.shutdown().catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'exporting the last spans failed'));
  };

  void connection.ended.then((end) => {
    void warm?.close().catch(() => undefined);
    void metrics?.close();
    if (end.fatal !== undefined) {
      for (const job of jobs.values()) job.cancel('the orchestrator refused the agent', true);
      endResolve({ code: 1, error: end.fatal });
    } else {
      endResolve({ code: 0 });
    }
  });

  warm?.replenish();
  try {
    await connection.start();
  } catch (error) {
    await warm?.close().catch(() => undefined);
    await metrics?.close();
    throw error;
  }
  return { agentId: options.agentId, connection, sandboxes: runnable, metricsUrl: metrics?.url, jobs: () => jobs, ended, stop };
}

