// Source and dependency build caches. The agent running a BUILD job asks for a pre-signed PUT
// (`cache.upload.request`), uploads the tarball straight to storage, then reports
// `cache.upload.complete`; only then, with the object verified, is the pointer written, so a
// reader never follows a pointer to a missing or half-written tarball.
//   source: source/v2/<org>/<sourceTarDigest>.tar.gz, pointer source/v2/<org>/<contentHash>.hash
//   deps:   deps/<platform>-<arch>/<depsHash>.tar.gz, pointer deps/<platform>-<arch>/<lockfileHash>.hash
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import type { CacheUploadComplete, CacheUploadRequest, CacheUploadResponse } from '../../../schemas/wire/agent.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { InputError, NotAllowedError, NotFoundError, UnavailableError } from '../../../core/errors.ts';
import type { SvcMetrics } from '../../services/metrics.ts';
import { Type } from 'typebox';
import { activeJobOf, type AgentJobRow } from './job-access.ts';
import {
  checkCacheName,
  checkOrg,
  checkPlatformArch,
  depsObjectKey,
  depsPointerKey,
  platformArchOf,
  sourceObjectKey,
  sourcePointerKey,
} from './keys.ts';

/** Spec "Limits": pre-signed URLs live 15 minutes. */
export const PRESIGN_SECONDS = 900;
/** Spec "Metrics emitted": build duration buckets from 1 s to 10 min. */
export const BUILD_DURATION_BUCKETS = [1, 2, 5, 10, 20, 30, 60, 120, 180, 300, 450, 600];
/** A lookup refreshes last_read_at at most this often per entry (reads must not become writes). */
const READ_REFRESH_SECONDS = 60;

export interface CacheDeps {
  pool: DatabasePool;
  /** Undefined: no cache configured. */
  storage: StorageExtensionPoint | undefined;
  metrics: SvcMetrics;
  logger: Logger;
}

export interface CacheHit {
  digest: string;
  /** Pre-signed GET, valid 15 minutes. */
  url: string;
}

export interface AgentRef {
  agentId: string;
  labels: readonly string[];
}

export function buildCacheMetrics(metrics: SvcMetrics) {
  return {
    sourceHits: metrics.counter({ name: 'svc_orch_source_cache_hits_total', help: 'Source cache pointer found.' }),
    sourceMisses: metrics.counter({ name: 'svc_orch_source_cache_misses_total', help: 'Source cache pointer missing (a build is needed).' }),
    depHits: metrics.counter({ name: 'svc_orch_dep_cache_hits_total', help: 'Dependency cache pointer found.' }),
    depMisses: metrics.counter({ name: 'svc_orch_dep_cache_misses_total', help: 'Dependency cache pointer missing.' }),
    uploads: metrics.counter({ name: 'svc_orch_cache_uploads_total', help: 'Build cache uploads committed (pointer written), by cache type.', labelNames: ['cache_type'] }),
    buildDuration: metrics.histogram({ name: 'svc_orch_build_duration_seconds', help: 'Build job duration, start to source cache commit.', buckets: BUILD_DURATION_BUCKETS }),
  };
}

export function requireStorage(storage: StorageExtensionPoint | undefined): StorageExtensionPoint {
  if (storage === undefined) {
    throw new UnavailableError('SVC_ERR_CACHE_NOT_CONFIGURED', 'no cache storage is configured on this orchestrator (SVC_STORAGE_TYPE); jobs install inline');
  }
  return storage;
}

async function readText(storage: StorageExtensionPoint, key: string): Promise<string | null> {
  // No head first: `get` throws NotFoundError for a missing key (the storage contract).
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of await storage.get(key)) chunks.push(Buffer.from(chunk as Uint8Array));
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  return text === '' ? null : text;
}

async function refreshRead(pool: DatabasePool, pointerKey: string): Promise<void> {
  await pool.query(sql.unsafe`
    UPDATE build_cache_entries SET last_read_at = clock_timestamp()
    WHERE pointer_key = ${pointerKey} AND last_read_at < clock_timestamp() - make_interval(secs => ${READ_REFRESH_SECONDS})`);
}

/** Follows a pointer to its tarball; null when the pointer, its value or the tarball is missing. */
async function follow(deps: Omit<CacheDeps, 'metrics'>, pointerKey: string, objectKeyOf: (digest: string) => string): Promise<CacheHit | null> {
  const storage = deps.storage as StorageExtensionPoint;
  const digest = await readText(storage, pointerKey);
  if (digest === null) return null;
  try {
    checkCacheName('pointer value', digest);
  } catch {
    deps.logger.warn({ pointerKey }, 'cache pointer holds an invalid digest; treated as a miss');
    return null;
  }
  const objectKey = objectKeyOf(digest);
  // The TTL refresh (a database write) goes out with the tarball's head (a storage read): on a
  // dispatch they are two round trips on the job's way to its agent. A pointer whose tarball is
  // gone is still refreshed; it is a miss all the same, and the next build rewrites it.
  const [object] = await Promise.all([storage.head(objectKey), refreshRead(deps.pool, pointerKey)]);
  if (object === null) return null;
  const url = await storage.presign({ method: 'GET', key: objectKey, expiresInSeconds: PRESIGN_SECONDS });
  return { digest, url };
}

/**
 * Source cache for `contentHash` in `org` without counting a hit or miss (dispatch reads the
 * entry a delivery's cache check already counted); the read still refreshes the entry's TTL.
 */
export async function findSource(deps: Omit<CacheDeps, 'metrics'>, org: string, contentHash: string): Promise<CacheHit | null> {
  if (deps.storage === undefined) return null;
  checkOrg(org);
  checkCacheName('contentHash', contentHash);
  return follow(deps, sourcePointerKey(org, contentHash), (digest) => sourceObjectKey(org, digest));
}

/** Dependency cache for `lockfileHash` on `platformArch`, uncounted (see findSource). */
export async function findDeps(deps: Omit<CacheDeps, 'metrics'>, platformArch: string, lockfileHash: string): Promise<CacheHit | null> {
  if (deps.storage === undefined) return null;
  checkPlatformArch(platformArch);
  checkCacheName('lockfileHash', lockfileHash);
  return follow(deps, depsPointerKey(platformArch, lockfileHash), (digest) => depsObjectKey(platformArch, digest));
}

/** Source cache for `contentHash` in `org`: `{ digest, url }` or null (miss, or no cache configured). */
export async function lookupSource(deps: CacheDeps, org: string, contentHash: string): Promise<CacheHit | null> {
  const hit = await findSource(deps, org, contentHash);
  if (deps.storage !== undefined) {
    const m = buildCacheMetrics(deps.metrics);
    (hit === null ? m.sourceMisses : m.sourceHits).inc();
  }
  return hit;
}

/** Dependency cache for `lockfileHash` on `platformArch` (`linux-x64`). */
export async function lookupDeps(deps: CacheDeps, platformArch: string, lockfileHash: string): Promise<CacheHit | null> {
  const hit = await findDeps(deps, platformArch, lockfileHash);
  if (deps.storage !== undefined) {
    const m = buildCacheMetrics(deps.metrics);
    (hit === null ? m.depMisses : m.depHits).inc();
  }
  return hit;
}

type UploadTarget = { objectKey: string; pointerKey: string; pointer: string; org: string | null; platformArch: string | null };

async function buildJob(deps: CacheDeps, agent: AgentRef, jobId: string): Promise<AgentJobRow> {
  const job = await activeJobOf(deps.pool, agent.agentId, jobId);
  if (job.kind !== 'build') {
    throw new NotAllowedError('SVC_ERR_CACHE_NOT_BUILD_JOB', `job ${jobId} is not a build job; only build jobs upload source and dependency caches`);
  }
  return job;
}

function targetOf(job: AgentJobRow, agent: AgentRef, cacheType: 'source' | 'dep', key: string): UploadTarget {
  checkCacheName(cacheType === 'source' ? 'sourceTarDigest' : 'depsHash', key);
  if (cacheType === 'source') {
    const org = checkOrg(job.org_id);
    return { objectKey: sourceObjectKey(org, key), pointerKey: sourcePointerKey(org, checkCacheName('contentHash', job.content_hash)), pointer: job.content_hash, org, platformArch: null };
  }
  const platformArch = platformArchOf(agent.labels);
  if (platformArch === null) throw new InputError('SVC_ERR_CACHE_PLATFORM_UNKNOWN', 'the agent did not register an OS and architecture; dependency caches are per platform-arch');
  checkPlatformArch(platformArch);
  if (job.lockfile_hash === null) {
    throw new InputError('SVC_ERR_CACHE_NO_LOCKFILE', `run of job ${job.job_id} has no lockfileHash; there is no dependency cache to write`);
  }
  checkCacheName('lockfileHash', job.lockfile_hash);
  return { objectKey: depsObjectKey(platformArch, key), pointerKey: depsPointerKey(platformArch, job.lockfile_hash), pointer: job.lockfile_hash, org: job.org_id, platformArch };
}

/** `cache.upload.request` → a pre-signed PUT for the tarball (the pointer waits for `complete`). */
export async function answerUploadRequest(
  deps: CacheDeps,
  agent: AgentRef,
  message: Static<typeof CacheUploadRequest>,
): Promise<Static<typeof CacheUploadResponse>> {
  const storage = requireStorage(deps.storage);
  const job = await buildJob(deps, agent, message.jobId);
  const target = targetOf(job, agent, message.cacheType, message.key);
  const url = await storage.presign({ method: 'PUT', key: target.objectKey, expiresInSeconds: PRESIGN_SECONDS });
  deps.logger.debug({ jobId: job.job_id, cacheType: message.cacheType, objectKey: target.objectKey }, 'cache upload URL issued');
  return { type: 'cache.upload.response', requestId: message.requestId, url };
}

const Existing = Type.Object({ job_id: Type.Union([Type.String(), Type.Null()]) });

/**
 * `cache.upload.complete`: the tarball must be in storage; then the pointer is written and the
 * entry recorded. The source commit ends the build, so it records the build duration (once per job).
 */
export async function completeUpload(deps: CacheDeps, agent: AgentRef, message: Static<typeof CacheUploadComplete>): Promise<{ pointerKey: string; objectKey: string }> {
  const storage = requireStorage(deps.storage);
  const job = await buildJob(deps, agent, message.jobId);
  if (message.cacheType === 'dep' && message.depsHash !== undefined && message.depsHash !== message.key) {
    throw new InputError('SVC_ERR_CACHE_DEPS_HASH_MISMATCH', `depsHash ${JSON.stringify(message.depsHash.slice(0, 80))} differs from the uploaded key ${JSON.stringify(message.key.slice(0, 80))}`);
  }
  const target = targetOf(job, agent, message.cacheType, message.key);
  const info = await storage.head(target.objectKey);
  if (info === null) {
    throw new NotFoundError('SVC_ERR_CACHE_OBJECT_MISSING', `no uploaded object at ${target.objectKey}; upload to the URL from cache.upload.response before cache.upload.complete`);
  }
  await storage.put(target.pointerKey, Buffer.from(message.key, 'utf8'), { contentType: 'text/plain' });
  const previous = await deps.pool.transaction(async (tx) => {
    const before = await tx.maybeOne(sqlTyped(Existing)`SELECT job_id::text AS job_id FROM build_cache_entries WHERE pointer_key = ${target.pointerKey} FOR UPDATE`);
    await tx.query(sql.unsafe`
      INSERT INTO build_cache_entries (pointer_key, kind, org_id, platform_arch, pointer, digest, object_key, size_bytes, job_id)
      VALUES (${target.pointerKey}, ${message.cacheType}, ${target.org}, ${target.platformArch}, ${target.pointer}, ${message.key},
              ${target.objectKey}, ${info.size}, ${job.job_id})
      ON CONFLICT (pointer_key) DO UPDATE SET digest = excluded.digest, object_key = excluded.object_key, size_bytes = excluded.size_bytes,
        job_id = excluded.job_id, created_at = clock_timestamp(), last_read_at = clock_timestamp()`);
    return before;
  });
  const m = buildCacheMetrics(deps.metrics);
  m.uploads.inc({ cache_type: message.cacheType });
  if (message.cacheType === 'source' && previous?.job_id !== job.job_id && job.elapsed_seconds !== null) {
    m.buildDuration.observe(Math.max(0, job.elapsed_seconds));
  }
  deps.logger.info({ jobId: job.job_id, cacheType: message.cacheType, pointerKey: target.pointerKey, size: info.size }, 'build cache committed');
  return { pointerKey: target.pointerKey, objectKey: target.objectKey };
}
