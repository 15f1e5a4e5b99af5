// Ingress rate limits: one token bucket per key (org, client IP, source), refilled at
// `perMinute / 60` tokens a second with a burst of `perMinute`. Buckets live in a bounded LRU: an
// evicted bucket was idle long enough to be full again, so eviction never loosens a limit that
// matters (at worst it forgives a client that stopped sending).
import { LRUCache } from 'lru-cache';

interface Bucket {
  tokens: number;
  at: number;
}

export type TakeResult = { ok: true } | { ok: false; retryAfterSeconds: number };

export class TokenBuckets {
  readonly #buckets: LRUCache<string, Bucket>;

  constructor(maxKeys = 100_000) {
    this.#buckets = new LRUCache<string, Bucket>({ max: maxKeys });
  }

  /** Takes one token from `key`'s bucket, or says how long until one is there. */
  take(key: string, perMinute: number, now = Date.now()): TakeResult {
    const capacity = Math.max(1, perMinute);
    const perMs = capacity / 60_000;
    let bucket = this.#buckets.get(key);
    if (bucket === undefined) {
      bucket = { tokens: capacity, at: now };
      this.#buckets.set(key, bucket);
    } else {
      bucket.tokens = Math.min(capacity, bucket.tokens + Math.max(0, now - bucket.at) * perMs);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { ok: true };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)) };
  }
}
