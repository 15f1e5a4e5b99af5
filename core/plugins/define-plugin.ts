// `definePlugin`: how every plugin (built-in or third-party) is written. The result carries a
// registry-wide symbol brand so the host can tell a plugin from any other default export, even
// when the plugin was built against another copy of this module.
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Static, TSchema } from 'typebox';
import type { PluginDependency, PluginKind } from '../../schemas/plugin.ts';
import type { ExtensionPointFor } from '../extension-points/index.ts';

export const PLUGIN_BRAND: unique symbol = Symbol.for('svc.plugin');

export interface PluginContext<Config = unknown> {
  /** This plugin's config slice (`<kind>:<id>`), validated, defaults applied. */
  readonly config: Config;
  /** Child logger `{ plugin: id }`. */
  readonly logger: Logger;
  /** The kernel's one prom-client registry: register metrics with `registers: [metrics]`. */
  readonly metrics: Registry;
  readonly kernelVersion: string;
  /** Aborted when `create` times out or the host closes. */
  readonly signal: AbortSignal;
  /** A plugin this one declared in `dependencies` (throws for any other). */
  dependency<K extends PluginKind>(kind: K, id?: string): ExtensionPointFor<K>;
}

export interface PluginDefinition<K extends PluginKind = PluginKind, S extends TSchema = TSchema> {
  /** kebab-case, unique per kind. */
  id: string;
  kind: K;
  /** semver of the plugin itself. */
  version: string;
  /** semver range of kernel versions this plugin works with. */
  kernelRange: string;
  description: string;
  dependencies?: PluginDependency[];
  /** TypeBox schema of the config slice; defaults in it are applied before validation. */
  configSchema: S;
  create(ctx: PluginContext<Static<S>>): ExtensionPointFor<K> | Promise<ExtensionPointFor<K>>;
}

export type SvcPlugin<K extends PluginKind = PluginKind, S extends TSchema = TSchema> = Readonly<PluginDefinition<K, S>> & {
  readonly [PLUGIN_BRAND]: true;
};

export function definePlugin<K extends PluginKind, S extends TSchema>(definition: PluginDefinition<K, S>): SvcPlugin<K, S> {
  const plugin = { ...definition };
  // Non-enumerable: spreading or serializing a plugin does not copy the brand.
  Object.defineProperty(plugin, PLUGIN_BRAND, { value: true, enumerable: false, writable: false, configurable: false });
  return Object.freeze(plugin) as SvcPlugin<K, S>;
}

export function isPlugin(value: unknown): value is SvcPlugin {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    (value as { [PLUGIN_BRAND]?: unknown })[PLUGIN_BRAND] === true
  );
}
