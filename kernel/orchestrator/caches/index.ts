// Source/dependency build caches and the user cache. Public API (other subsystems):
//   lookupSourceCache(ctx, org, contentHash)          → { digest, url } | null   (counts hits/misses)
//   lookupDepsCache(ctx, platformArch, lockfileHash)  → { digest, url } | null   (`linux-x64`)
//   cachesSubsystem / createCachesSubsystem(tuning)   answers cache.* agent messages (after dispatch)
//   sweepCaches(deps, ttlDays)                        one bounded sweep (stale uploads, TTL expiry)
//   key layout helpers (sourcePointerKey, depsPointerKey, userObjectKey, …) and CURRENT_PREFIXES
import type { OrchestratorContext } from '../context.ts';
import { lookupDeps, lookupSource, type CacheHit } from './build-cache.ts';
import { cacheDepsOf } from './subsystem.ts';

export { BUILD_DURATION_BUCKETS, PRESIGN_SECONDS, answerUploadRequest, completeUpload, lookupDeps, lookupSource, type AgentRef, type CacheDeps, type CacheHit } from './build-cache.ts';
export { ACTIVE_JOB_STATUSES, activeJobOf, isTrustedRef, type AgentJobRow } from './job-access.ts';
export {
  CURRENT_PREFIXES,
  checkScope,
  depsObjectKey,
  depsPointerKey,
  isoScope,
  platformArchOf,
  sourceObjectKey,
  sourcePointerKey,
  userObjectKey,
  userTempKey,
  type UserScope,
} from './keys.ts';
export { STALE_UPLOAD_SECONDS, sweepCaches, sweepExpiredBuildEntries, sweepExpiredUserEntries, sweepStaleUploads, type SweepResult } from './sweep.ts';
export { answerRestore, answerSaveRequest, completeSave, enforceQuota, scopesOf, type SaveOutcome, type UserCacheOptions } from './user-cache.ts';
export { cacheDepsOf, cacheStorageOf, cachesSubsystem, createCachesSubsystem, userCacheOptionsOf, type CachesTuning } from './subsystem.ts';

/** The source cache for `contentHash` in `org`: a pre-signed GET of the tarball, or null on a miss. */
export async function lookupSourceCache(ctx: OrchestratorContext, org: string, contentHash: string): Promise<CacheHit | null> {
  return lookupSource(cacheDepsOf(ctx), org, contentHash);
}

/** The dependency cache for `lockfileHash` on `platformArch` (`linux-x64`), or null on a miss. */
export async function lookupDepsCache(ctx: OrchestratorContext, platformArch: string, lockfileHash: string): Promise<CacheHit | null> {
  return lookupDeps(cacheDepsOf(ctx), platformArch, lockfileHash);
}
export { CacheListRow, MAX_CACHE_LIST, findLegacyObjects, formatBytes, isLegacyCacheKey, listCacheEntries, purgeLegacyObjects, purgeUserCache, type PurgeResult } from './admin.ts';
