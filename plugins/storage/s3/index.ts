// `s3` storage plugin (SVC_STORAGE_TYPE=s3): objects in an S3 bucket or an S3-compatible server.
// Agents and developers move data straight to and from the bucket through pre-signed URLs; the
// orchestrator serves no storage routes. The AWS SDK (storage.ts) is imported only when a
// process signs this plugin in: loaded by every program that lists the built-in plugins (the
// orchestrator, `svc dev`, `svc-admin cache`) even with filesystem storage, it was ~5 MB of the
// orchestrator's live heap, which each full garbage collection marks on the webhook path's
// thread (issue 19), and 0.15-0.2 s of CPU at every start.
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { S3StorageConfig } from './config.ts';

export { S3StorageConfig } from './config.ts';

export const s3Storage = definePlugin({
  id: 's3',
  kind: 'storage',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'Objects in an S3 bucket (AWS or S3-compatible); pre-signed URLs served by the bucket',
  configSchema: S3StorageConfig,
  async create({ config, logger }): Promise<StorageExtensionPoint> {
    const { S3Storage } = await import('./storage.ts');
    const storage = new S3Storage(config, logger);
    logger.info({ bucket: config.bucket, endpoint: config.endpoint, externalEndpoint: config.externalEndpoint, uploadEndpoint: config.uploadEndpoint }, 's3 storage ready');
    return storage;
  },
});

export default s3Storage;
