// Downloads through pre-signed URLs (data moves between agent and storage directly), hashed
// while streaming so a tarball is never read twice.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { SvcError, UnavailableError, messageOf } from '../../core/errors.ts';

/** The transfer itself failed (network, HTTP status, disk). */
export class DownloadError extends UnavailableError {}
/** The bytes arrived but their digest is not the one the orchestrator named. */
export class DigestMismatchError extends SvcError {}

/** `sha256:<hex>` or bare hex → lowercase hex; null when the value is no sha256 digest. */
export function normalizeDigest(value: string): string | null {
  const hex = value.trim().toLowerCase().replace(/^sha256:/, '');
  return /^[0-9a-f]{64}$/.test(hex) ? hex : null;
}

/** Where a URL points, with its query (the signature) removed: safe for logs and errors. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

export interface DownloadResult {
  sha256: string;
  bytes: number;
}

export async function downloadToFile(url: string, dest: string, options: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<DownloadResult> {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 15 * 60_000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await fetch(url, { signal, redirect: 'follow' });
  } catch (error) {
    throw new DownloadError('SVC_ERR_AGENT_DOWNLOAD', `download from ${describeUrl(url)} failed: ${messageOf(error)}`, { cause: error });
  }
  if (!response.ok || response.body === null) {
    await response.body?.cancel().catch(() => undefined);
    throw new DownloadError('SVC_ERR_AGENT_DOWNLOAD', `download from ${describeUrl(url)} failed: HTTP ${response.status}`, { details: { status: response.status } });
  }
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), tap, createWriteStream(dest), { signal });
  } catch (error) {
    throw new DownloadError('SVC_ERR_AGENT_DOWNLOAD', `download from ${describeUrl(url)} failed: ${messageOf(error)}`, { cause: error });
  }
  return { sha256: hash.digest('hex'), bytes };
}

export async function uploadFile(url: string, file: string, options: { signal?: AbortSignal } = {}): Promise<void> {
  const size = (await stat(file)).size;
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'PUT',
      body: Readable.toWeb(createReadStream(file)) as unknown as NonNullable<RequestInit["body"]>,
      headers: { 'content-length': String(size), 'content-type': 'application/gzip' },
      duplex: 'half',
      ...(options.signal ? { signal: options.signal } : {}),
    } as RequestInit);
  } catch (error) {
    throw new DownloadError('SVC_ERR_AGENT_UPLOAD', `upload to ${describeUrl(url)} failed: ${messageOf(error)}`, { cause: error });
  }
  await response.body?.cancel().catch(() => undefined);
  if (!response.ok) throw new DownloadError('SVC_ERR_AGENT_UPLOAD', `upload to ${describeUrl(url)} failed: HTTP ${response.status}`);
}

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
