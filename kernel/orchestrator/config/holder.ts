// The orchestrator's running config as one swappable snapshot. `ctx.config` is a getter on the
// holder, so code that reads `ctx.config.x` when it acts sees a reload at once; a reload replaces
// the snapshot in one assignment, so one read never mixes two configs.
import type { Logger } from 'pino';
import type { SvcConfig } from '../../../schemas/config.ts';
import { getPath, loadConfig, type LoadedConfig } from '../../services/config/index.ts';
import type { NamedKey } from '../../services/crypto/sealing.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { latestConfigVersion } from './versions.ts';

export interface ConfigSnapshot {
  readonly config: SvcConfig;
  /** Shared config version layered in; null before the first version is written. */
  readonly version: number | null;
  /** Leaf dot path → layer (`defaults`, `shared config vN`, `file …`, `env SVC_…`). */
  readonly sources: ReadonlyMap<string, string>;
  /** Warnings of the last load: changes held at the running value. */
  readonly pending: readonly string[];
}

export class ConfigHolder {
  #snapshot: ConfigSnapshot;
  /** The config as the node started with it: held fields stay at these values. */
  readonly start: SvcConfig;
  /** What a reload reads again: the environment and directory the node started with. */
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;

  constructor(snapshot: ConfigSnapshot, env: NodeJS.ProcessEnv, cwd: string) {
    this.#snapshot = snapshot;
    this.start = snapshot.config;
    this.env = env;
    this.cwd = cwd;
  }

  get current(): SvcConfig {
    return this.#snapshot.config;
  }

  get snapshot(): ConfigSnapshot {
    return this.#snapshot;
  }

  swap(next: ConfigSnapshot): void {
    this.#snapshot = next;
  }
}

export interface OpenHolderOptions {
  /** The config loaded before the database was reachable (no shared layer). */
  base: LoadedConfig;
  env: NodeJS.ProcessEnv;
  cwd: string;
  pool: DatabasePool;
  keys: readonly NamedKey[];
  logger: Logger;
}

/**
 * The start config: the newest shared version layered in. The master key was read before the
 * database (it opens the version), so `secrets.key`/`secrets.keyFile` of a version never replace
 * the local ones. A version that no longer loads (schema changed by an upgrade, key missing) is
 * logged and the node starts on its local config alone.
 */
export async function openConfigHolder(options: OpenHolderOptions): Promise<ConfigHolder> {
  const { base, logger } = options;
  const plain: ConfigSnapshot = { config: base.config, version: null, sources: base.sources, pending: [] };
  let snapshot = plain;
  try {
    const latest = await latestConfigVersion(options.pool, options.keys);
    if (latest !== undefined) {
      const loaded = await loadConfig({ env: options.env, cwd: options.cwd, shared: { version: latest.summary.version, config: latest.config } });
      const pending: string[] = [];
      for (const path of ['secrets.key', 'secrets.keyFile']) {
        if (getPath(loaded.config, path) !== getPath(base.config, path)) {
          pending.push(`${path} of config version ${latest.summary.version} is not used: the master key comes from the node's own settings (SVC_SECRET_KEY, SVC_SECRET_KEY_FILE or the data directory)`);
        }
      }
      const config = pending.length === 0 ? loaded.config : structuredCloneWith(loaded.config, base.config, ['key', 'keyFile']);
      snapshot = { config, version: latest.summary.version, sources: loaded.sources, pending };
      for (const warning of pending) logger.warn({ version: latest.summary.version }, warning);
    }
  } catch (error) {
    logger.error({ err: error }, 'the newest shared config version could not be applied; starting on the local config alone');
    snapshot = plain;
  }
  return new ConfigHolder(snapshot, options.env, options.cwd);
}

function structuredCloneWith(config: SvcConfig, base: SvcConfig, secretKeys: readonly ('key' | 'keyFile')[]): SvcConfig {
  const copy = structuredClone(config) as SvcConfig & { secrets: Record<string, unknown> };
  for (const key of secretKeys) {
    if (base.secrets[key] === undefined) delete copy.secrets[key];
    else copy.secrets[key] = base.secrets[key];
  }
  return deepFreeze(copy);
}

export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
