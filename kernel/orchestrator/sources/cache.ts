// Opened sources by (org, routing key), briefly cached so the hot path neither reads the table
// nor opens sealed secrets per delivery. A signature that fails against a cached entry is
// checked once more against a fresh read (a rotation started by another process).
import { LRUCache } from 'lru-cache';
import type { NamedKey } from '../../services/crypto/sealing.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { messageOf } from '../../services/errors.ts';
import { findSourceRow, getSourceRow, openSource, type OpenedSource } from './store.ts';

export type SourceLookup =
  | { ok: true; source: OpenedSource; cached: boolean }
  | { ok: false; reason: 'unknown' }
  | { ok: false; reason: 'misconfigured'; message: string };

export class SourceCache {
  readonly #pool: DatabasePool;
  readonly #keys: readonly NamedKey[];
  readonly #cache: LRUCache<string, SourceLookup>;

  constructor(pool: DatabasePool, keys: readonly NamedKey[], options: { ttlMs?: number; max?: number } = {}) {
    this.#pool = pool;
    this.#keys = keys;
    this.#cache = new LRUCache({ max: options.max ?? 1000, ttl: options.ttlMs ?? 5000 });
  }

  async get(orgId: string, routingKey: string, options: { fresh?: boolean } = {}): Promise<SourceLookup> {
    const key = `${orgId}\0${routingKey}`;
    if (!options.fresh) {
      const hit = this.#cache.get(key);
      if (hit) return hit.ok ? { ...hit, cached: true } : hit;
    }
    const row = await findSourceRow(this.#pool, orgId, routingKey);
    let lookup: SourceLookup;
    if (row === null) lookup = { ok: false, reason: 'unknown' };
    else {
      try {
        lookup = { ok: true, source: openSource(row, this.#keys), cached: false };
      } catch (error) {
        lookup = { ok: false, reason: 'misconfigured', message: `source ${row.id} cannot be used: ${messageOf(error)}` };
      }
    }
    this.#cache.set(key, lookup);
    return lookup;
  }

  /** A source by id, opened (organization-wide runs need the workflow repository's source). */
  async getById(id: string): Promise<OpenedSource | null> {
    const row = await getSourceRow(this.#pool, id);
    return row === null ? null : openSource(row, this.#keys);
  }

  clear(): void {
    this.#cache.clear();
  }
}
