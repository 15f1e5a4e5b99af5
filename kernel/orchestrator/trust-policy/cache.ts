// Each org's trust policy cached per node, so the ingest hot path does not read the table per
// delivery. A change NOTIFYs TRUST_POLICY_CHANNEL with the org id (store.ts): `watchTrustPolicies`
// drops that org's entry, and everything after a listener gap (notifications may have been
// missed). The TTL bounds staleness should a notification never come.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { TrustPolicy } from '../../../schemas/http/settings.ts';
import type { DatabasePool, Listener } from '../../services/db/index.ts';
import { getTrustPolicy, TRUST_POLICY_CHANNEL } from './store.ts';

export class TrustPolicyCache {
  readonly #pool: DatabasePool;
  readonly #cache: LRUCache<string, TrustPolicy>;
  /** Bumped by every invalidation: a read that started before one is not cached. */
  #version = 0;

  constructor(pool: DatabasePool, options: { ttlMs?: number; max?: number } = {}) {
    this.#pool = pool;
    this.#cache = new LRUCache({ max: options.max ?? 10_000, ttl: options.ttlMs ?? 30_000 });
  }

  async get(org: string): Promise<TrustPolicy> {
    const hit = this.#cache.get(org);
    if (hit !== undefined) return hit;
    const version = this.#version;
    const policy = await getTrustPolicy(this.#pool, org);
    if (version === this.#version) this.#cache.set(org, policy);
    return policy;
  }

  drop(org: string): void {
    this.#version += 1;
    this.#cache.delete(org);
  }

  clear(): void {
    this.#version += 1;
    this.#cache.clear();
  }
}

export async function watchTrustPolicies(listener: Listener, cache: TrustPolicyCache, logger: Logger): Promise<void> {
  await listener.listen(TRUST_POLICY_CHANNEL, (org) => {
    if (org === '') cache.clear();
    else cache.drop(org);
  });
  listener.onGap(() => {
    logger.debug('trust-policy listener reconnected; cached policies dropped');
    cache.clear();
  });
}
