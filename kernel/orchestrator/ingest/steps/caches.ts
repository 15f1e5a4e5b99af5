// Step 14: source and dependency caches. The source pointer
// `source/v2/<org_id>/<contentHash>.hash` says the workflow directory is built; on a miss the
// run's jobs wait for one build job per `contentHash:lockfileHash` key (coalesced across
// concurrent deliveries by the database, see runs/create.ts). The dependency pointer
// `deps/<platform>-<arch>/<lockfileHash>.hash` is only counted: a dependency miss falls back to
// an install on the agent.
import { LRUCache } from 'lru-cache';
import type { StorageExtensionPoint } from '../../../../core/extension-points/storage.ts';
import type { SvcMetrics } from '../../../services/metrics.ts';

// One pointer layout for the writer (a build job's cache.upload.complete) and this reader: the
// lockfileHash is used verbatim (`npm:<hex>`), as the dependency pointer is written.
import { depsPointerKey, sourcePointerKey } from '../../caches/keys.ts';

export { depsPointerKey, sourcePointerKey };
export const buildKeyOf = (contentHash: string, lockfileHash: string | null) => `${contentHash}:${lockfileHash ?? ''}`;

export interface CacheCheck {
  /** null: no cache configured (inline install on every job, no build). */
  sourceHit: boolean | null;
  depsHit: boolean | null;
  buildKey: string | null;
}

export class CacheChecker {
  readonly #storage: StorageExtensionPoint | undefined;
  readonly #platforms: readonly string[];
  readonly #sourceHits;
  readonly #sourceMisses;
  readonly #depHits;
  readonly #depMisses;
  /**
   * Pointers seen present, briefly: a pointer, once written, stays for the cache TTL (days), so
   * a hit may be trusted for a minute. Misses are never remembered (a build may finish now).
   */
  readonly #present = new LRUCache<string, true>({ max: 10_000, ttl: 60_000 });

  constructor(storage: StorageExtensionPoint | undefined, metrics: SvcMetrics, platforms: readonly string[] = ['linux-x64']) {
    this.#storage = storage;
    this.#platforms = platforms;
    this.#sourceHits = metrics.counter({ name: 'svc_orch_source_cache_hits_total', help: 'Source cache pointer found at ingest.' });
    this.#sourceMisses = metrics.counter({ name: 'svc_orch_source_cache_misses_total', help: 'Source cache pointer missing at ingest (a build is dispatched).' });
    this.#depHits = metrics.counter({ name: 'svc_orch_dep_cache_hits_total', help: 'Dependency cache pointer found at ingest.' });
    this.#depMisses = metrics.counter({ name: 'svc_orch_dep_cache_misses_total', help: 'Dependency cache pointer missing at ingest.' });
  }

  async check(orgId: string, contentHash: string, lockfileHash: string | null): Promise<CacheCheck> {
    const storage = this.#storage;
    if (storage === undefined) return { sourceHit: null, depsHit: null, buildKey: null };
    const sourceHit = await this.#exists(storage, sourcePointerKey(orgId, contentHash));
    (sourceHit ? this.#sourceHits : this.#sourceMisses).inc();
    let depsHit: boolean | null = null;
    if (lockfileHash !== null) {
      depsHit = false;
      for (const platform of this.#platforms) {
        if (await this.#exists(storage, depsPointerKey(platform, lockfileHash))) depsHit = true;
      }
      (depsHit ? this.#depHits : this.#depMisses).inc();
    }
    return { sourceHit, depsHit, buildKey: sourceHit ? null : buildKeyOf(contentHash, lockfileHash) };
  }

  async #exists(storage: StorageExtensionPoint, key: string): Promise<boolean> {
    if (this.#present.has(key)) return true;
    const found = (await storage.head(key)) !== null;
    if (found) this.#present.set(key, true);
    return found;
  }
}
