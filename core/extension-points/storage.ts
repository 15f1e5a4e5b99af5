// Storage extension point: blobs (source and dependency tarballs, user caches, event-log
// payloads, remote-run overlays). Agents move data to and from storage directly through
// pre-signed URLs; the orchestrator uses the methods below.
import type { Readable } from 'node:stream';
import type { FastifyPluginAsync } from 'fastify';
import { createExtensionPointRef, type PluginInstance } from './ref.ts';

/** Spec "Limits": pre-signed download URL expiry is 15 minutes. */
export const DEFAULT_PRESIGN_EXPIRY_SECONDS = 900;
/** Upper bound on any pre-signed URL's lifetime (S3's own limit is 7 days). */
export const MAX_PRESIGN_EXPIRY_SECONDS = 7 * 24 * 3600;
/** Default and maximum page size for `list`. */
export const DEFAULT_LIST_LIMIT = 1000;

export interface PutOptions {
  contentType?: string;
}

export interface PutResult {
  size: number;
  etag?: string;
}

export interface ObjectInfo {
  size: number;
  modifiedAt: Date;
  etag?: string;
}

export interface ListedObject {
  key: string;
  size: number;
  modifiedAt: Date;
}

export interface ListOptions {
  /** Return only keys strictly after this one (the previous page's `next`). */
  after?: string;
  /** Page size, 1..1000, default 1000. */
  limit?: number;
}

export interface ListPage {
  /** Sorted by key. */
  objects: ListedObject[];
  /** Pass as `after` for the next page; null when this is the last page. */
  next: string | null;
}

export interface PresignRequest {
  method: 'GET' | 'PUT';
  key: string;
  /** Default 900 (15 minutes); 1..604800. */
  expiresInSeconds?: number;
  /**
   * Who will use the URL: `agent` (default; S3 signs it for SVC_STORAGE_EXTERNAL_ENDPOINT) or
   * `developer` (SVC_STORAGE_UPLOAD_ENDPOINT). Storages whose URLs every party reaches at one
   * address (filesystem: the orchestrator's public URL) ignore it.
   */
  audience?: PresignAudience;
}

export type PresignAudience = 'agent' | 'developer';

export interface StorageExtensionPoint extends PluginInstance {
  /** Write a whole object atomically: readers see the old object or the new one, never a part. */
  put(key: string, body: Buffer | Uint8Array | Readable, options?: PutOptions): Promise<PutResult>;
  /** Stream an object. Throws NotFoundError (`SVC_ERR_STORAGE_NOT_FOUND`) when missing. */
  get(key: string): Promise<Readable>;
  head(key: string): Promise<ObjectInfo | null>;
  /** Idempotent: deleting a missing key succeeds. */
  delete(key: string): Promise<void>;
  list(prefix: string, options?: ListOptions): Promise<ListPage>;
  /** Atomic copy (two-phase cache commit writes a staging key then copies it into place). */
  copy(from: string, to: string): Promise<void>;
  /** A URL an agent or developer can use without credentials until it expires. */
  presign(request: PresignRequest): Promise<string>;
  /**
   * Routes this storage needs on the orchestrator's HTTP server (filesystem serves its own
   * pre-signed URLs there); absent for storages that serve URLs themselves (S3).
   */
  httpRoutes?: FastifyPluginAsync;
}

export const storageExtensionPoint = createExtensionPointRef<StorageExtensionPoint>()({
  id: 'storage',
  kind: 'storage',
  members: {
    put: 'function',
    get: 'function',
    head: 'function',
    delete: 'function',
    list: 'function',
    copy: 'function',
    presign: 'function',
  },
});
