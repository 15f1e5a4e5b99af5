// HTTP side of filesystem storage: the orchestrator serves pre-signed URLs
// `GET|PUT <prefix>/<key>?expires=<unix>&sig=<hmac>` so agents move blobs without credentials.
// Registered in its own encapsulated context: the raw-body parser below affects these routes only.
import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isSvcError, messageOf } from '../../../core/errors.ts';
import { StorageKeyError } from '../../../core/extension-points/storage-key.ts';
import { storagePath, verifyStorageSignature, type PresignMethod } from './presign.ts';
import { StorageTooLargeError, type FilesystemStorage } from './storage.ts';

export interface StorageRoutesOptions {
  storage: FilesystemStorage;
  secret: string | Buffer;
  /** Default `/storage`. */
  prefix?: string;
  /** Largest PUT body accepted, default 5 GiB. */
  maxUploadBytes?: number;
  /** Clock in unix seconds (tests). */
  now?: () => number;
}

const STATUS: Record<string, number> = {
  SVC_ERR_STORAGE_KEY_INVALID: 400,
  SVC_ERR_STORAGE_URL_SIGNATURE: 403,
  SVC_ERR_STORAGE_URL_EXPIRED: 403,
  SVC_ERR_STORAGE_NOT_FOUND: 404,
  SVC_ERR_STORAGE_KEY_CONFLICT: 409,
  SVC_ERR_STORAGE_TOO_LARGE: 413,
  SVC_ERR_STORAGE_UPLOAD_ABORTED: 400,
};

function refuse(reply: FastifyReply, code: string, message: string): FastifyReply {
  return reply
    .code(STATUS[code] ?? 500)
    .header('cache-control', 'no-store')
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ error: { code, message } }));
}

/** Key (decoded per segment) and query of a request under `prefix`; null when not percent-decodable. */
function parseUrl(raw: string, prefix: string): { key: string; params: URLSearchParams } | null {
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  try {
    const key = path
      .slice(prefix.length + 1)
      .split('/')
      .map((part) => decodeURIComponent(part))
      .join('/');
    return { key, params: new URLSearchParams(q === -1 ? '' : raw.slice(q + 1)) };
  } catch {
    return null;
  }
}

/** Signature first (a tampered `expires` is a bad signature), then expiry. */
function checkSignature(params: URLSearchParams, secret: string | Buffer, method: PresignMethod, path: string, now: number) {
  const expires = params.get('expires') ?? '';
  const sig = params.get('sig') ?? '';
  if (!/^\d{1,12}$/.test(expires) || !verifyStorageSignature(secret, method, path, Number(expires), sig)) {
    return { code: 'SVC_ERR_STORAGE_URL_SIGNATURE', message: 'the pre-signed URL signature does not match; ask for a new URL' };
  }
  if (Number(expires) < now) {
    return { code: 'SVC_ERR_STORAGE_URL_EXPIRED', message: 'the pre-signed URL has expired; ask for a new URL' };
  }
  return null;
}

export async function storageRoutes(app: FastifyInstance, options: StorageRoutesOptions): Promise<void> {
  const { storage, secret } = options;
  const prefix = options.prefix ?? '/storage';
  const maxUploadBytes = options.maxUploadBytes ?? 5 * 1024 ** 3;
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));

  // Bodies are streamed to storage as they arrive, whatever their content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  const fail = (request: FastifyRequest, reply: FastifyReply, error: unknown): FastifyReply => {
    if (error instanceof StorageKeyError || (isSvcError(error) && STATUS[error.code] !== undefined)) {
      return refuse(reply, (error as { code: string }).code, messageOf(error));
    }
    request.log.error({ err: error }, 'storage request failed');
    return refuse(reply, 'SVC_ERR_STORAGE_IO', 'storage failed to serve the request');
  };

  /** 400 for a bad key, 403 for a bad or expired signature; otherwise the key. */
  const authorize = (request: FastifyRequest, reply: FastifyReply, method: PresignMethod): string | null => {
    const parsed = parseUrl(request.raw.url ?? '', prefix);
    if (parsed === null) {
      refuse(reply, 'SVC_ERR_STORAGE_KEY_INVALID', 'the storage key in the URL is not valid percent-encoding');
      return null;
    }
    try {
      storage.pathOf(parsed.key);
    } catch (error) {
      refuse(reply, 'SVC_ERR_STORAGE_KEY_INVALID', messageOf(error));
      return null;
    }
    const refusal = checkSignature(parsed.params, secret, method, storagePath(prefix, parsed.key), now());
    if (refusal !== null) {
      refuse(reply, refusal.code, refusal.message);
      return null;
    }
    return parsed.key;
  };

  app.route({
    method: ['GET', 'HEAD'],
    url: `${prefix}/*`,
    exposeHeadRoute: false,
    handler: async (request, reply) => {
      const key = authorize(request, reply, 'GET');
      if (key === null) return reply;
      try {
        const object = await storage.open(key);
        reply
          .code(200)
          .header('content-type', 'application/octet-stream')
          .header('content-length', String(object.size))
          .header('etag', object.etag)
          .header('last-modified', object.modifiedAt.toUTCString())
          .header('cache-control', 'private, no-store');
        if (request.method === 'HEAD') {
          object.stream.destroy();
          return reply.send();
        }
        return reply.send(object.stream);
      } catch (error) {
        return fail(request, reply, error);
      }
    },
  });

  app.route({
    method: 'PUT',
    url: `${prefix}/*`,
    handler: async (request, reply) => {
      const key = authorize(request, reply, 'PUT');
      if (key === null) return reply;
      const declared = request.headers['content-length'];
      if (declared !== undefined && Number(declared) > maxUploadBytes) {
        reply.header('connection', 'close');
        return refuse(reply, 'SVC_ERR_STORAGE_TOO_LARGE', new StorageTooLargeError(maxUploadBytes).message);
      }
      // Through a PassThrough: when storage gives up mid-body it destroys this stream, not the
      // socket, so the refusal can still be sent.
      const body = new PassThrough({ highWaterMark: 1024 * 1024 });
      request.raw.pipe(body);
      request.raw.once('error', (error) => body.destroy(error));
      request.raw.once('close', () => {
        if (!request.raw.complete) body.destroy(new Error('upload aborted by the client'));
      });
      try {
        const written = await storage.put(key, body, { maxBytes: maxUploadBytes });
        if (written.etag !== undefined) reply.header('etag', written.etag);
        return reply.code(200).header('cache-control', 'no-store').send();
      } catch (error) {
        request.raw.unpipe(body);
        // A request that ended early (reset, truncated) is the client's doing: nothing was stored.
        if (!request.raw.complete && request.raw.destroyed) {
          request.log.info({ key, reason: messageOf(error) }, 'storage upload aborted by the client; nothing stored');
          return refuse(reply, 'SVC_ERR_STORAGE_UPLOAD_ABORTED', 'the upload ended before its body was complete; nothing was stored');
        }
        if (error instanceof StorageTooLargeError) reply.header('connection', 'close');
        return fail(request, reply, error);
      }
    },
  });
}
