// Config slice `storage:s3` (from the SVC_STORAGE_* settings, plugins/builtin.ts).
import { Type, type Static } from 'typebox';

const NonEmpty = Type.String({ minLength: 1, maxLength: 1024 });
const HttpUrl = Type.String({ pattern: '^https?://[^\\s?#]+$', maxLength: 2048 });
const MiB = 1024 * 1024;

export const S3StorageConfig = Type.Object(
  {
    /** SVC_STORAGE_BUCKET */
    bucket: Type.String({ minLength: 3, maxLength: 63, pattern: '^[a-z0-9][a-z0-9.-]*[a-z0-9]$' }),
    /** SVC_STORAGE_REGION; S3-compatible servers usually accept us-east-1. */
    region: Type.String({ minLength: 1, maxLength: 64, default: 'us-east-1' }),
    /** SVC_STORAGE_ENDPOINT: where the orchestrator reaches storage; absent: AWS for the region. */
    endpoint: Type.Optional(HttpUrl),
    /** SVC_STORAGE_FORCE_PATH_STYLE: `<endpoint>/<bucket>/<key>` instead of `<bucket>.<host>`. */
    forcePathStyle: Type.Boolean({ default: false }),
    /** SVC_STORAGE_EXTERNAL_ENDPOINT: the address agents reach; their pre-signed URLs are signed for it. */
    externalEndpoint: Type.Optional(HttpUrl),
    /** SVC_STORAGE_UPLOAD_ENDPOINT: the address developers' machines reach (developer URLs). */
    uploadEndpoint: Type.Optional(HttpUrl),
    /** SVC_STORAGE_ACCESS_KEY_ID / SVC_STORAGE_SECRET_ACCESS_KEY; both or neither (then the SDK's default chain). */
    accessKeyId: Type.Optional(NonEmpty),
    secretAccessKey: Type.Optional(NonEmpty),
    /**
     * Bodies larger than this go up as a multipart upload in parts of this size (S3: at least
     * 5 MiB, at most 10,000 parts). Also the most a put holds in memory per part in flight.
     */
    partSizeBytes: Type.Integer({ minimum: 5 * MiB, maximum: 1024 * MiB, default: 16 * MiB }),
    /** Time to open a connection to storage before the attempt fails. */
    connectTimeoutMs: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
    /** A request whose socket stays idle this long fails (not a bound on a whole large transfer). */
    idleTimeoutMs: Type.Integer({ minimum: 1000, maximum: 3_600_000, default: 120_000 }),
  },
  { additionalProperties: false },
);
export type S3StorageConfig = Static<typeof S3StorageConfig>;
