// Scale-up and reaping (docs/scalers.md). The cluster leader (or a node running alone) asks
// scalers for agents for queued jobs no online agent can take; every node advances and reaps the
// scale-ups it started itself, since only its own plugin instance can stop those agents. The
// scaler config is read at start and again after each config reload (SIGHUP, admin route,
// cluster notice): a reload that does not validate keeps the running scaler config.
import type { Logger } from 'pino';
import { messageOf } from '../../../core/errors.ts';
import type { ScalerExtensionPoint } from '../../../core/extension-points/scaler.ts';
import { loadScalerConfig, type ResolvedScaler, type ScalerConfig } from '../../../core/scalers/config-file.ts';
import type { PluginHost } from '../../../core/plugins/index.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcMetrics } from '../../services/metrics.ts';
import { InputError } from '../../../core/errors.ts';
import { requiredMatchers, satisfies } from '../dispatch/labels.ts';
import { queuedJobsPage } from '../dispatch/queue.ts';
import { planScaleUps, type PlanJob } from './plan.ts';
import * as store from './store.ts';

export interface ScalingTuning {
  /** Pass interval (a NOTIFY of new queued jobs also wakes the leader at once). Default 1 000 ms. */
  tickMs?: number;
}

export interface ScalingServiceOptions extends ScalingTuning {
  pool: DatabasePool;
  host: PluginHost;
  logger: Logger;
  nodeId: string;
  /** Whether this node scales up (the cluster leader, or true without a cluster subsystem). */
  isLeader(): boolean;
  /** The config's scaler paths; re-read on reload. */
  paths(): { configPath?: string | undefined; configDir?: string | undefined };
  /**
   * Counts completed passes (`svc_orch_scaling_passes_total`) and scaler config re-reads
   * (`svc_orch_scaler_config_reloads_total`): tests read "no further scale-up after two passes"
   * and "the bad reload was tried" from them instead of waiting.
   */
  metrics?: SvcMetrics;
}

/** Queued jobs read per pass (bounds one pass; the next takes the rest). */
const MAX_JOBS_PER_PASS = 1_000;

export class ScalingService {
  readonly #o: ScalingServiceOptions;
  #config: ScalerConfig;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  readonly #passes: { inc(): void } | undefined;
  readonly #reloads: { inc(labels: { result: 'applied' | 'kept' }): void } | undefined;

  constructor(options: ScalingServiceOptions, config: ScalerConfig) {
    this.#o = options;
    this.#config = config;
    this.#passes = options.metrics?.counter({ name: 'svc_orch_scaling_passes_total', help: 'Scaling passes (reap, then scale-up on the leader) completed by this node' });
    this.#reloads = options.metrics?.counter({
      name: 'svc_orch_scaler_config_reloads_total',
      help: 'Scaler config re-reads after a config reload: applied, or kept (the new one did not validate; the running one stays)',
      labelNames: ['result'],
    });
  }

  /** Reads and checks the scaler config: every entry's plugin must be a signed-in scaler. */
  static load(paths: ReturnType<ScalingServiceOptions['paths']>, host: PluginHost): ScalerConfig {
    const config = loadScalerConfig(paths) ?? { scalers: [], plugins: {}, files: [] };
    config.scalers.forEach((s) => {
      if (!host.has('scaler', s.plugin)) {
        throw new InputError(
          'SVC_ERR_SCALER_CONFIG_INVALID',
          `scaler config ${s.file}: scaler "${s.name}" names plugin "${s.plugin}", which is not a signed-in scaler plugin (built in: local, kubernetes; others through plugins.modules)`,
          { details: { file: s.file } },
        );
      }
    });
    return config;
  }

  get config(): ScalerConfig {
    return this.#config;
  }

  /** Whether some configured scaler starts agents whose labels satisfy `matchers`. */
  spawnable(matchers: readonly string[]): boolean {
    return this.#config.scalers.some((s) => satisfies(matchers, s.gate));
  }

  /** What `spawnable` answers from: the scalers' gates (a reload that changes them changes this). */
  spawnableKey(): string {
    return JSON.stringify(this.#config.scalers.map((s) => s.gate));
  }

  async start(): Promise<void> {
    const orphans = await store.endOrphans(this.#o.pool, this.#o.nodeId);
    if (orphans.length > 0) this.#o.logger.warn({ scaleUps: orphans.map((o) => o.id), agents: orphans.map((o) => o.agent_id) }, 'scale-ups left by an earlier process of this node marked reaped (orphaned)');
    this.#o.logger.info({ scalers: this.#config.scalers.map((s) => ({ name: s.name, plugin: s.plugin, gate: s.gate })), files: this.#config.files }, 'scalers configured');
    const tick = (): void => {
      this.wake();
      this.#timer = setTimeout(tick, this.#o.tickMs ?? 1_000);
      this.#timer.unref();
    };
    tick();
  }

  /** Re-reads the scaler config (after a config reload). On error the running one stays. */
  reload(): void {
    try {
      const next = ScalingService.load(this.#o.paths(), this.#o.host);
      if (JSON.stringify(next.plugins) !== JSON.stringify(this.#config.plugins)) {
        this.#o.logger.warn({ files: next.files }, 'scaler plugin settings (plugins.<id>) changed: they apply after a restart; scaler entries and limits apply now');
      }
      this.#config = { ...next, plugins: this.#config.plugins };
      this.#o.logger.info({ scalers: next.scalers.map((s) => s.name) }, 'scaler config reloaded');
      this.#reloads?.inc({ result: 'applied' });
      this.wake();
    } catch (error) {
      this.#o.logger.error({ err: messageOf(error) }, `scaler config not reloaded, the running one stays: ${messageOf(error)}`);
      this.#reloads?.inc({ result: 'kept' });
    }
  }

  /** Runs a pass now, or right after the current one. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.#reap();
          if (this.#o.isLeader() && this.#config.scalers.length > 0) await this.#scaleUp();
        } catch (error) {
          this.#o.logger.warn({ err: messageOf(error) }, 'scaling pass failed; retrying on the next tick');
        }
        this.#passes?.inc();
      } while (this.#again && !this.#stopped);
    })().finally(() => {
      this.#running = undefined;
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    await this.#running;
  }

  /** Waits for the current pass (tests). */
  async idle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
  }

  #plugin(id: string): ScalerExtensionPoint | undefined {
    return this.#o.host.has('scaler', id) ? this.#o.host.get('scaler', id) : undefined;
  }

  async #queuedJobs(): Promise<PlanJob[]> {
    const jobs: PlanJob[] = [];
    let after: { at: number; id: string } | undefined;
    while (jobs.length < MAX_JOBS_PER_PASS) {
      const page = await queuedJobsPage(this.#o.pool, after);
      for (const job of page) jobs.push({ id: job.id, matchers: requiredMatchers(job.runs_on, job.needs_container), routing: job.routing, protocol: job.min_protocol });
      const last = page[page.length - 1];
      if (last === undefined || page.length < 200) break;
      after = { at: last.order_at, id: last.id };
    }
    return jobs;
  }

  async #scaleUp(): Promise<void> {
    const { pool } = this.#o;
    const jobs = await this.#queuedJobs();
    if (jobs.length === 0) return;
    const [agents, waiting, usage] = await Promise.all([store.availableAgents(pool), store.waitingScaleUps(pool), store.scalerUsage(pool)]);
    const plan = planScaleUps({ jobs, agents, waiting, scalers: this.#config.scalers, usage });
    if (plan.deferred.length > 0) this.#o.logger.debug({ jobs: plan.deferred }, 'jobs wait for a scaler below its limits');
    for (const { jobId, scaler } of plan.scaleUps) {
      if (this.#stopped) return;
      await this.#startOne(jobId, scaler);
    }
  }

  /** Records, then asks the scaler for one agent carrying the scaler's labels. */
  async #startOne(jobId: string, scaler: ResolvedScaler): Promise<void> {
    const { pool, logger } = this.#o;
    const plugin = this.#plugin(scaler.plugin);
    if (plugin === undefined) return;
    const id = await store.claimScaleUp(pool, { scaler: scaler.name, plugin: scaler.plugin, nodeId: this.#o.nodeId, jobId, labels: scaler.labels, gate: scaler.gate });
    if (id === null) return;
    try {
      const { agentIds } = await plugin.scaleUp({ mandatoryLabels: scaler.labels, count: 1, reason: `job ${jobId}` });
      const agentId = agentIds[0];
      if (agentId === undefined) {
        await store.endScaleUp(pool, id, 'failed', `scaler ${scaler.name} (${scaler.plugin}) is at its capacity`);
        logger.warn({ scaler: scaler.name, jobId }, 'scaler at capacity: no agent started; the job waits');
        return;
      }
      const missing = await store.setAgent(pool, id, agentId, { scaler: scaler.name, plugin: scaler.plugin, nodeId: this.#o.nodeId, jobId, mandatoryLabels: scaler.gate, labels: scaler.labels });
      logger.info({ scaler: scaler.name, plugin: scaler.plugin, jobId, agentId, mandatoryLabels: scaler.gate }, 'scale-up: agent started for a queued job');
      if (missing.length > 0) {
        // It registered before the scaler answered, so registration could not check it: stopped here.
        const reason = `refused: registered without its mandatory labels ${missing.join(', ')}`;
        logger.error({ scaler: scaler.name, agentId, missing }, `scaled-up agent ${agentId} ${reason}; stopping it`);
        await store.endScaleUp(pool, id, 'reaped', reason);
        await this.#scaleDown(scaler.plugin, agentId);
      }
    } catch (error) {
      await store.endScaleUp(pool, id, 'failed', `scaleUp failed: ${messageOf(error)}`);
      logger.error({ err: messageOf(error), scaler: scaler.name, jobId }, 'scale-up failed');
    }
  }

  /**
   * This node's scale-ups: advanced from the agents and jobs tables; agents that ended are made
   * sure gone; agents that never took a job within the scaler's idleTimeoutMs, or whose scaler
   * left the config, are stopped (scaleDown).
   */
  async #reap(): Promise<void> {
    const { pool, nodeId, logger } = this.#o;
    for (const row of await store.advanceRows(pool, nodeId)) {
      if (row.agent_id !== null) await this.#scaleDown(row.plugin, row.agent_id);
    }
    const now = Date.now();
    for (const row of await store.waitingRowsOf(pool, nodeId)) {
      const scaler = this.#config.scalers.find((s) => s.name === row.scaler);
      const reason =
        scaler === undefined
          ? `orphaned: scaler ${row.scaler} is no longer configured`
          : now - row.created_at >= scaler.idleTimeoutMs
            ? `idle: took no job within idleTimeoutMs (${scaler.idleTimeoutMs} ms)`
            : undefined;
      if (reason === undefined || !(await store.claimReap(pool, row.id, reason))) continue;
      if (row.agent_id !== null) await this.#scaleDown(row.plugin, row.agent_id);
      logger.info({ scaler: row.scaler, agentId: row.agent_id, jobId: row.job_id, reason }, 'scaled-up agent reaped');
    }
  }

  async #scaleDown(pluginId: string, agentId: string): Promise<void> {
    try {
      await this.#plugin(pluginId)?.scaleDown({ agentIds: [agentId] });
    } catch (error) {
      this.#o.logger.warn({ err: messageOf(error), agentId, plugin: pluginId }, 'scaleDown failed');
    }
  }
}
