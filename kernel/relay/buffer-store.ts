// The durable buffer: deliveries no orchestrator could take. A row is committed before the
// provider is answered `buffered`, and deleted only after an orchestrator's definitive ack or
// when it expires (recorded in `relay_delivery_log`). Per-org budgets (items, bytes) are counted
// in memory — the relay is the only writer — and loaded from the table at start.
import { randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../services/db/index.ts';

export interface BufferBudget {
  maxItems: number;
  maxBytes: number;
  ttlMs: number;
}

export interface NewBufferedDelivery {
  orgId: string;
  routingKey: string;
  providerKind: string;
  sourceId?: string | undefined;
  deliveryId: string;
  headers: Record<string, string>;
  body: Buffer;
  clientIp: string;
  receivedAt: Date;
}

export interface BufferedDelivery extends NewBufferedDelivery {
  id: bigint;
  ref: string;
  attempts: number;
}

export interface ExpiredDelivery {
  orgId: string;
  deliveryId: string;
  routingKey: string;
}

const CountRow = Type.Object({ org_id: Type.String(), items: Type.Number(), bytes: Type.Number() });
const IdRow = Type.Object({ id: Type.BigInt() });
const ItemRow = Type.Object({
  id: Type.BigInt(),
  ref: Type.String(),
  org_id: Type.String(),
  routing_key: Type.String(),
  provider_kind: Type.String(),
  source_id: Type.Union([Type.String(), Type.Null()]),
  delivery_id: Type.String(),
  headers: Type.Record(Type.String(), Type.String()),
  body: Type.Unsafe<Buffer>({}),
  client_ip: Type.String(),
  received_at: Type.Number(),
  attempts: Type.Number(),
});
const RemovedRow = Type.Object({ org_id: Type.String(), delivery_id: Type.String(), routing_key: Type.String(), body_bytes: Type.Number() });

interface Usage {
  items: number;
  bytes: number;
}

export class BufferStore {
  readonly #pool: DatabasePool;
  readonly #budget: BufferBudget;
  readonly #usage = new Map<string, Usage>();
  #total = 0;
  /** Called after every change of the total (the `svc_relay_buffered` gauge). */
  onChange: (total: number) => void = () => undefined;

  constructor(pool: DatabasePool, budget: BufferBudget) {
    this.#pool = pool;
    this.#budget = budget;
  }

  async load(): Promise<void> {
    const rows = await this.#pool.any(sqlTyped(CountRow)`
      select org_id, count(*)::int as items, coalesce(sum(body_bytes), 0)::float8 as bytes from relay_buffer group by org_id`);
    this.#usage.clear();
    this.#total = 0;
    for (const r of rows) {
      this.#usage.set(r.org_id, { items: r.items, bytes: r.bytes });
      this.#total += r.items;
    }
    this.onChange(this.#total);
  }

  count(orgId: string): number {
    return this.#usage.get(orgId)?.items ?? 0;
  }

  get total(): number {
    return this.#total;
  }

  orgsWithItems(): string[] {
    return [...this.#usage.entries()].filter(([, u]) => u.items > 0).map(([org]) => org);
  }

  #adjust(orgId: string, items: number, bytes: number): void {
    const usage = this.#usage.get(orgId) ?? { items: 0, bytes: 0 };
    usage.items = Math.max(0, usage.items + items);
    usage.bytes = Math.max(0, usage.bytes + bytes);
    if (usage.items === 0) this.#usage.delete(orgId);
    else this.#usage.set(orgId, usage);
    this.#total = Math.max(0, this.#total + items);
    this.onChange(this.#total);
  }

  /**
   * Commits the delivery to the buffer. Resolves false, writing nothing, when the org's budget
   * is spent (the caller answers 503). Rejects when the database fails (also nothing written).
   */
  async insert(item: NewBufferedDelivery): Promise<boolean> {
    const usage = this.#usage.get(item.orgId) ?? { items: 0, bytes: 0 };
    if (usage.items + 1 > this.#budget.maxItems || usage.bytes + item.body.length > this.#budget.maxBytes) return false;
    // Reserve first: concurrent inserts for one org must not overshoot the budget together.
    this.#adjust(item.orgId, 1, item.body.length);
    try {
      const expiresAt = new Date(item.receivedAt.getTime() + this.#budget.ttlMs);
      await this.#pool.query(sql.unsafe`
        insert into relay_buffer (ref, org_id, routing_key, provider_kind, source_id, delivery_id, headers, body, body_bytes, client_ip, received_at, expires_at)
        values (${randomUUID()}, ${item.orgId}, ${item.routingKey}, ${item.providerKind}, ${item.sourceId ?? null}, ${item.deliveryId},
          ${sql.jsonb(item.headers)}, ${sql.binary(item.body)}, ${item.body.length}, ${item.clientIp},
          ${sql.timestamp(item.receivedAt)}, ${sql.timestamp(expiresAt)})`);
      return true;
    } catch (error) {
      this.#adjust(item.orgId, -1, -item.body.length);
      throw error;
    }
  }

  /** Ids of an org's live (unexpired) deliveries, oldest first. */
  async nextIds(orgId: string, limit: number, afterId = 0n): Promise<bigint[]> {
    const rows = await this.#pool.any(sqlTyped(IdRow)`
      select id from relay_buffer where org_id = ${orgId} and id > ${afterId.toString()}::int8 and expires_at > now()
      order by id limit ${limit}`);
    return rows.map((r) => r.id);
  }

  async get(id: bigint): Promise<BufferedDelivery | undefined> {
    const row = await this.#pool.maybeOne(sqlTyped(ItemRow)`
      select id, ref::text as ref, org_id, routing_key, provider_kind, source_id, delivery_id, headers, body, client_ip, received_at, attempts
      from relay_buffer where id = ${id.toString()}::int8 and expires_at > now()`);
    if (row === null) return undefined;
    return {
      id: row.id,
      ref: row.ref,
      orgId: row.org_id,
      routingKey: row.routing_key,
      providerKind: row.provider_kind,
      ...(row.source_id === null ? {} : { sourceId: row.source_id }),
      deliveryId: row.delivery_id,
      headers: row.headers,
      body: row.body,
      clientIp: row.client_ip,
      receivedAt: new Date(row.received_at),
      attempts: row.attempts,
    };
  }

  async markAttempt(id: bigint): Promise<void> {
    await this.#pool.query(sql.unsafe`update relay_buffer set attempts = attempts + 1 where id = ${id.toString()}::int8`);
  }

  /** Deletes a replayed delivery after its ack and logs the outcome, in one statement. */
  async remove(id: bigint, outcome: string, detail?: string): Promise<boolean> {
    const rows = await this.#pool.any(sqlTyped(RemovedRow)`
      with gone as (
        delete from relay_buffer where id = ${id.toString()}::int8 returning org_id, delivery_id, routing_key, body_bytes
      ), logged as (
        insert into relay_delivery_log (org_id, delivery_id, routing_key, outcome, detail)
        select org_id, delivery_id, routing_key, ${outcome}, ${detail ?? null} from gone
      )
      select org_id, delivery_id, routing_key, body_bytes from gone`);
    for (const r of rows) this.#adjust(r.org_id, -1, -r.body_bytes);
    return rows.length > 0;
  }

  /** Drops every expired delivery, logging each as `expired`. */
  async sweepExpired(): Promise<ExpiredDelivery[]> {
    const rows = await this.#pool.any(sqlTyped(RemovedRow)`
      with gone as (
        delete from relay_buffer where expires_at <= now() returning org_id, delivery_id, routing_key, body_bytes
      ), logged as (
        insert into relay_delivery_log (org_id, delivery_id, routing_key, outcome)
        select org_id, delivery_id, routing_key, 'expired' from gone
      )
      select org_id, delivery_id, routing_key, body_bytes from gone`);
    for (const r of rows) this.#adjust(r.org_id, -1, -r.body_bytes);
    return rows.map((r) => ({ orgId: r.org_id, deliveryId: r.delivery_id, routingKey: r.routing_key }));
  }
}

