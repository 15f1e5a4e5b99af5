// Pre-signed URL signatures for filesystem storage: HMAC-SHA256 over
// `<METHOD>\n<path>\n<expires>`, where path is the route path with the decoded key
// (`/storage/source/v2/org/abc.tar.gz`) so re-encoding by proxies does not break it.
import { createHmac, timingSafeEqual } from 'node:crypto';

export type PresignMethod = 'GET' | 'PUT';

export function storagePath(prefix: string, key: string): string {
  return `${prefix}/${key}`;
}

export function signStoragePath(secret: string | Buffer, method: PresignMethod, path: string, expires: number): string {
  return createHmac('sha256', secret).update(`${method}\n${path}\n${expires}`).digest('hex');
}

/** Constant-time check of a hex signature. */
export function verifyStorageSignature(secret: string | Buffer, method: PresignMethod, path: string, expires: number, signature: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(signature)) return false;
  const expected = Buffer.from(signStoragePath(secret, method, path, expires), 'hex');
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

/** Each segment percent-encoded; slashes between segments kept. */
export function encodeKeyForUrl(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

export function presignedUrl(options: {
  publicBaseUrl: string;
  prefix: string;
  secret: string | Buffer;
  method: PresignMethod;
  key: string;
  expires: number;
}): string {
  const sig = signStoragePath(options.secret, options.method, storagePath(options.prefix, options.key), options.expires);
  const base = options.publicBaseUrl.replace(/\/+$/, '');
  return `${base}${options.prefix}/${encodeKeyForUrl(options.key)}?expires=${options.expires}&sig=${sig}`;
}
