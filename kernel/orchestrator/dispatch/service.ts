// One node's dispatch service: the agent registry, the dispatcher, the recovery sweeper, the
// NOTIFY listener, and the table of handlers for agent requests other subsystems answer
// (`oidc.token.request` by identity, cache and event requests by theirs).
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import type { Tracing } from '../../../core/tracing/index.ts';
import { AgentToOrchestratorMembers, type JobDispatch, type OrchestratorToAgent } from '../../../schemas/wire/agent.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import type { CommonQueryMethods } from 'slonik';
import { createListener, type DatabasePool, type Listener } from '../../services/db/index.ts';
import { messageOf, type SvcError } from '../../../core/errors.ts';
import type { SvcMetrics } from '../../services/metrics.ts';
import type { MasterKeys } from '../../services/crypto/master-keys.ts';
import type { AgentCommand } from './cancel.ts';
import { buildJobDispatch, type DispatchRow, type SourceAuthResolver } from './message.ts';
import { AGENT_COMMANDS_CHANNEL, JOBS_CHANNEL, type AgentMessageCommand } from './notify.ts';
import { Dispatcher } from './queue.ts';
import { handleAgentDisconnect, recoveryWindowMs, sweepExpiredRecoveries } from './recovery.ts';
import { AgentRegistry, type AgentSession } from './registry.ts';
import type { ClusterSettingsValues } from '../../../schemas/http/settings.ts';

type Member = (typeof AgentToOrchestratorMembers)[number];
export type AgentMessage = Static<Member>;
export type AgentMessageType = AgentMessage['type'];
export type AgentMessageOf<T extends AgentMessageType> = Extract<AgentMessage, { type: T }>;

/** Request types another subsystem answers; `agent.register` and job reports are dispatch's own. */
export type DelegatedType = Exclude<AgentMessageType, 'agent.register' | 'job.status' | 'job.context' | 'step.status' | 'log.chunk'>;

/** Answers one agent request; the returned message (if any) is sent back on the agent's socket. */
export type AgentRequestHandler<T extends DelegatedType> = (
  agent: { agentId: string; labels: readonly string[] },
  message: AgentMessageOf<T>,
) => Promise<OrchestratorToAgent | undefined>;

/**
 * Runs inside an agent's registration transaction, before the agent is recorded: an error
 * refuses the registration (its code and message go to the agent, then the socket closes 4003).
 */
export type RegistrationCheck = (tx: CommonQueryMethods, agent: { agentId: string; labels: readonly string[] }) => Promise<SvcError | null>;

export interface DispatchTuning {
  /** Periodic dispatcher tick (also annotates unroutable jobs); default 2000 ms. */
  tickMs?: number;
  /** WebSocket ping interval; a socket that missed a pong by the next ping is closed. Default 15000 ms. */
  heartbeatMs?: number;
  /** Time an agent has to send `agent.register`; default 10000 ms. */
  registerTimeoutMs?: number;
  /** Container jobs no agent can run fail after this; default 300000 ms. */
  containerGraceMs?: number;
  /** Recovery sweeper interval; default a quarter of the window, 100 ms to 5 s. */
  sweepMs?: number;
}

export interface DispatchServiceOptions extends DispatchTuning {
  pool: DatabasePool;
  /** Spans of traced runs (docs/tracing.md). */
  tracing?: Tracing;
  databaseUrl: string;
  logger: Logger;
  metrics: SvcMetrics;
  nodeId: string;
  maxReconnectDelayMs: number;
  maxDispatchAttempts: number;
  storage: () => StorageExtensionPoint | undefined;
  /** Master keys that open secret contexts' values (kernel/orchestrator/secrets). */
  masterKeys?: MasterKeys;
  /**
   * The cluster settings (cluster/settings.ts), read at each decision; without them (a dispatch
   * subsystem started alone) `maxDispatchAttempts` and the config's back-off apply.
   */
  clusterSettings?: () => ClusterSettingsValues;
  /** Back-off without cluster settings (config `sealedSecretsRetryBackoffMs`). */
  sealedSecretsRetryBackoffMs?: number;
  /** `queue.timeoutMs`, read at each pass (a reload applies it); undefined: no queue timeout. */
  queueTimeoutMs?: () => number | undefined;
  /**
   * `staleDetector.scanIntervalMs`, read before each recovery sweep (a reload applies it);
   * undefined: the `sweepMs` tuning, else a quarter of the recovery window (100 ms to 5 s).
   */
  staleScanIntervalMs?: () => number | undefined;
}

export class DispatchService {
  readonly registry = new AgentRegistry();
  readonly dispatcher: Dispatcher;
  readonly options: Required<DispatchTuning> & DispatchServiceOptions;
  readonly #handlers = new Map<string, AgentRequestHandler<DelegatedType>>();
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #pendingDisconnects = new Set<Promise<unknown>>();
  #listener: Listener | undefined;
  #sourceAuth: SourceAuthResolver | undefined;
  #registrationCheck: RegistrationCheck | undefined;
  #stopped = false;
  readonly #dispatchedCounter;
  readonly #connectedGauge;
  readonly #recoverySweeps;
  readonly #dispatchPasses;
  #ticks = 0;

  constructor(options: DispatchServiceOptions) {
    const window = recoveryWindowMs(options.maxReconnectDelayMs);
    this.options = {
      tickMs: 2_000,
      heartbeatMs: 15_000,
      registerTimeoutMs: 10_000,
      containerGraceMs: 300_000,
      sweepMs: Math.min(5_000, Math.max(100, Math.floor(window / 4))),
      ...options,
    };
    this.#dispatchedCounter = options.metrics.counter({ name: 'svc_orch_jobs_dispatched_total', help: 'Jobs sent to agents by this node' });
    this.#connectedGauge = options.metrics.gauge({ name: 'svc_orch_agents_connected', help: 'Agents connected to this node' });
    // Passes that completed, whether or not they moved anything: "still recovering (or held) after
    // N passes" is then a count, not a wait, and operators see both loops are alive.
    this.#dispatchPasses = options.metrics.counter({ name: 'svc_orch_dispatch_passes_total', help: 'Dispatcher passes over the queue completed by this node' });
    this.#recoverySweeps = options.metrics.counter({ name: 'svc_orch_recovery_sweeps_total', help: 'Recovery sweeps (the stale detector: recovering jobs past their window failed) finished by this node' });
    const attempts = (): number => options.clusterSettings?.().maxDispatchAttempts ?? options.maxDispatchAttempts;
    this.dispatcher = new Dispatcher({
      pool: options.pool,
      registry: this.registry,
      logger: options.logger.child({ component: 'dispatcher' }),
      get maxDispatchAttempts() {
        return attempts();
      },
      sealedSecretsRetryBackoffMs: () => options.clusterSettings?.().sealedSecretsRetryBackoffMs ?? options.sealedSecretsRetryBackoffMs ?? 60_000,
      nodeId: options.nodeId,
      containerGraceMs: this.options.containerGraceMs,
      build: (row, session) => this.#build(row, session),
      onDispatched: () => this.#dispatchedCounter.inc(),
      onPass: () => this.#dispatchPasses.inc(),
      ...(options.tracing === undefined ? {} : { tracing: options.tracing }),
    });
  }

  async start(): Promise<void> {
    const listener = await createListener({ url: this.options.databaseUrl, logger: this.options.logger });
    this.#listener = listener;
    await listener.listen(JOBS_CHANNEL, () => this.dispatcher.wake());
    await listener.listen(AGENT_COMMANDS_CHANNEL, (payload) => this.#onAgentCommand(payload));
    listener.onGap(() => this.dispatcher.wake());
    this.#every(this.options.tickMs, async () => {
      this.dispatcher.wake();
      await this.dispatcher.annotateUnroutable();
      const timeoutMs = this.options.queueTimeoutMs?.();
      if (timeoutMs !== undefined) {
        const failed = await this.dispatcher.failQueueTimeouts(timeoutMs);
        if (failed.length > 0) this.options.logger.warn({ jobs: failed, timeoutMs }, 'jobs queued longer than queue.timeoutMs failed');
      }
      this.#ticks += 1;
    });
    // The stale detector: fails the jobs of agents that did not come back within the window.
    this.#every(() => this.#recoveryScanMs, async () => {
      const failed = await sweepExpiredRecoveries(this.options.pool, this.options.maxReconnectDelayMs);
      this.#recoverySweeps.inc();
      if (failed.length > 0) this.options.logger.info({ jobs: failed }, 'recovery window expired; jobs failed');
    });
    this.dispatcher.wake();
  }

  /**
   * Periodic ticks completed (wake, annotation, queue timeouts), every `tickMs`: a test reads
   * "the other timers had their turn" from it ("no sweep after three ticks") instead of sleeping.
   */
  get ticks(): number {
    return this.#ticks;
  }

  /** Recovery sweep interval: `staleDetector.scanIntervalMs` when set, else the tuning or default. */
  get #recoveryScanMs(): number {
    return this.options.staleScanIntervalMs?.() ?? this.options.sweepMs;
  }

  /**
   * A timer that never overlaps itself and logs instead of throwing. A function interval is read
   * again at least every second, so a reloaded setting applies without waiting out the old one.
   */
  #every(ms: number | (() => number), fn: () => Promise<void>): void {
    const interval = typeof ms === 'function' ? ms : () => ms;
    let last = Date.now();
    const next = (): void => {
      if (this.#stopped) return;
      const wait = Math.max(0, Math.min(last + interval() - Date.now(), 1_000));
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        if (this.#stopped) return;
        if (Date.now() - last < interval()) return next();
        last = Date.now();
        fn()
          .catch((error: unknown) => this.options.logger.warn({ err: messageOf(error) }, 'dispatch background task failed'))
          .finally(next);
      }, wait);
      timer.unref();
      this.#timers.add(timer);
    };
    next();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    await this.dispatcher.stop();
    for (const session of this.registry.list()) session.close(1001, 'orchestrator shutting down');
    await Promise.allSettled([...this.#pendingDisconnects]);
    await this.#listener?.close();
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Registers the answer to one agent request type (one handler per type; the last wins). */
  handle<T extends DelegatedType>(type: T, handler: AgentRequestHandler<T>): void {
    this.#handlers.set(type, handler as unknown as AgentRequestHandler<DelegatedType>);
  }

  handlerFor(type: string): AgentRequestHandler<DelegatedType> | undefined {
    return this.#handlers.get(type);
  }

  /** Set by the scaling subsystem: an agent a scaler started must carry its mandatory labels. */
  setRegistrationCheck(check: RegistrationCheck): void {
    this.#registrationCheck = check;
  }

  get registrationCheck(): RegistrationCheck | undefined {
    return this.#registrationCheck;
  }

  /** How runs with a source get checkout credentials (ingest knows sources). */
  setSourceAuthResolver(resolver: SourceAuthResolver): void {
    this.#sourceAuth = resolver;
  }

  /** Sends a message to an agent connected to this node; false when it is not here. */
  async sendToAgent(agentId: string, message: OrchestratorToAgent): Promise<boolean> {
    const session = this.registry.get(agentId);
    if (session === undefined) return false;
    await session.send(message);
    return true;
  }

  sessionAdded(): void {
    this.#connectedGauge.set(this.registry.size);
  }

  /** A session ended: put its jobs in recovery (static) or fail/requeue them (ephemeral). */
  sessionEnded(session: AgentSession): void {
    this.#connectedGauge.set(this.registry.size);
    const work = handleAgentDisconnect(this.options.pool, {
      agentId: session.agentId,
      sessionId: session.sessionId,
      ephemeral: session.ephemeral,
      maxReconnectDelayMs: this.options.maxReconnectDelayMs,
      maxDispatchAttempts: this.options.clusterSettings?.().maxDispatchAttempts ?? this.options.maxDispatchAttempts,
    })
      .then((result) => {
        if (result.recovering.length + result.failed.length + result.requeued.length > 0) {
          this.options.logger.info({ agentId: session.agentId, ...result }, 'agent disconnected; its jobs moved');
        }
      })
      .catch((error: unknown) => this.options.logger.error({ err: messageOf(error), agentId: session.agentId }, 'disconnect handling failed'))
      .finally(() => this.#pendingDisconnects.delete(work));
    this.#pendingDisconnects.add(work);
  }

  /** Waits for disconnect handling started so far (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#pendingDisconnects]);
    await this.dispatcher.idle();
  }

  #onAgentCommand(payload: string): void {
    let command: AgentCommand | AgentMessageCommand;
    try {
      command = JSON.parse(payload) as AgentCommand | AgentMessageCommand;
    } catch {
      return;
    }
    const session = this.registry.get(command.agentId);
    if (session === undefined) return;
    if ('message' in command) {
      // Best effort: an agent that misses it learns the same thing when it next asks.
      session.send(command.message).catch((error: unknown) =>
        this.options.logger.warn({ err: messageOf(error), agentId: command.agentId, type: command.message.type }, 'could not send an agent message'),
      );
      return;
    }
    session.send({ type: 'job.cancel', jobId: command.jobId, reason: command.reason, force: command.force }).catch((error: unknown) =>
      this.options.logger.warn({ err: messageOf(error), agentId: command.agentId, jobId: command.jobId }, 'could not send job.cancel'),
    );
  }

  async #build(row: DispatchRow, session: AgentSession): Promise<JobDispatch> {
    return buildJobDispatch(row, {
      pool: this.options.pool,
      storage: this.options.storage(),
      sourceAuth: this.#sourceAuth,
      logger: this.options.logger,
      agentOs: session.os,
      agentArch: session.arch,
      metrics: this.options.metrics,
      ...(this.options.masterKeys === undefined ? {} : { masterKeys: this.options.masterKeys }),
    });
  }
}

