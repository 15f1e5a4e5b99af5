// `filesystem` storage plugin: the default for a single machine (SVC_STORAGE_TYPE=filesystem).
// Objects live under `root`; pre-signed URLs point at the orchestrator, which serves them through
// `httpRoutes` (the kernel's HTTP factory registers it when the storage provides it).
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { FilesystemStorageConfig } from './config.ts';
import { storageRoutes } from './routes.ts';
import { FilesystemStorage } from './storage.ts';

export { FilesystemStorageConfig } from './config.ts';
export { FilesystemStorage, StorageTooLargeError, TEMP_PREFIX, type FilesystemStorageOptions, type OpenedObject } from './storage.ts';
export { storageRoutes, type StorageRoutesOptions } from './routes.ts';
export { signStoragePath, verifyStorageSignature, presignedUrl, storagePath, encodeKeyForUrl } from './presign.ts';

export const filesystemStorage = definePlugin({
  id: 'filesystem',
  kind: 'storage',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'Objects as files under a local directory; pre-signed URLs served by the orchestrator',
  configSchema: FilesystemStorageConfig,
  async create({ config, logger }): Promise<StorageExtensionPoint> {
    const storage = new FilesystemStorage({
      root: config.root,
      presign: { publicBaseUrl: config.publicBaseUrl, secret: config.urlSecret, prefix: config.routePrefix },
      logger,
    });
    await storage.init();
    logger.info({ root: storage.root }, 'filesystem storage ready');
    const httpRoutes = async (app: Parameters<typeof storageRoutes>[0]) =>
      storageRoutes(app, { storage, secret: config.urlSecret, prefix: config.routePrefix, maxUploadBytes: config.maxUploadBytes });
    return Object.assign(storage, { httpRoutes });
  },
});

export default filesystemStorage;
