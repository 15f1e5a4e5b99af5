// The built-in plugins and how the spec's settings become their config slices. Only the
// composition roots (bin/roots) import this; the kernel knows extension points, never plugins.
import type { PluginEnvironment, PluginSelection } from '../kernel/orchestrator/app.ts';
import type { SvcPlugin } from '../kernel/host/index.ts';
import { filesystemStorage } from './storage/filesystem/index.ts';
import { join, resolve } from 'node:path';

/** Storage plugins by `storage.type`. */
const STORAGE: Record<string, { plugin: SvcPlugin; slice: (env: PluginEnvironment) => unknown }> = {
  filesystem: {
    plugin: filesystemStorage as SvcPlugin,
    slice: (env) => ({
      root: env.config.storage.fsPath ? resolve(env.config.storage.fsPath) : join(env.dataDir, 'storage'),
      publicBaseUrl: env.publicUrl,
      urlSecret: env.derivedSecret('storage-url'),
    }),
  },
};

export function orchestratorPlugins(env: PluginEnvironment): PluginSelection {
  const builtIns: SvcPlugin[] = [];
  const config: Record<string, unknown> = {};
  const selection: Record<string, string> = {};

  const storageType = env.config.storage.type;
  const storage = STORAGE[storageType];
  if (storage) {
    builtIns.push(storage.plugin);
    config[`storage:${storageType}`] = storage.slice(env);
  }
  // A third-party storage plugin (plugins.modules) may serve a type we do not ship.
  selection['storage'] = storageType;
  return { builtIns, config, selection };
}
