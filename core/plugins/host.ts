// The plugin host: signs plugins in, hands out the signed-in instances by kind, closes them.
// It knows kinds, never a concrete plugin: built-ins are passed in by the program's composition
// root, third-party plugins come only from module paths named in config.
import { pino, type Logger } from 'pino';
import { Registry } from 'prom-client';
import type { PluginKind } from '../../schemas/plugin.ts';
import { SvcError, UnavailableError, messageOf } from '../errors.ts';
import type { SvcPlugin } from './define-plugin.ts';
import { PluginSignInError } from './errors.ts';
import type { ExtensionPointFor } from '../extension-points/index.ts';
import { PluginRegistry, type PluginSummary, type RegisteredPlugin } from './registry.ts';
import { DEFAULT_CREATE_TIMEOUT_MS, signInPlugin, type SignInSubject } from './sign-in.ts';
import { KERNEL_VERSION } from './version.ts';

export interface PluginHostOptions {
  /** Defaults to KERNEL_VERSION. */
  kernelVersion?: string;
  /** Directory module paths are resolved against (the config file's directory). Default: cwd. */
  baseDir?: string;
  /** Config slices keyed `<kind>:<id>`, e.g. `storage:filesystem`. */
  config?: Readonly<Record<string, unknown>>;
  /** Which plugin serves each kind (`{ storage: 's3' }` from SVC_STORAGE_TYPE) for `select`. */
  selection?: Readonly<Partial<Record<PluginKind, string>>>;
  /** Time limit for each plugin's `create`, default 10 000 ms. */
  createTimeoutMs?: number;
  logger?: Logger;
  /** The kernel's one prom-client registry. */
  metrics?: Registry;
}

export interface SignInAllRequest {
  /** Built-in plugins, from the composition root. */
  builtIns?: readonly SvcPlugin[];
  /** Third-party module paths (`plugins.modules`). */
  modules?: readonly string[];
}

export class PluginHost {
  readonly kernelVersion: string;
  readonly #registry = new PluginRegistry();
  readonly #options: Required<Omit<PluginHostOptions, 'kernelVersion'>>;
  readonly #closing = new AbortController();
  #failure: PluginSignInError | null = null;
  #closed = false;

  constructor(options: PluginHostOptions = {}) {
    this.kernelVersion = options.kernelVersion ?? KERNEL_VERSION;
    const createTimeoutMs = options.createTimeoutMs ?? DEFAULT_CREATE_TIMEOUT_MS;
    if (!Number.isInteger(createTimeoutMs) || createTimeoutMs < 1) {
      throw new SvcError('SVC_ERR_PLUGIN_HOST_OPTIONS', `createTimeoutMs must be a positive integer, got ${String(createTimeoutMs)}`);
    }
    this.#options = {
      baseDir: options.baseDir ?? process.cwd(),
      config: options.config ?? {},
      selection: options.selection ?? {},
      createTimeoutMs,
      logger: options.logger ?? pino({ level: 'silent' }),
      metrics: options.metrics ?? new Registry(),
    };
  }

  /** The sign-in failure that made this host unusable, if any. */
  get failure(): PluginSignInError | null {
    return this.#failure;
  }

  /**
   * Sign one plugin in (a built-in object or a module path). Throws PluginSignInError; after a
   * failure the host refuses to hand out plugins: the program must not carry on without one.
   */
  async signIn(subject: SignInSubject): Promise<PluginSummary> {
    if (this.#closed) throw new UnavailableError('SVC_ERR_PLUGIN_HOST_CLOSED', 'the plugin host is closed');
    const logger = this.#options.logger;
    try {
      const entry = await signInPlugin(subject, {
        kernelVersion: this.kernelVersion,
        baseDir: this.#options.baseDir,
        configs: this.#options.config,
        createTimeoutMs: this.#options.createTimeoutMs,
        logger,
        metrics: this.#options.metrics,
        registry: this.#registry,
        signal: this.#closing.signal,
      });
      logger.info({ plugin: entry.manifest.id, kind: entry.manifest.kind, version: entry.manifest.version }, 'plugin signed in');
      return summaryOf(entry);
    } catch (error) {
      if (error instanceof PluginSignInError) {
        this.#failure ??= error;
        logger.error({ err: error, plugin: error.plugin, phase: error.phase }, error.message);
      }
      throw error;
    }
  }

  /**
   * Built-ins first, then modules, one at a time (dependencies are checked in this order). On the
   * first failure every plugin already created is closed and the failure is thrown.
   */
  async signInAll(request: SignInAllRequest): Promise<PluginSummary[]> {
    try {
      for (const plugin of request.builtIns ?? []) await this.signIn(plugin);
      for (const path of request.modules ?? []) await this.signIn(path);
    } catch (error) {
      await this.close().catch((closeError: unknown) => {
        this.#options.logger.warn({ err: closeError }, 'closing plugins after a failed sign-in failed');
      });
      throw error;
    }
    return this.list();
  }

  has(kind: PluginKind, id: string): boolean {
    return this.#registry.has(kind, id);
  }

  /** The plugin `id` of `kind`; NotFoundError (`SVC_ERR_PLUGIN_NOT_FOUND`) when not signed in. */
  get<K extends PluginKind>(kind: K, id: string): ExtensionPointFor<K> {
    this.#assertUsable();
    return this.#registry.get(kind, id).instance;
  }

  /** The single plugin of `kind`; an error when none or several are signed in. */
  only<K extends PluginKind>(kind: K): ExtensionPointFor<K> {
    this.#assertUsable();
    return this.#registry.only(kind).instance;
  }

  /** The configured plugin of `kind`: `id`, else the host's `selection`, else the only one. */
  select<K extends PluginKind>(kind: K, id?: string): ExtensionPointFor<K> {
    this.#assertUsable();
    const chosen = id ?? this.#options.selection[kind];
    return chosen === undefined ? this.#registry.only(kind).instance : this.#registry.get(kind, chosen).instance;
  }

  /** Summaries of signed-in plugins, in sign-in order. */
  list(): PluginSummary[] {
    return this.#registry.list();
  }

  /** Close every instance, last signed in first. Idempotent; close errors are gathered and thrown at the end. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort(new Error('plugin host closed'));
    const failures: string[] = [];
    for (const entry of this.#registry.drain()) {
      entry.controller.abort(new Error('plugin host closed'));
      const instance = entry.instance as { close?: () => unknown };
      if (typeof instance.close !== 'function') continue;
      try {
        await instance.close();
      } catch (error) {
        failures.push(`${entry.manifest.kind}:${entry.manifest.id}: ${messageOf(error)}`);
        this.#options.logger.error({ err: error, plugin: entry.manifest.id }, 'plugin close failed');
      }
    }
    if (failures.length > 0) {
      throw new SvcError('SVC_ERR_PLUGIN_CLOSE', `some plugins failed to close: ${failures.join('; ')}`);
    }
  }

  #assertUsable(): void {
    if (this.#failure !== null) {
      throw new UnavailableError('SVC_ERR_PLUGIN_HOST_FAILED', `the plugin host is unusable after a failed sign-in: ${this.#failure.message}`, {
        cause: this.#failure,
      });
    }
    if (this.#closed) throw new UnavailableError('SVC_ERR_PLUGIN_HOST_CLOSED', 'the plugin host is closed');
  }
}

function summaryOf(entry: RegisteredPlugin): PluginSummary {
  return {
    id: entry.manifest.id,
    kind: entry.manifest.kind,
    version: entry.manifest.version,
    description: entry.manifest.description,
    builtIn: entry.modulePath === undefined,
    ...(entry.modulePath === undefined ? {} : { modulePath: entry.modulePath }),
  };
}

export function createPluginHost(options: PluginHostOptions = {}): PluginHost {
  return new PluginHost(options);
}
