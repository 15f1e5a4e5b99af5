// Opened sources by (org, routing key) and by id, and each org's source summaries, cached so the
// hot path neither reads the table nor opens sealed secrets per delivery. Every change to the
// sources table (add, rotate, remove; `svc-admin` runs in another process) sends a NOTIFY on
// SOURCES_CHANNEL; `watchSources` clears the cache when one arrives or when the listener lost
// its connection (notifications may have been missed). The TTL bounds staleness should a
// notification never come. A signature that fails against a cached entry is still checked once
// more against a fresh read.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { NamedKey } from '../../services/crypto/sealing.ts';
import type { DatabasePool, Listener } from '../../services/db/index.ts';
import { messageOf } from '../../../core/errors.ts';
import { findSourceRow, getSourceRow, listSources, openSource, SOURCES_CHANNEL, type OpenedSource, type SourceSummary } from './store.ts';

export type SourceLookup =
  | { ok: true; source: OpenedSource; cached: boolean }
  | { ok: false; reason: 'unknown' }
  | { ok: false; reason: 'misconfigured'; message: string };

export class SourceCache {
  readonly #pool: DatabasePool;
  readonly #keys: readonly NamedKey[];
  readonly #cache: LRUCache<string, SourceLookup>;
  readonly #byId: LRUCache<string, OpenedSource | 'none'>;
  readonly #orgs: LRUCache<string, SourceSummary[]>;
  /** Bumped by every invalidation: a read that started before one is not cached. */
  #version = 0;

  constructor(pool: DatabasePool, keys: readonly NamedKey[], options: { ttlMs?: number; max?: number } = {}) {
    this.#pool = pool;
    this.#keys = keys;
    const ttl = options.ttlMs ?? 30_000;
    const max = options.max ?? 1000;
    this.#cache = new LRUCache({ max, ttl });
    this.#byId = new LRUCache({ max, ttl });
    this.#orgs = new LRUCache({ max, ttl });
  }

  get version(): number {
    return this.#version;
  }

  async get(orgId: string, routingKey: string, options: { fresh?: boolean } = {}): Promise<SourceLookup> {
    const key = `${orgId}\0${routingKey}`;
    if (!options.fresh) {
      const hit = this.#cache.get(key);
      if (hit) return hit.ok ? { ...hit, cached: true } : hit;
    }
    const version = this.#version;
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
    if (version === this.#version) this.#cache.set(key, lookup);
    return lookup;
  }

  /** A source by id, opened (generic fan-out and organization-wide runs need the registration's source). */
  async getById(id: string): Promise<OpenedSource | null> {
    const hit = this.#byId.get(id);
    if (hit !== undefined) return hit === 'none' ? null : hit;
    const version = this.#version;
    const row = await getSourceRow(this.#pool, id);
    const opened = row === null ? null : openSource(row, this.#keys);
    if (version === this.#version) this.#byId.set(id, opened ?? 'none');
    return opened;
  }

  /** The org's sources without secrets (the organization-wide policy reads all of them). */
  async listOrg(orgId: string): Promise<SourceSummary[]> {
    const hit = this.#orgs.get(orgId);
    if (hit !== undefined) return hit;
    const version = this.#version;
    const sources = await listSources(this.#pool, orgId);
    if (version === this.#version) this.#orgs.set(orgId, sources);
    return sources;
  }

  clear(): void {
    this.#version += 1;
    this.#cache.clear();
    this.#byId.clear();
    this.#orgs.clear();
  }
}

/**
 * Clears `onChange` targets on every sources NOTIFY and after a listener reconnect. Returns a
 * function that stops watching.
 */
export async function watchSources(listener: Listener, onChange: () => void, logger?: Logger): Promise<() => Promise<void>> {
  const handler = (): void => {
    logger?.debug('sources changed: cached sources dropped');
    onChange();
  };
  await listener.listen(SOURCES_CHANNEL, handler);
  const offGap = listener.onGap(() => onChange());
  return async () => {
    offGap();
    await listener.unlisten(SOURCES_CHANNEL, handler);
  };
}
