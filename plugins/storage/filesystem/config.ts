// Config slice `storage:filesystem` (from SVC_STORAGE_FS_PATH and the orchestrator's base URL).
import { Type, type Static } from 'typebox';

export const FilesystemStorageConfig = Type.Object(
  {
    /** Directory objects live under (SVC_STORAGE_FS_PATH); created when missing. */
    root: Type.String({ minLength: 1, maxLength: 4096 }),
    /** Address agents and developers reach the orchestrator at; pre-signed URLs start with it. */
    publicBaseUrl: Type.String({ pattern: '^https?://[^\\s?#]+$', maxLength: 2048 }),
    /** HMAC key for pre-signed URLs (derived from SVC_SECRET_KEY by the kernel). */
    urlSecret: Type.String({ minLength: 32, maxLength: 1024 }),
    /** Path the orchestrator serves pre-signed URLs under. */
    routePrefix: Type.String({ pattern: '^(/[a-z0-9][a-z0-9-]*)+$', maxLength: 128, default: '/storage' }),
    /** Largest body a pre-signed PUT accepts (default 5 GiB, S3's single-PUT limit). */
    maxUploadBytes: Type.Integer({ minimum: 1, default: 5 * 1024 ** 3 }),
  },
  { additionalProperties: false },
);
export type FilesystemStorageConfig = Static<typeof FilesystemStorageConfig>;
