// Start-up check of the configured storage: write, read back the size of, and delete one small
// object. A bucket that cannot be reached or written would otherwise surface job by job as
// missing caches and payloads; it stops the start instead, with one line saying what failed.
import { randomUUID } from 'node:crypto';
import { UnavailableError, messageOf } from '../../../core/errors.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';

/** A hang guard: a storage endpoint that never answers must not hold the start forever. */
export const STORAGE_CHECK_TIMEOUT_MS = 90_000;

async function probe(storage: StorageExtensionPoint, key: string): Promise<void> {
  const body = Buffer.from(`svc start-up check ${new Date().toISOString()}\n`);
  await storage.put(key, body);
  try {
    const info = await storage.head(key);
    if (info === null || info.size !== body.length) throw new Error(`the probe object ${key} did not read back after it was written`);
  } finally {
    await storage.delete(key);
  }
}

export async function checkStorageAtStart(storage: StorageExtensionPoint, type: string, nodeId: string, timeoutMs = STORAGE_CHECK_TIMEOUT_MS): Promise<void> {
  const key = `_svc/start-check/${nodeId}-${randomUUID()}`;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
  });
  try {
    await Promise.race([probe(storage, key), timeout]);
  } catch (error) {
    const reason = messageOf(error).replace(/\s+/g, ' ').trim();
    throw new UnavailableError(
      'SVC_ERR_STORAGE_UNREACHABLE',
      `storage "${type}" cannot be reached or written at start-up: ${reason}; fix the SVC_STORAGE_* settings (docs/config.md) or the bucket, then start again`,
      { cause: error, details: { type } },
    );
  } finally {
    clearTimeout(timer);
  }
}
