// Ingress rate limits of the webhook front door (spec: "Ingress rate limit exceeded for org or
// client IP → 429 with Retry-After, decided before the body is read"; generic sources add their
// own `rateLimitRpm`). One token bucket per key, refilled at `perMinute / 60` tokens a second
// with a burst of `perMinute`.
//
// Bounded: each dimension lives in its own fixed-capacity LRU, so a flood of distinct client
// addresses (or junk org ids) cannot grow memory, and cannot push the org and source buckets out.
// Eviction forgives: an evicted key starts again with a full bucket. An address that keeps
// sending stays recent and keeps its bucket; one evicted under a flood of others can only spend
// its burst again, still inside its org's bucket.
import { LRUCache } from 'lru-cache';

interface Bucket {
  tokens: number;
  at: number;
}

export class TokenBuckets {
  readonly #buckets: LRUCache<string, Bucket>;

  constructor(maxKeys: number) {
    this.#buckets = new LRUCache<string, Bucket>({ max: maxKeys });
  }

  get size(): number {
    return this.#buckets.size;
  }

  /**
   * Takes one token from `key`'s bucket: 0 when taken, else the seconds until one is there (a
   * number rather than an object: this runs for every inbound webhook).
   */
  take(key: string, perMinute: number, now: number): number {
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
      return 0;
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  }
}

export interface IngressLimits {
  perOrgRpm: number;
  perIpRpm: number;
  /** Capacity of each dimension's map. */
  maxClients?: number;
  maxOrgs?: number;
  maxSources?: number;
}

export const DEFAULT_MAX_CLIENTS = 100_000;
export const DEFAULT_MAX_ORGS = 20_000;
export const DEFAULT_MAX_SOURCES = 20_000;

export class IngressLimiter {
  readonly #limits: IngressLimits;
  readonly #clients: TokenBuckets;
  readonly #orgs: TokenBuckets;
  readonly #sources: TokenBuckets;

  constructor(limits: IngressLimits) {
    this.#limits = limits;
    this.#clients = new TokenBuckets(limits.maxClients ?? DEFAULT_MAX_CLIENTS);
    this.#orgs = new TokenBuckets(limits.maxOrgs ?? DEFAULT_MAX_ORGS);
    this.#sources = new TokenBuckets(limits.maxSources ?? DEFAULT_MAX_SOURCES);
  }

  /** Keys held per dimension (for tests and debugging: each stays at or under its capacity). */
  get tracked(): { clients: number; orgs: number; sources: number } {
    return { clients: this.#clients.size, orgs: this.#orgs.size, sources: this.#sources.size };
  }

  /** 0 when admitted, else Retry-After seconds. */
  byClient(ip: string, now: number): number {
    return this.#clients.take(ip, this.#limits.perIpRpm, now);
  }

  byOrg(orgId: string, now: number): number {
    return this.#orgs.take(orgId, this.#limits.perOrgRpm, now);
  }

  bySource(orgId: string, routingKey: string, perMinute: number, now: number): number {
    return this.#sources.take(`${orgId}\0${routingKey}`, perMinute, now);
  }
}
