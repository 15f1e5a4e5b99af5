// What the cache commands share: the orchestrator database (as the source commands reach it)
// and the configured storage plugin, signed in on its own (no server, no other plugins).
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { createPluginHost, type StorageExtensionPoint } from '../../../core/plugins/index.ts';
import type { PluginEnvironment } from '../../../core/plugins/selection.ts';
import { UnavailableError } from '../../../core/errors.ts';
import { orchestratorPlugins } from '../../../plugins/builtin.ts';
import type { SvcConfig } from '../../../schemas/config.ts';

export { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

const quiet = pino({ level: process.env['SVC_LOG_LEVEL'] ?? 'silent' });

/** Runs `fn` with the storage `storage.type` names (SVC_STORAGE_TYPE, SVC_STORAGE_FS_PATH, …). */
export async function withStorage<T>(config: SvcConfig, fn: (storage: StorageExtensionPoint) => Promise<T>): Promise<T> {
  const env: PluginEnvironment = {
    config,
    publicUrl: 'http://127.0.0.1',
    dataDir: resolve(process.cwd(), config.dataDir),
    // Pre-signed URLs are never handed out from here; any secret will do.
    derivedSecret: () => randomBytes(32).toString('base64url'),
  };
  const chosen = orchestratorPlugins(env);
  const host = createPluginHost({
    config: { ...chosen.config, ...config.plugins.config },
    selection: { storage: config.storage.type },
    logger: quiet,
  });
  try {
    await host.signInAll({ builtIns: chosen.builtIns.filter((p) => p.kind === 'storage'), modules: config.plugins.modules });
    let storage: StorageExtensionPoint;
    try {
      storage = host.select('storage', config.storage.type);
    } catch (error) {
      throw new UnavailableError('SVC_ERR_CACHE_NOT_CONFIGURED', `no storage plugin serves storage.type "${config.storage.type}"; set SVC_STORAGE_TYPE`, { cause: error });
    }
    return await fn(storage);
  } finally {
    await host.close();
  }
}
