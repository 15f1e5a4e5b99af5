// The user cache (`ctx.cache.restore/save`, spec "Cache flows"). Entries are immutable per
// (org, scope, key). A save is two-phase: the agent uploads to a temporary object, then
// `save.complete` commits it by copy under a row lock, so a crashed upload never leaves a
// committed entry. Trusted refs read and write `shared`; untrusted refs read `iso/<run>` then
// `shared` and write only `iso/<run>`, so their writes are never visible to trusted reads.
import { randomUUID } from 'node:crypto';
import type { Static } from 'typebox';
import { Type } from 'typebox';
import type {
  CacheUserRestoreRequest,
  CacheUserRestoreResponse,
  CacheUserSaveComplete,
  CacheUserSaveRequest,
  CacheUserSaveResponse,
} from '../../../schemas/wire/agent.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { ConflictError, InputError, NotFoundError } from '../../../core/errors.ts';
import { PRESIGN_SECONDS, type AgentRef, type CacheDeps } from './build-cache.ts';
import { activeJobOf, isTrustedRef, type AgentJobRow } from './job-access.ts';
import { checkCacheName, checkOrg, checkUserKey, isoScope, userObjectKey, userTempKey, type UserScope } from './keys.ts';

export interface UserCacheOptions extends CacheDeps {
  /** Entries not read for this many days are expired (spec `SVC_CACHE_TTL_DAYS`). */
  ttlDays: number;
  /** Per-org byte quota; undefined means none. */
  quotaBytes: number | undefined;
}

export interface Scopes {
  /** In resolution order for exact keys. */
  read: UserScope[];
  write: UserScope;
}

export function scopesOf(job: Pick<AgentJobRow, 'trust_tier' | 'subject_kind' | 'run_id'>): Scopes {
  if (isTrustedRef(job)) return { read: ['shared'], write: 'shared' };
  const iso = isoScope(job.run_id);
  return { read: [iso, 'shared'], write: iso };
}

const EntryRow = Type.Object({
  id: Type.String(),
  key: Type.String(),
  scope: Type.String(),
  object_key: Type.String(),
  tar_hash: Type.String(),
});
type EntryRow = Static<typeof EntryRow>;

async function findEntry(pool: DatabasePool, org: string, scopes: readonly string[], ttlDays: number, match: { exact: string } | { prefix: string }) {
  const live = sql.fragment`last_read_at > clock_timestamp() - make_interval(days => ${ttlDays})`;
  if ('exact' in match) {
    // Exact keys: the first read scope holding the key wins (iso before shared).
    return pool.maybeOne(sqlTyped(EntryRow)`
      SELECT id::text AS id, key, scope, object_key, tar_hash FROM user_cache_entries
      WHERE org_id = ${org} AND scope = ANY(${sql.array(scopes, 'text')}) AND key = ${match.exact} AND ${live}
      ORDER BY array_position(${sql.array(scopes, 'text')}, scope) LIMIT 1`);
  }
  // Prefixes: the newest entry whose key starts with the prefix, across the read scopes.
  return pool.maybeOne(sqlTyped(EntryRow)`
    SELECT id::text AS id, key, scope, object_key, tar_hash FROM user_cache_entries
    WHERE org_id = ${org} AND scope = ANY(${sql.array(scopes, 'text')}) AND left(key, char_length(${match.prefix})) = ${match.prefix} AND ${live}
    ORDER BY created_at DESC, id DESC LIMIT 1`);
}

/**
 * Resolves a restore: the exact key across the read scopes, then each restore-key prefix in
 * order. An entry whose object vanished is dropped and the same step retried (bounded).
 */
export async function resolveRestore(options: UserCacheOptions, org: string, scopes: readonly string[], key: string, restoreKeys: readonly string[]): Promise<EntryRow | null> {
  const storage = options.storage as StorageExtensionPoint;
  const steps: Array<{ exact: string } | { prefix: string }> = [{ exact: key }, ...restoreKeys.map((prefix) => ({ prefix }))];
  let repairs = 0;
  for (const step of steps) {
    for (;;) {
      const row = await findEntry(options.pool, org, scopes, options.ttlDays, step);
      if (row === null) break;
      if ((await storage.head(row.object_key)) !== null) return row;
      options.logger.warn({ org, key: row.key, objectKey: row.object_key }, 'user cache object missing; entry dropped');
      await options.pool.query(sql.unsafe`DELETE FROM user_cache_entries WHERE id = ${row.id}`);
      if (++repairs > 10) return null;
    }
  }
  return null;
}

export async function answerRestore(
  options: UserCacheOptions,
  agent: AgentRef,
  message: Static<typeof CacheUserRestoreRequest>,
): Promise<Static<typeof CacheUserRestoreResponse>> {
  const job = await activeJobOf(options.pool, agent.agentId, message.jobId);
  checkUserKey('key', message.key);
  const restoreKeys = message.restoreKeys ?? [];
  restoreKeys.forEach((k, i) => checkUserKey(`restoreKeys.${i}`, k));
  const miss = { type: 'cache.user.restore.response' as const, requestId: message.requestId, hit: false };
  if (options.storage === undefined) return miss;
  const org = checkOrg(job.org_id);
  const row = await resolveRestore(options, org, scopesOf(job).read, message.key, restoreKeys);
  if (row === null) return miss;
  await options.pool.query(sql.unsafe`UPDATE user_cache_entries SET last_read_at = clock_timestamp() WHERE id = ${row.id}`);
  const downloadUrl = await options.storage.presign({ method: 'GET', key: row.object_key, expiresInSeconds: PRESIGN_SECONDS });
  return { type: 'cache.user.restore.response', requestId: message.requestId, hit: true, matchedKey: row.key, downloadUrl, tarHash: row.tar_hash };
}

const Exists = Type.Object({ id: Type.String() });

export async function answerSaveRequest(
  options: UserCacheOptions,
  agent: AgentRef,
  message: Static<typeof CacheUserSaveRequest>,
): Promise<Static<typeof CacheUserSaveResponse>> {
  const job = await activeJobOf(options.pool, agent.agentId, message.jobId);
  checkUserKey('key', message.key);
  const skip = { type: 'cache.user.save.response' as const, requestId: message.requestId, skip: true };
  if (options.storage === undefined) {
    options.logger.info({ jobId: job.job_id }, 'user cache save skipped: no cache storage configured');
    return skip;
  }
  const org = checkOrg(job.org_id);
  const scope = scopesOf(job).write;
  // Immutable keys: an existing exact key in the write scope is never overwritten.
  const existing = await options.pool.maybeOne(sqlTyped(Exists)`
    SELECT id::text AS id FROM user_cache_entries WHERE org_id = ${org} AND scope = ${scope} AND key = ${message.key}`);
  if (existing !== null) return skip;
  const uploadId = randomUUID();
  const tempKey = userTempKey(org, uploadId);
  const inserted = await options.pool.maybeOne(sqlTyped(Exists)`
    INSERT INTO user_cache_uploads (id, org_id, scope, key, temp_key, job_id, request_id)
    VALUES (${uploadId}, ${org}, ${scope}, ${message.key}, ${tempKey}, ${job.job_id}, ${message.requestId})
    ON CONFLICT (job_id, request_id) DO NOTHING RETURNING id::text AS id`);
  if (inserted === null) {
    throw new ConflictError('SVC_ERR_CACHE_REQUEST_DUPLICATE', `request id ${message.requestId} was already used for a cache save of job ${job.job_id}; use a new request id`);
  }
  const uploadUrl = await options.storage.presign({ method: 'PUT', key: tempKey, expiresInSeconds: PRESIGN_SECONDS });
  return { type: 'cache.user.save.response', requestId: message.requestId, uploadUrl, skip: false };
}

const UploadRow = Type.Object({ id: Type.String(), org_id: Type.String(), scope: Type.String(), key: Type.String(), temp_key: Type.String() });

export interface SaveOutcome {
  committed: boolean;
  /** Set when committed. */
  objectKey?: string;
  evicted: number;
}

/**
 * `cache.user.save.complete`: verifies the temporary object (exists, size matches), then commits
 * it by copy and records the entry in one transaction, deletes the temporary object and
 * enforces the org quota. A key committed meanwhile by another save wins; this one is dropped.
 */
export async function completeSave(options: UserCacheOptions, agent: AgentRef, message: Static<typeof CacheUserSaveComplete>): Promise<SaveOutcome> {
  const job = await activeJobOf(options.pool, agent.agentId, message.jobId);
  checkUserKey('key', message.key);
  checkCacheName('tarHash', message.tarHash);
  const storage = options.storage;
  if (storage === undefined) return { committed: false, evicted: 0 };
  const upload = await options.pool.maybeOne(sqlTyped(UploadRow)`
    SELECT id::text AS id, org_id, scope, key, temp_key FROM user_cache_uploads WHERE job_id = ${job.job_id} AND request_id = ${message.requestId}`);
  if (upload === null) {
    throw new NotFoundError('SVC_ERR_CACHE_UPLOAD_UNKNOWN', `no pending cache save for request ${message.requestId} of job ${job.job_id} (never requested, already completed, or expired)`);
  }
  if (upload.key !== message.key) {
    throw new InputError('SVC_ERR_CACHE_KEY_MISMATCH', `save.complete names key ${JSON.stringify(message.key.slice(0, 80))} but the request was for ${JSON.stringify(upload.key.slice(0, 80))}`);
  }
  const discard = async (): Promise<void> => {
    await options.pool.query(sql.unsafe`DELETE FROM user_cache_uploads WHERE id = ${upload.id}`);
    await storage.delete(upload.temp_key);
  };
  const info = await storage.head(upload.temp_key);
  if (info === null) {
    throw new NotFoundError('SVC_ERR_CACHE_UPLOAD_MISSING', `nothing was uploaded for cache key ${JSON.stringify(message.key.slice(0, 80))}; upload to the URL from save.response first`);
  }
  if (info.size !== message.sizeBytes) {
    await discard();
    throw new InputError('SVC_ERR_CACHE_SIZE_MISMATCH', `uploaded object is ${info.size} bytes but save.complete says ${message.sizeBytes}; the upload was discarded, save again`);
  }
  if (options.quotaBytes !== undefined && info.size > options.quotaBytes) {
    await discard();
    throw new InputError('SVC_ERR_CACHE_TOO_LARGE', `cache entry of ${info.size} bytes exceeds the org's user cache quota of ${options.quotaBytes} bytes; it was not saved`);
  }
  const scope = upload.scope as UserScope;
  const objectKey = userObjectKey(upload.org_id, scope, upload.key);
  const entryId = randomUUID();
  const committed = await options.pool.transaction(async (tx) => {
    // Claiming the upload row keeps the stale-upload sweeper away from it while we copy.
    const claimed = await tx.maybeOne(sqlTyped(Exists)`DELETE FROM user_cache_uploads WHERE id = ${upload.id} RETURNING id::text AS id`);
    if (claimed === null) return null;
    const row = await tx.maybeOne(sqlTyped(Exists)`
      INSERT INTO user_cache_entries (id, org_id, scope, key, object_key, tar_hash, size_bytes, run_id, job_id)
      VALUES (${entryId}, ${upload.org_id}, ${scope}, ${upload.key}, ${objectKey}, ${message.tarHash}, ${info.size}, ${job.run_id}, ${job.job_id})
      ON CONFLICT (org_id, scope, key) DO NOTHING RETURNING id::text AS id`);
    // The row lock on the new entry is held until commit: a racing save of the same key waits,
    // then finds the conflict, so only one of them ever copies into the final object.
    if (row !== null) await storage.copy(upload.temp_key, objectKey);
    return row !== null;
  });
  await storage.delete(upload.temp_key);
  if (committed === null) {
    throw new NotFoundError('SVC_ERR_CACHE_UPLOAD_UNKNOWN', `cache save for request ${message.requestId} expired before it completed; save again`);
  }
  if (!committed) {
    options.logger.info({ org: upload.org_id, scope, key: upload.key }, 'user cache key committed meanwhile by another save; this upload dropped');
    return { committed: false, evicted: 0 };
  }
  const evicted = options.quotaBytes === undefined ? 0 : await enforceQuota(options, upload.org_id, options.quotaBytes, entryId);
  options.logger.info({ org: upload.org_id, scope, key: upload.key, size: info.size, evicted }, 'user cache entry committed');
  return { committed: true, objectKey, evicted };
}

const Evicted = Type.Object({ object_key: Type.String() });

/**
 * Evicts the least recently read entries of `org` until its total fits `quotaBytes`; `keep`
 * (the entry just committed) is counted first and never evicted. Returns how many went.
 */
export async function enforceQuota(options: CacheDeps, org: string, quotaBytes: number, keep: string | null = null): Promise<number> {
  const keepId = keep ?? '00000000-0000-0000-0000-000000000000';
  const evicted = await options.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${`svc-user-cache-quota:${org}`}, 0))`);
    return tx.any(sqlTyped(Evicted)`
      WITH ranked AS (
        SELECT id, sum(size_bytes) OVER (ORDER BY (id = ${keepId}::uuid) DESC, last_read_at DESC, created_at DESC, id DESC) AS running
        FROM user_cache_entries WHERE org_id = ${org}
      )
      DELETE FROM user_cache_entries u USING ranked r
      WHERE u.id = r.id AND r.running > ${quotaBytes} AND u.id <> ${keepId}::uuid
      RETURNING u.object_key`);
  });
  for (const row of evicted) await options.storage?.delete(row.object_key);
  if (evicted.length > 0) options.logger.info({ org, evicted: evicted.length, quotaBytes }, 'user cache quota: oldest entries evicted');
  return evicted.length;
}
