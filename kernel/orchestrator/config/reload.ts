// Config reload (spec "Config reload"): idle → reloading on a trigger (debounced 500 ms, so a
// burst of triggers is one reload) → applied (one atomic swap of the holder's snapshot) or
// rejected (old config kept, result `failed`). One reload at a time: an operator's trigger (HTTP,
// CLI) while one is pending or running is answered `Reload already in progress`; a signal or a
// cluster notification joins the pending reload, or, arriving while one runs, queues one more
// after it (it may announce a version the running reload already missed).
import type { Logger } from 'pino';
import { SvcConfig } from '../../../schemas/config.ts';
import type { ConfigReloadResult } from '../../../schemas/http/config.ts';
import { compileSchema } from '../../../schemas/validate.ts';
import { messageOf } from '../../../core/errors.ts';
import { getPath, loadConfig } from '../../services/config/index.ts';
import type { NamedKey } from '../../services/crypto/sealing.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { ConfigReloadSource, SvcMetrics } from '../../services/metrics.ts';
import { clusterSettingPrefix, heldPrefix, leafPaths, restartPrefix } from './fields.ts';
import { deepFreeze, type ConfigHolder } from './holder.ts';
import { latestConfigVersion } from './versions.ts';

export const RELOAD_DEBOUNCE_MS = 500; // spec: reload debounce
export const RELOAD_IN_PROGRESS = 'Reload already in progress'; // spec

const checkConfig = compileSchema(SvcConfig);

export interface ConfigReloaderOptions {
  holder: ConfigHolder;
  pool: DatabasePool;
  keys: readonly NamedKey[];
  metrics: SvcMetrics;
  logger: Logger;
  debounceMs?: number;
  /**
   * After an applied reload this node started (SIGHUP, HTTP, CLI): tell the other nodes, so an
   * operator's reload of one node reloads the cluster. Not called for `cluster` reloads (no echo).
   */
  announce?: (source: ConfigReloadSource) => Promise<void>;
}

type Tree = Record<string, unknown>;

function setPath(tree: Tree, path: string, value: unknown): void {
  const parts = path.split('.');
  const leaf = parts.pop() as string;
  let node = tree;
  for (const part of parts) {
    if (typeof node[part] !== 'object' || node[part] === null) node[part] = {};
    node = node[part] as Tree;
  }
  if (value === undefined) delete node[leaf];
  else node[leaf] = structuredClone(value);
}

export interface ReloadPlan {
  config: SvcConfig;
  changed: string[];
  warnings: string[];
}

/**
 * Merge a freshly loaded config into the running one: held fields keep their start value, fields
 * read only at start keep their running value (both with a warning naming the path, never the
 * value), everything else is taken.
 */
export function planReload(running: SvcConfig, start: SvcConfig, loaded: SvcConfig): ReloadPlan {
  const paths = [...new Set([...leafPaths(running), ...leafPaths(loaded)])].sort();
  const next = structuredClone(loaded) as unknown as Tree;
  const changed: string[] = [];
  const warnings: string[] = [];
  for (const path of paths) {
    const before = getPath(running, path);
    const after = getPath(loaded, path);
    if (JSON.stringify(before) === JSON.stringify(after)) continue;
    const held = heldPrefix(path);
    if (held !== undefined) {
      setPath(next, path, getPath(start, path));
      warnings.push(`${path} changed but is held at its startup value (spec: database url, port, instance id and storage change only with a restart)`);
      continue;
    }
    if (clusterSettingPrefix(path) !== undefined) {
      setPath(next, path, before);
      warnings.push(`${path} changed but is a cluster setting: the cluster_settings row wins once seeded; change it with "svc-admin cluster-settings set" (PATCH /api/v1/admin/cluster-settings)`);
      continue;
    }
    if (restartPrefix(path) !== undefined) {
      setPath(next, path, before);
      warnings.push(`${path} changed but needs a restart to take effect (read once at start; docs/config.md); the running value is kept`);
      continue;
    }
    changed.push(path);
  }
  return { config: next as unknown as SvcConfig, changed, warnings };
}

export class ConfigReloader {
  readonly #options: ConfigReloaderOptions;
  readonly #debounceMs: number;
  #pending: { promise: Promise<ConfigReloadResult>; source: ConfigReloadSource } | undefined;
  #running = false;
  #again: ConfigReloadSource | undefined;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: ConfigReloaderOptions) {
    this.#options = options;
    this.#debounceMs = options.debounceMs ?? RELOAD_DEBOUNCE_MS;
  }

  get busy(): boolean {
    return this.#pending !== undefined || this.#running;
  }

  /** Ask for a reload; resolves with its outcome (or at once with `Reload already in progress`). */
  trigger(source: ConfigReloadSource): Promise<ConfigReloadResult> {
    const interactive = source === 'http' || source === 'cli';
    if (this.#stopped) return Promise.resolve({ success: false, error: 'the orchestrator is stopping' });
    if (this.#pending !== undefined) {
      return interactive ? Promise.resolve({ success: false, error: RELOAD_IN_PROGRESS }) : this.#pending.promise;
    }
    if (this.#running) {
      if (!interactive) this.#again ??= source;
      return Promise.resolve({ success: false, error: RELOAD_IN_PROGRESS });
    }
    const promise = new Promise<ConfigReloadResult>((resolve) => {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#pending = undefined;
        this.#running = true;
        void this.#run(source)
          .then(resolve)
          .finally(() => {
            this.#running = false;
            const again = this.#again;
            this.#again = undefined;
            if (again !== undefined) void this.trigger(again);
          });
      }, this.#debounceMs);
    });
    this.#pending = { promise, source };
    return promise;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
  }

  async #run(source: ConfigReloadSource): Promise<ConfigReloadResult> {
    const { holder, metrics, logger } = this.#options;
    metrics.configReloads.inc({ result: 'attempted', source });
    try {
      const latest = await latestConfigVersion(this.#options.pool, this.#options.keys);
      const shared = latest === undefined ? undefined : { version: latest.summary.version, config: latest.config };
      const loaded = await loadConfig({ env: holder.env, cwd: holder.cwd, ...(shared ? { shared } : {}) });
      const plan = planReload(holder.current, holder.start, loaded.config);
      const check = checkConfig.validate(plan.config);
      if (!check.ok) throw new Error(`the config after holding start-only fields is not valid: ${check.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
      const version = latest?.summary.version ?? null;
      holder.swap({ config: deepFreeze(plan.config), version, sources: loaded.sources, pending: plan.warnings });
      metrics.configVersion.set(version ?? 0);
      metrics.configReloads.inc({ result: 'success', source });
      for (const warning of plan.warnings) logger.warn({ source, version }, `config reload: ${warning}`);
      logger.info({ source, version, changed: plan.changed }, 'config reloaded');
      if (source !== 'cluster' && this.#options.announce) {
        await this.#options.announce(source).catch((error: unknown) => logger.warn({ err: error }, 'could not tell the other nodes to reload'));
      }
      return { success: true, result: 'success', version, changed: plan.changed, warnings: plan.warnings };
    } catch (error) {
      metrics.configReloads.inc({ result: 'failed', source });
      logger.error({ err: error, source }, 'config reload failed; the running config is kept');
      return { success: false, result: 'failed', version: holder.snapshot.version, error: messageOf(error) };
    }
  }
}
