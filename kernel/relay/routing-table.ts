// The relay's routing table: which routing keys each org's orchestrators registered. Persisted
// per org in `relay_sources` (so deliveries are still admitted and buffered while every
// orchestrator is away, and across relay restarts) and held in memory for the ingest path.
// Lookup: exact routing key, then the provider-type wildcard `<kind>:*`.
import { Type, type Static } from 'typebox';
import { LRUCache } from 'lru-cache';
import type { RelaySource } from '../../schemas/wire/relay.ts';
import { sql, sqlTyped, type DatabasePool } from '../services/db/index.ts';

const SourceRow = Type.Object({
  org_id: Type.String(),
  routing_key: Type.String(),
  provider_kind: Type.String(),
  source_id: Type.Union([Type.String(), Type.Null()]),
  max_payload_bytes: Type.Union([Type.Number(), Type.Null()]),
  rate_limit_rpm: Type.Union([Type.Number(), Type.Null()]),
});

function fromRow(row: Static<typeof SourceRow>): RelaySource {
  return {
    routingKey: row.routing_key,
    providerKind: row.provider_kind,
    ...(row.source_id === null ? {} : { sourceId: row.source_id }),
    ...(row.max_payload_bytes === null ? {} : { maxPayloadBytes: row.max_payload_bytes }),
    ...(row.rate_limit_rpm === null ? {} : { rateLimitRpm: row.rate_limit_rpm }),
  };
}

export class RoutingTable {
  readonly #pool: DatabasePool;
  readonly #orgs = new Map<string, Map<string, RelaySource>>();

  constructor(pool: DatabasePool) {
    this.#pool = pool;
  }

  async load(): Promise<void> {
    const rows = await this.#pool.any(sqlTyped(SourceRow)`
      select org_id, routing_key, provider_kind, source_id, max_payload_bytes, rate_limit_rpm from relay_sources`);
    this.#orgs.clear();
    for (const row of rows) this.#table(row.org_id).set(row.routing_key, fromRow(row));
  }

  #table(orgId: string): Map<string, RelaySource> {
    let table = this.#orgs.get(orgId);
    if (table === undefined) {
      table = new Map();
      this.#orgs.set(orgId, table);
    }
    return table;
  }

  /** An org is known to the ingest path once some orchestrator registered a source for it. */
  hasOrg(orgId: string): boolean {
    return (this.#orgs.get(orgId)?.size ?? 0) > 0;
  }

  lookup(orgId: string, routingKey: string, providerKind: string): RelaySource | undefined {
    const table = this.#orgs.get(orgId);
    if (table === undefined) return undefined;
    return table.get(routingKey) ?? table.get(`${providerKind}:*`);
  }

  sources(orgId: string): RelaySource[] {
    return [...(this.#orgs.get(orgId)?.values() ?? [])];
  }

  /** Upserts sources (hello, source.register); memory changes only after the commit. */
  async register(orgId: string, sources: readonly RelaySource[], registeredBy: string): Promise<void> {
    if (sources.length === 0) return;
    await this.#pool.transaction(async (tx) => {
      for (const s of sources) {
        await tx.query(sql.unsafe`
          insert into relay_sources (org_id, routing_key, provider_kind, source_id, max_payload_bytes, rate_limit_rpm, registered_by)
          values (${orgId}, ${s.routingKey}, ${s.providerKind}, ${s.sourceId ?? null}, ${s.maxPayloadBytes ?? null}, ${s.rateLimitRpm ?? null}, ${registeredBy})
          on conflict (org_id, routing_key) do update set
            provider_kind = excluded.provider_kind, source_id = excluded.source_id,
            max_payload_bytes = excluded.max_payload_bytes, rate_limit_rpm = excluded.rate_limit_rpm,
            registered_by = excluded.registered_by, updated_at = now()`);
      }
    });
    const table = this.#table(orgId);
    for (const s of sources) table.set(s.routingKey, { ...s });
  }

  async deregister(orgId: string, routingKey: string): Promise<boolean> {
    const result = await this.#pool.query(sql.unsafe`delete from relay_sources where org_id = ${orgId} and routing_key = ${routingKey}`);
    this.#orgs.get(orgId)?.delete(routingKey);
    return result.rowCount > 0;
  }

  /** source.secrets: signature metadata only; the relay never sees a secret. */
  async setSignatureMeta(orgId: string, routingKey: string, signatureMode: string, rotating: boolean): Promise<boolean> {
    const result = await this.#pool.query(sql.unsafe`
      update relay_sources set signature_mode = ${signatureMode}, rotating = ${rotating}, updated_at = now()
      where org_id = ${orgId} and routing_key = ${routingKey}`);
    return result.rowCount > 0;
  }
}

/** Unknown `(org, routing key)` pairs answered 404 without bothering an orchestrator. */
export class NegativeCache {
  readonly #cache: LRUCache<string, true>;

  constructor(options: { ttlMs: number; max?: number }) {
    this.#cache = new LRUCache<string, true>({ max: options.max ?? 10_000, ttl: options.ttlMs });
  }

  static key(orgId: string, routingKey: string): string {
    return `${orgId}\0${routingKey}`;
  }

  has(orgId: string, routingKey: string): boolean {
    return this.#cache.has(NegativeCache.key(orgId, routingKey));
  }

  add(orgId: string, routingKey: string): void {
    this.#cache.set(NegativeCache.key(orgId, routingKey), true);
  }

  /** A registration may make any of the org's keys known (wildcards): forget the org's entries. */
  forgetOrg(orgId: string): void {
    const prefix = `${orgId}\0`;
    for (const key of [...this.#cache.keys()]) if (key.startsWith(prefix)) this.#cache.delete(key);
  }
}
