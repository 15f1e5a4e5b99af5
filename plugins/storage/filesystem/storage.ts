// Filesystem storage: one file per object under a root directory. Writes go to a temp file in
// the target's directory, are fsynced, then renamed over the target, so a reader sees the old
// object or the new one, never a torn file, and a failed write leaves nothing behind.
import { randomUUID } from 'node:crypto';
import { constants as fsConstants, type BigIntStats } from 'node:fs';
import { copyFile, mkdir, open, readdir, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { ConflictError, InputError, NotFoundError, SvcError, messageOf } from '../../../core/errors.ts';
import {
  DEFAULT_LIST_LIMIT,
  DEFAULT_PRESIGN_EXPIRY_SECONDS,
  MAX_PRESIGN_EXPIRY_SECONDS,
  type ListOptions,
  type ListPage,
  type ListedObject,
  type ObjectInfo,
  type PresignRequest,
  type PutOptions,
  type PutResult,
  type StorageExtensionPoint,
} from '../../../core/extension-points/storage.ts';
import { StorageKeyError, assertStorageKey, assertStoragePrefix } from '../../../core/extension-points/storage-key.ts';
import { GroupSync } from './group-sync.ts';
import { writeInThread } from './writer-thread.ts';
import { presignedUrl } from './presign.ts';

/** Temp files share the target's directory; keys may not use this prefix for any segment. */
export const TEMP_PREFIX = '.svc-tmp-';

/**
 * In-memory bodies up to this size are written by the process's writer thread (writer-thread.ts:
 * one message instead of nine pool round trips); larger ones and streams take the pool path, so
 * a big upload never holds up the small puts queued behind it.
 */
export const THREAD_WRITE_MAX_BYTES = 4 * 1024 * 1024;

export interface FilesystemPresignOptions {
  publicBaseUrl: string;
  secret: string | Buffer;
  /** Route prefix the orchestrator serves the URLs under, e.g. `/storage`. */
  prefix: string;
}

export interface FilesystemStorageOptions {
  root: string;
  presign?: FilesystemPresignOptions;
  logger?: Logger;
}

/** An opened object: the stream reads the version that existed when it was opened. */
export interface OpenedObject {
  stream: Readable;
  size: number;
  modifiedAt: Date;
  etag: string;
}

export class StorageTooLargeError extends InputError {
  constructor(limit: number) {
    super('SVC_ERR_STORAGE_TOO_LARGE', `object is larger than the ${limit}-byte limit`, { details: { limit } });
  }
}

const notFound = (key: string): NotFoundError =>
  new NotFoundError('SVC_ERR_STORAGE_NOT_FOUND', `no object at storage key "${key}"`, { details: { key } });

const conflict = (key: string, cause: unknown): ConflictError =>
  new ConflictError(
    'SVC_ERR_STORAGE_KEY_CONFLICT',
    `storage key "${key}" clashes with another key used as a folder (filesystem storage cannot hold both "a/b" and "a/b/c")`,
    { cause, details: { key } },
  );

const errno = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | null)?.code;

/** Derived from inode, size and mtime: the same for `put`'s result and later `head`s, new on every write. */
function etagOf(st: Pick<BigIntStats, 'ino' | 'size' | 'mtimeNs'>): string {
  return `"${st.ino.toString(16)}-${st.size.toString(16)}-${st.mtimeNs.toString(16)}"`;
}

async function writeAll(handle: FileHandle, chunk: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
}

export class FilesystemStorage implements StorageExtensionPoint {
  readonly root: string;
  readonly #presign: FilesystemPresignOptions | undefined;
  readonly #logger: Logger | undefined;
  /** Directory fsyncs under way or waiting, shared by concurrent puts into one directory. */
  readonly #dirSyncs = new Map<string, GroupSync>();
  /** Directory fsyncs run so far (concurrent puts share them; tests read it). */
  directorySyncs = 0;

  constructor(options: FilesystemStorageOptions) {
    this.root = resolve(options.root);
    this.#presign = options.presign;
    this.#logger = options.logger;
  }

  /** Create the root directory (idempotent). */
  async init(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    const info = await stat(this.root);
    if (!info.isDirectory()) throw new SvcError('SVC_ERR_STORAGE_ROOT', `storage root ${this.root} is not a directory`);
  }

  /** Absolute path of a key; throws StorageKeyError for anything that is not a plain relative key. */
  pathOf(key: unknown): string {
    assertStorageKey(key);
    const segments = key.split('/');
    if (segments.some((s) => s.startsWith(TEMP_PREFIX))) {
      throw new StorageKeyError('key', key, `segments must not start with "${TEMP_PREFIX}" (reserved for temp files)`);
    }
    const path = join(this.root, ...segments);
    // The key rules already exclude this; checked again because escaping the root is the one
    // thing this class must never do.
    if (!path.startsWith(this.root + sep)) throw new StorageKeyError('key', key, 'resolves outside the storage root');
    return path;
  }

  async put(key: string, body: Buffer | Uint8Array | Readable, options: PutOptions & { maxBytes?: number } = {}): Promise<PutResult> {
    const target = this.pathOf(key);
    const limit = options.maxBytes ?? Number.POSITIVE_INFINITY;
    if (!(body instanceof Readable) && !(body instanceof Uint8Array)) {
      throw new InputError('SVC_ERR_STORAGE_BODY', 'storage body must be a Buffer, Uint8Array or Readable stream');
    }
    const dir = dirname(target);
    const temp = join(dir, `${TEMP_PREFIX}${randomUUID()}`);
    if (body instanceof Uint8Array && body.length <= THREAD_WRITE_MAX_BYTES) {
      if (body.length > limit) throw new StorageTooLargeError(limit);
      return this.#putInThread(key, dir, temp, target, body);
    }
    let handle: FileHandle | undefined;
    try {
      handle = await this.#openTemp(key, dir, temp);
      let size = 0;
      if (body instanceof Readable) {
        for await (const chunk of body) {
          const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          if (!(bytes instanceof Uint8Array)) {
            throw new InputError('SVC_ERR_STORAGE_BODY', 'storage body stream must yield bytes, not objects');
          }
          size += bytes.length;
          if (size > limit) throw new StorageTooLargeError(limit);
          await writeAll(handle, bytes);
        }
      } else {
        if (body.length > limit) throw new StorageTooLargeError(limit);
        size = body.length;
        await writeAll(handle, body);
      }
      await handle.sync();
      const st = await handle.stat({ bigint: true });
      await handle.close();
      handle = undefined;
      try {
        await rename(temp, target);
      } catch (error) {
        if (errno(error) === 'EISDIR' || errno(error) === 'ENOTEMPTY' || errno(error) === 'EEXIST') throw conflict(key, error);
        throw error;
      }
      await this.#sharedSyncDir(dir);
      return { size, etag: etagOf(st) };
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await unlink(temp).catch(() => undefined);
      throw error;
    }
  }

  /** Open an object for reading with its size (the HTTP route needs both at once). */
  async open(key: string): Promise<OpenedObject> {
    const path = this.pathOf(key);
    let handle: FileHandle;
    try {
      handle = await open(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
    } catch (error) {
      const code = errno(error);
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') throw notFound(key);
      throw error;
    }
    try {
      const st = await handle.stat({ bigint: true });
      if (!st.isFile()) throw notFound(key);
      return {
        stream: handle.createReadStream({ autoClose: true }),
        size: Number(st.size),
        modifiedAt: new Date(Number(st.mtimeMs)),
        etag: etagOf(st),
      };
    } catch (error) {
      await handle.close().catch(() => undefined);
      throw error;
    }
  }

  async get(key: string): Promise<Readable> {
    return (await this.open(key)).stream;
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const path = this.pathOf(key);
    try {
      const st = await stat(path, { bigint: true });
      if (!st.isFile()) return null;
      return { size: Number(st.size), modifiedAt: new Date(Number(st.mtimeMs)), etag: etagOf(st) };
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.pathOf(key);
    try {
      await unlink(path);
    } catch (error) {
      // Missing, or a folder of other keys: either way there is no object at this key.
      if (['ENOENT', 'ENOTDIR', 'EISDIR', 'EPERM'].includes(errno(error) ?? '')) return;
      throw error;
    }
  }

  async copy(from: string, to: string): Promise<void> {
    const source = this.pathOf(from);
    const target = this.pathOf(to);
    const info = await this.head(from);
    if (info === null) throw notFound(from);
    if (source === target) return;
    const dir = dirname(target);
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      if (errno(error) === 'EEXIST' || errno(error) === 'ENOTDIR') throw conflict(to, error);
      throw error;
    }
    const temp = join(dir, `${TEMP_PREFIX}${randomUUID()}`);
    try {
      try {
        await copyFile(source, temp, fsConstants.COPYFILE_EXCL);
      } catch (error) {
        if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') throw notFound(from);
        throw error;
      }
      const handle = await open(temp, 'r+');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      try {
        await rename(temp, target);
      } catch (error) {
        if (errno(error) === 'EISDIR' || errno(error) === 'ENOTEMPTY' || errno(error) === 'EEXIST') throw conflict(to, error);
        throw error;
      }
      await this.#sharedSyncDir(dir);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw error;
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
    // Start from the deepest folder the prefix names in whole segments.
    const slash = prefix.lastIndexOf('/');
    const base = slash === -1 ? '' : prefix.slice(0, slash + 1);
    const found: ListedObject[] = [];

    // Entries are visited in key order: a folder sorts as `name/`, so the walk yields keys sorted.
    const walk = async (dir: string, keyPrefix: string): Promise<boolean> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return false;
        throw error;
      }
      const items = entries
        .filter((e) => !e.name.startsWith(TEMP_PREFIX) && (e.isFile() || e.isDirectory()))
        .map((e) => ({ name: e.name, folder: e.isDirectory(), order: keyPrefix + e.name + (e.isDirectory() ? '/' : '') }))
        .sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
      for (const item of items) {
        if (item.folder) {
          const sub = item.order;
          if (!sub.startsWith(prefix) && !prefix.startsWith(sub)) continue;
          // Every key below `sub` is before `after`: skip the whole folder.
          if (after !== undefined && after >= sub && !after.startsWith(sub)) continue;
          if (await walk(join(dir, item.name), sub)) return true;
          continue;
        }
        const key = keyPrefix + item.name;
        if (!key.startsWith(prefix) || (after !== undefined && key <= after)) continue;
        let st;
        try {
          st = await stat(join(dir, item.name));
        } catch (error) {
          if (errno(error) === 'ENOENT') continue; // deleted while listing
          throw error;
        }
        found.push({ key, size: st.size, modifiedAt: st.mtime });
        if (found.length > limit) return true;
      }
      return false;
    };
    await walk(base === '' ? this.root : join(this.root, ...base.slice(0, -1).split('/')), base);
    const more = found.length > limit;
    const objects = more ? found.slice(0, limit) : found;
    return { objects, next: more ? (objects[objects.length - 1] as ListedObject).key : null };
  }

  async presign(request: PresignRequest): Promise<string> {
    if (this.#presign === undefined) {
      throw new SvcError('SVC_ERR_STORAGE_PRESIGN_UNCONFIGURED', 'filesystem storage was created without pre-signing options');
    }
    if (request.method !== 'GET' && request.method !== 'PUT') {
      throw new InputError('SVC_ERR_STORAGE_PRESIGN_METHOD', `pre-signed URLs are for GET or PUT, not ${String(request.method)}`);
    }
    this.pathOf(request.key);
    const seconds = request.expiresInSeconds ?? DEFAULT_PRESIGN_EXPIRY_SECONDS;
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_PRESIGN_EXPIRY_SECONDS) {
      throw new InputError(
        'SVC_ERR_STORAGE_PRESIGN_EXPIRY',
        `expiresInSeconds must be an integer from 1 to ${MAX_PRESIGN_EXPIRY_SECONDS}, got ${String(seconds)}`,
      );
    }
    return presignedUrl({
      publicBaseUrl: this.#presign.publicBaseUrl,
      prefix: this.#presign.prefix,
      secret: this.#presign.secret,
      method: request.method,
      key: request.key,
      expires: Math.floor(Date.now() / 1000) + seconds,
    });
  }

  /**
   * The temp file, creating its directory only when it is missing: most puts go into a
   * directory that exists, and a mkdir per put was one more filesystem call each.
   */
  async #openTemp(key: string, dir: string, temp: string): Promise<FileHandle> {
    try {
      return await open(temp, 'wx', 0o644);
    } catch (error) {
      if (errno(error) === 'ENOTDIR') throw conflict(key, error);
      if (errno(error) !== 'ENOENT') throw error;
    }
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      if (errno(error) === 'EEXIST' || errno(error) === 'ENOTDIR') throw conflict(key, error);
      throw error;
    }
    return open(temp, 'wx', 0o644);
  }

  async #putInThread(key: string, dir: string, temp: string, target: string, bytes: Uint8Array): Promise<PutResult> {
    const result = await writeInThread({ dir, temp, target, bytes });
    if (!result.ok) {
      const cause = Object.assign(new Error(result.message), { code: result.code });
      const clash =
        (result.stage === 'open' && result.code === 'ENOTDIR') ||
        (result.stage === 'mkdir' && (result.code === 'EEXIST' || result.code === 'ENOTDIR')) ||
        (result.stage === 'rename' && (result.code === 'EISDIR' || result.code === 'ENOTEMPTY' || result.code === 'EEXIST'));
      throw clash ? conflict(key, cause) : cause;
    }
    if (result.dirSynced) this.directorySyncs += 1;
    if (result.dirSyncError !== undefined) {
      this.#logger?.warn({ dir, reason: result.dirSyncError }, 'could not fsync storage directory');
    }
    return { size: bytes.length, etag: etagOf(result) };
  }

  /** #syncDir shared with the other puts into `dir` at the moment (group-sync.ts). */
  #sharedSyncDir(dir: string): Promise<void> {
    let group = this.#dirSyncs.get(dir);
    if (group === undefined) {
      group = new GroupSync(() => this.#syncDir(dir));
      this.#dirSyncs.set(dir, group);
    }
    const done = group.request();
    const owner = group;
    return done.finally(() => {
      if (owner.idle && this.#dirSyncs.get(dir) === owner) this.#dirSyncs.delete(dir);
    });
  }

  /** Make a rename durable: fsync the directory that holds the new entry. */
  async #syncDir(dir: string): Promise<void> {
    this.directorySyncs += 1;
    let handle: FileHandle | undefined;
    try {
      handle = await open(dir, 'r');
      await handle.sync();
    } catch (error) {
      this.#logger?.warn({ err: error, dir, reason: messageOf(error) }, 'could not fsync storage directory');
    } finally {
      await handle?.close().catch(() => undefined);
    }
  }
}
