// Writes and copies larger than one request: a body is cut into parts of `partSize`; a body that
// ends within the first part goes up as one PutObject (S3 wants a length, so streams are read
// into memory part by part, never whole). A failed multipart upload is aborted, so S3 never
// commits a part of a body: readers keep seeing the old object.
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { InputError } from '../../../core/errors.ts';
import type { PutResult } from '../../../core/extension-points/storage.ts';
import { s3Failure, type Where } from './errors.ts';

/** S3's limit on parts per upload. */
export const MAX_PARTS = 10_000;
/** S3's limit on one PutObject or CopyObject. */
export const SINGLE_REQUEST_LIMIT = 5 * 1024 ** 3;
/** Part size of a multipart copy (copies run inside S3; the orchestrator holds no bytes). */
const COPY_PART_BYTES = 512 * 1024 * 1024;

export interface Target extends Where {
  client: S3Client;
  key: string;
  contentType?: string;
  partSize: number;
}

const bodyError = () => new InputError('SVC_ERR_STORAGE_BODY', 'storage body stream must yield bytes, not objects');

async function putSingle(target: Target, body: Uint8Array): Promise<PutResult> {
  try {
    const out = await target.client.send(
      new PutObjectCommand({
        Bucket: target.bucket,
        Key: target.key,
        Body: body,
        ContentLength: body.length,
        ...(target.contentType === undefined ? {} : { ContentType: target.contentType }),
      }),
    );
    return { size: body.length, ...(out.ETag === undefined ? {} : { etag: out.ETag }) };
  } catch (error) {
    throw s3Failure('PutObject', target.key, target, error);
  }
}

/** One multipart upload: parts go up one at a time while the next part is read. */
class MultipartUpload {
  readonly #target: Target;
  readonly #uploadId: string;
  readonly #parts: { PartNumber: number; ETag: string }[] = [];
  #inFlight: Promise<void> = Promise.resolve();
  size = 0;

  private constructor(target: Target, uploadId: string) {
    this.#target = target;
    this.#uploadId = uploadId;
  }

  static async start(target: Target): Promise<MultipartUpload> {
    try {
      const out = await target.client.send(
        new CreateMultipartUploadCommand({
          Bucket: target.bucket,
          Key: target.key,
          ...(target.contentType === undefined ? {} : { ContentType: target.contentType }),
        }),
      );
      if (!out.UploadId) throw new Error('CreateMultipartUpload returned no UploadId');
      return new MultipartUpload(target, out.UploadId);
    } catch (error) {
      throw s3Failure('CreateMultipartUpload', target.key, target, error);
    }
  }

  get id(): string {
    return this.#uploadId;
  }

  /** Queue a part of `body`; waits for the previous part first, so at most one is in flight. */
  async add(body: Uint8Array): Promise<void> {
    const t = this.#target;
    this.size += body.length;
    await this.#queue(`UploadPart`, async (number) =>
      (await t.client.send(new UploadPartCommand({ Bucket: t.bucket, Key: t.key, UploadId: this.#uploadId, PartNumber: number, Body: body, ContentLength: body.length }))).ETag,
    );
  }

  /** Queue a part S3 copies from another object (`send` gets the part number, returns the ETag). */
  async addCopy(bytes: number, send: (number: number) => Promise<string | undefined>): Promise<void> {
    this.size += bytes;
    await this.#queue('UploadPartCopy', send);
  }

  async #queue(operation: string, send: (number: number) => Promise<string | undefined>): Promise<void> {
    await this.#inFlight;
    const number = this.#parts.length + 1;
    if (number > MAX_PARTS) {
      throw new InputError('SVC_ERR_STORAGE_TOO_LARGE', `object is larger than the ${MAX_PARTS * this.#target.partSize}-byte limit`, {
        details: { limit: MAX_PARTS * this.#target.partSize },
      });
    }
    const slot = { PartNumber: number, ETag: '' };
    this.#parts.push(slot);
    const t = this.#target;
    this.#inFlight = send(number)
      .then((etag) => {
        if (!etag) throw new Error(`${operation} ${number} returned no ETag`);
        slot.ETag = etag;
      })
      .catch((error: unknown) => {
        throw s3Failure(`${operation} ${number}`, t.key, t, error);
      });
    // Awaited by the next part and by complete(); observed here so a failure is never unhandled.
    this.#inFlight.catch(() => undefined);
  }

  async complete(): Promise<PutResult> {
    await this.#inFlight;
    const t = this.#target;
    try {
      const out = await t.client.send(
        new CompleteMultipartUploadCommand({ Bucket: t.bucket, Key: t.key, UploadId: this.#uploadId, MultipartUpload: { Parts: this.#parts } }),
      );
      return { size: this.size, ...(out.ETag === undefined ? {} : { etag: out.ETag }) };
    } catch (error) {
      throw s3Failure('CompleteMultipartUpload', t.key, t, error);
    }
  }

  /** Best effort: S3 drops the parts; a lifecycle rule for incomplete uploads covers a failed abort. */
  async abort(): Promise<void> {
    await this.#inFlight.catch(() => undefined);
    const t = this.#target;
    await t.client.send(new AbortMultipartUploadCommand({ Bucket: t.bucket, Key: t.key, UploadId: this.#uploadId })).catch(() => undefined);
  }
}

async function withUpload(target: Target, fill: (upload: MultipartUpload) => Promise<void>): Promise<PutResult> {
  const upload = await MultipartUpload.start(target);
  try {
    await fill(upload);
    return await upload.complete();
  } catch (error) {
    await upload.abort();
    throw error;
  }
}

export async function putBytes(target: Target, body: Uint8Array): Promise<PutResult> {
  if (body.length <= target.partSize) return putSingle(target, body);
  return withUpload(target, async (upload) => {
    for (let offset = 0; offset < body.length; offset += target.partSize) {
      await upload.add(body.subarray(offset, Math.min(offset + target.partSize, body.length)));
    }
  });
}

/** Collects a stream's chunks into parts of exactly `partSize` bytes (the last may be shorter). */
class PartBuffer {
  #chunks: Buffer[] = [];
  #length = 0;
  readonly partSize: number;
  constructor(partSize: number) {
    this.partSize = partSize;
  }
  get length(): number {
    return this.#length;
  }
  push(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
  }
  /** The next full part, or everything left when `final`. */
  take(final: boolean): Buffer | undefined {
    if (this.#length === 0 || (!final && this.#length < this.partSize)) return undefined;
    const all = Buffer.concat(this.#chunks, this.#length);
    const part = final ? all : all.subarray(0, this.partSize);
    const rest = final ? Buffer.alloc(0) : all.subarray(this.partSize);
    this.#chunks = rest.length === 0 ? [] : [rest];
    this.#length = rest.length;
    return part;
  }
}

function asBuffer(chunk: unknown): Buffer {
  if (typeof chunk === 'string') return Buffer.from(chunk);
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
  throw bodyError();
}

export async function putStream(target: Target, body: Readable): Promise<PutResult> {
  const iterator = body[Symbol.asyncIterator]();
  const parts = new PartBuffer(target.partSize);
  // Read the first part whole: a body that ends within it is one PutObject.
  let ended = false;
  while (parts.length <= target.partSize) {
    const next = await iterator.next();
    if (next.done === true) {
      ended = true;
      break;
    }
    parts.push(asBuffer(next.value));
  }
  if (ended) return putSingle(target, parts.take(true) ?? Buffer.alloc(0));
  return withUpload(target, async (upload) => {
    for (;;) {
      for (let part = parts.take(false); part !== undefined; part = parts.take(false)) await upload.add(part);
      const next = await iterator.next();
      if (next.done === true) break;
      parts.push(asBuffer(next.value));
    }
    const last = parts.take(true);
    if (last !== undefined) await upload.add(last);
  }).finally(() => {
    if (!ended) body.destroy();
  });
}

/** Copy larger than one CopyObject allows: UploadPartCopy ranges, copied inside S3. */
export async function copyLarge(target: Target, source: { copySource: string; size: number }): Promise<void> {
  const t = { ...target, partSize: COPY_PART_BYTES };
  await withUpload(t, async (upload) => {
    for (let offset = 0; offset < source.size; offset += COPY_PART_BYTES) {
      const range = `bytes=${offset}-${Math.min(offset + COPY_PART_BYTES, source.size) - 1}`;
      await upload.addCopy(Math.min(COPY_PART_BYTES, source.size - offset), async (number) => {
        const out = await t.client.send(
          new UploadPartCopyCommand({ Bucket: t.bucket, Key: t.key, UploadId: upload.id, PartNumber: number, CopySource: source.copySource, CopySourceRange: range }),
        );
        return out.CopyPartResult?.ETag;
      });
    }
  });
}
