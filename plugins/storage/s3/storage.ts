// S3 storage: objects in one bucket of S3 or an S3-compatible server (MinIO, Ceph, R2, ...).
// S3 itself gives what the storage contract asks: a PUT or a completed multipart upload replaces
// the whole object at once, CopyObject is atomic, listings are sorted by key. Pre-signed URLs are
// signed for the address their user reaches: agents get SVC_STORAGE_EXTERNAL_ENDPOINT,
// developers SVC_STORAGE_UPLOAD_ENDPOINT (a signature covers the host, so a URL signed for the
// internal endpoint would be refused when fetched at another address).
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Logger } from 'pino';
import { InputError, SvcError } from '../../../core/errors.ts';
import {
  DEFAULT_LIST_LIMIT,
  DEFAULT_PRESIGN_EXPIRY_SECONDS,
  MAX_PRESIGN_EXPIRY_SECONDS,
  type ListOptions,
  type ListPage,
  type ObjectInfo,
  type PresignRequest,
  type PutOptions,
  type PutResult,
  type StorageExtensionPoint,
} from '../../../core/extension-points/storage.ts';
import { assertStorageKey, assertStoragePrefix } from '../../../core/extension-points/storage-key.ts';
import type { S3StorageConfig } from './config.ts';
import { isMissing, notFound, s3Failure, type Where } from './errors.ts';
import { SINGLE_REQUEST_LIMIT, copyLarge, putBytes, putStream, type Target } from './multipart.ts';

function makeClient(config: S3StorageConfig, endpoint: string | undefined): S3Client {
  return new S3Client({
    region: config.region,
    forcePathStyle: config.forcePathStyle,
    // No checksum on requests that do not need one: pre-signed PUTs then carry no checksum of
    // an empty body, and S3-compatible servers without flexible checksums accept our PUTs.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 3,
    requestHandler: { connectionTimeout: config.connectTimeoutMs, requestTimeout: config.idleTimeoutMs },
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(config.accessKeyId === undefined || config.secretAccessKey === undefined
      ? {}
      : { credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey } }),
  });
}

/** S3's CopySource: bucket and key, URL-encoded, each key segment on its own. */
const copySourceOf = (bucket: string, key: string): string => `${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;

export class S3Storage implements StorageExtensionPoint {
  readonly bucket: string;
  readonly #client: S3Client;
  /** Clients that only sign URLs, by audience; the main client when no other address is set. */
  readonly #signers: { agent: S3Client; developer: S3Client };
  readonly #partSize: number;
  readonly #where: Where;
  readonly #logger: Logger | undefined;

  constructor(config: S3StorageConfig, logger?: Logger) {
    if ((config.accessKeyId === undefined) !== (config.secretAccessKey === undefined)) {
      throw new InputError('SVC_ERR_STORAGE_S3_CONFIG', 'set both SVC_STORAGE_ACCESS_KEY_ID and SVC_STORAGE_SECRET_ACCESS_KEY, or neither (the AWS default credential chain)');
    }
    this.bucket = config.bucket;
    this.#client = makeClient(config, config.endpoint);
    const agent = config.externalEndpoint === undefined || config.externalEndpoint === config.endpoint ? this.#client : makeClient(config, config.externalEndpoint);
    const developerEndpoint = config.uploadEndpoint ?? config.externalEndpoint;
    const developer =
      developerEndpoint === undefined || developerEndpoint === config.endpoint
        ? this.#client
        : developerEndpoint === config.externalEndpoint
          ? agent
          : makeClient(config, developerEndpoint);
    this.#signers = { agent, developer };
    this.#partSize = config.partSizeBytes;
    this.#where = { bucket: config.bucket, endpoint: config.endpoint ?? `AWS S3 (${config.region})` };
    this.#logger = logger;
  }

  #target(key: string, options: PutOptions = {}): Target {
    return { client: this.#client, ...this.#where, key, partSize: this.#partSize, ...(options.contentType === undefined ? {} : { contentType: options.contentType }) };
  }

  async put(key: string, body: Buffer | Uint8Array | Readable, options: PutOptions = {}): Promise<PutResult> {
    assertStorageKey(key);
    if (body instanceof Readable) return putStream(this.#target(key, options), body);
    if (body instanceof Uint8Array) return putBytes(this.#target(key, options), body);
    throw new InputError('SVC_ERR_STORAGE_BODY', 'storage body must be a Buffer, Uint8Array or Readable stream');
  }

  async get(key: string): Promise<Readable> {
    assertStorageKey(key);
    try {
      const out = await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      if (!(out.Body instanceof Readable)) throw new Error('GetObject returned no stream');
      return out.Body;
    } catch (error) {
      if (isMissing(error)) throw notFound(key);
      throw s3Failure('GetObject', key, this.#where, error);
    }
  }

  async head(key: string): Promise<ObjectInfo | null> {
    assertStorageKey(key);
    try {
      const out = await this.#client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return {
        size: out.ContentLength ?? 0,
        modifiedAt: out.LastModified ?? new Date(0),
        ...(out.ETag === undefined ? {} : { etag: out.ETag }),
      };
    } catch (error) {
      if (isMissing(error)) return null;
      throw s3Failure('HeadObject', key, this.#where, error);
    }
  }

  async delete(key: string): Promise<void> {
    assertStorageKey(key);
    try {
      // S3 answers 204 for a missing key too: idempotent as the contract wants.
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (isMissing(error)) return;
      throw s3Failure('DeleteObject', key, this.#where, error);
    }
  }

  async copy(from: string, to: string): Promise<void> {
    assertStorageKey(from);
    assertStorageKey(to);
    const source = await this.head(from);
    if (source === null) throw notFound(from);
    // S3 refuses a copy onto itself that changes nothing; the object already is its own copy.
    if (from === to) return;
    const copySource = copySourceOf(this.bucket, from);
    try {
      if (source.size > SINGLE_REQUEST_LIMIT) return await copyLarge(this.#target(to), { copySource, size: source.size });
      await this.#client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: to, CopySource: copySource }));
    } catch (error) {
      if (isMissing(error)) throw notFound(from);
      if (error instanceof SvcError) throw error;
      throw s3Failure(`CopyObject from "${from}"`, to, this.#where, error);
    }
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    assertStoragePrefix(prefix);
    const limit = options.limit ?? DEFAULT_LIST_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > DEFAULT_LIST_LIMIT) {
      throw new InputError('SVC_ERR_STORAGE_LIST_LIMIT', `list limit must be an integer from 1 to ${DEFAULT_LIST_LIMIT}, got ${String(limit)}`);
    }
    const after = options.after;
    if (after !== undefined && typeof after !== 'string') {
      throw new InputError('SVC_ERR_STORAGE_LIST_AFTER', 'list "after" must be a key string');
    }
    try {
      // ListObjects (v1): `Marker` is "keys after this one", exactly `after`; v1 and v2 list
      // alike, and v1 is what every S3-compatible server implements.
      const out = await this.#client.send(
        new ListObjectsCommand({ Bucket: this.bucket, MaxKeys: limit, ...(prefix === '' ? {} : { Prefix: prefix }), ...(after === undefined ? {} : { Marker: after }) }),
      );
      const objects = (out.Contents ?? []).map((o) => ({ key: o.Key ?? '', size: o.Size ?? 0, modifiedAt: o.LastModified ?? new Date(0) }));
      const last = objects[objects.length - 1];
      return { objects, next: out.IsTruncated === true && last !== undefined ? last.key : null };
    } catch (error) {
      throw s3Failure('ListObjects', prefix, this.#where, error);
    }
  }

  async presign(request: PresignRequest): Promise<string> {
    if (request.method !== 'GET' && request.method !== 'PUT') {
      throw new InputError('SVC_ERR_STORAGE_PRESIGN_METHOD', `pre-signed URLs are for GET or PUT, not ${String(request.method)}`);
    }
    assertStorageKey(request.key);
    const seconds = request.expiresInSeconds ?? DEFAULT_PRESIGN_EXPIRY_SECONDS;
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_PRESIGN_EXPIRY_SECONDS) {
      throw new InputError(
        'SVC_ERR_STORAGE_PRESIGN_EXPIRY',
        `expiresInSeconds must be an integer from 1 to ${MAX_PRESIGN_EXPIRY_SECONDS}, got ${String(seconds)}`,
      );
    }
    const signer = request.audience === 'developer' ? this.#signers.developer : this.#signers.agent;
    const input = { Bucket: this.bucket, Key: request.key };
    const command = request.method === 'GET' ? new GetObjectCommand(input) : new PutObjectCommand(input);
    return getSignedUrl(signer, command, { expiresIn: seconds });
  }

  close(): void {
    for (const client of new Set([this.#client, this.#signers.agent, this.#signers.developer])) client.destroy();
    this.#logger?.debug({ bucket: this.bucket }, 's3 storage closed');
  }
}
