// Signed-in plugins, in sign-in order. Only sign-in adds to it; ids are claimed before `create`
// runs so two concurrent sign-ins of one id cannot both succeed.
import { ConflictError, NotFoundError } from '../errors.ts';
import type { PluginKind, PluginManifest } from '../../schemas/plugin.ts';
import type { ExtensionPointFor } from '../extension-points/index.ts';

export interface RegisteredPlugin<K extends PluginKind = PluginKind> {
  readonly manifest: PluginManifest & { kind: K };
  readonly instance: ExtensionPointFor<K>;
  /** The validated config slice the plugin was created with. */
  readonly config: unknown;
  /** Absolute module path for third-party plugins; undefined for built-ins. */
  readonly modulePath: string | undefined;
  /** Aborted on close. */
  readonly controller: AbortController;
}

export interface PluginSummary {
  id: string;
  kind: PluginKind;
  version: string;
  description: string;
  builtIn: boolean;
  modulePath?: string;
}

const keyOf = (kind: PluginKind, id: string): string => `${kind}:${id}`;

export class PluginRegistry {
  readonly #entries = new Map<string, RegisteredPlugin>();
  readonly #claimed = new Set<string>();

  /** Reserve `kind:id`; returns a release function, or null when taken or being signed in. */
  claim(kind: PluginKind, id: string): (() => void) | null {
    const key = keyOf(kind, id);
    if (this.#entries.has(key) || this.#claimed.has(key)) return null;
    this.#claimed.add(key);
    return () => {
      this.#claimed.delete(key);
    };
  }

  add(entry: RegisteredPlugin): void {
    const key = keyOf(entry.manifest.kind, entry.manifest.id);
    this.#claimed.delete(key);
    this.#entries.set(key, entry);
  }

  has(kind: PluginKind, id: string): boolean {
    return this.#entries.has(keyOf(kind, id));
  }

  find<K extends PluginKind>(kind: K, id: string): RegisteredPlugin<K> | undefined {
    return this.#entries.get(keyOf(kind, id)) as RegisteredPlugin<K> | undefined;
  }

  ofKind<K extends PluginKind>(kind: K): RegisteredPlugin<K>[] {
    return [...this.#entries.values()].filter((e) => e.manifest.kind === kind) as RegisteredPlugin<K>[];
  }

  get<K extends PluginKind>(kind: K, id: string): RegisteredPlugin<K> {
    const entry = this.find(kind, id);
    if (entry) return entry;
    const ids = this.ofKind(kind).map((e) => e.manifest.id);
    throw new NotFoundError(
      'SVC_ERR_PLUGIN_NOT_FOUND',
      `no ${kind} plugin "${id}" is signed in (${ids.length === 0 ? `no ${kind} plugins are` : `signed in: ${ids.join(', ')}`})`,
      { details: { kind, id } },
    );
  }

  /** The one plugin of `kind`; an error when there are none or several. */
  only<K extends PluginKind>(kind: K): RegisteredPlugin<K> {
    const entries = this.ofKind(kind);
    if (entries.length === 1) return entries[0] as RegisteredPlugin<K>;
    if (entries.length === 0) {
      throw new NotFoundError('SVC_ERR_PLUGIN_NOT_FOUND', `no ${kind} plugin is signed in`, { details: { kind } });
    }
    throw new ConflictError(
      'SVC_ERR_PLUGIN_AMBIGUOUS',
      `several ${kind} plugins are signed in (${entries.map((e) => e.manifest.id).join(', ')}); configure which one serves`,
      { details: { kind } },
    );
  }

  list(): PluginSummary[] {
    return [...this.#entries.values()].map((e) => ({
      id: e.manifest.id,
      kind: e.manifest.kind,
      version: e.manifest.version,
      description: e.manifest.description,
      builtIn: e.modulePath === undefined,
      ...(e.modulePath === undefined ? {} : { modulePath: e.modulePath }),
    }));
  }

  /** Remove and return every entry, last signed in first. */
  drain(): RegisteredPlugin[] {
    const entries = [...this.#entries.values()].reverse();
    this.#entries.clear();
    return entries;
  }
}
