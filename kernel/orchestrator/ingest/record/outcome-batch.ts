// Records for deliveries without runs (no match, no lock file, skipped, ignored fork, ...) are
// written in batches: the deliveries that finish while a batch statement runs go together in the
// next one, a multi-row `INSERT ... ON CONFLICT` (claim and finish in one). Nothing waits for a
// timer: an idle pipeline writes a lone delivery at once, a busy one amortizes the statement, the
// round trip and the commit (a WAL flush) over the batch. Each delivery is still answered only
// after its row is committed, and one that loses the claim is a duplicate, as before.
import { Type } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { countDuplicate, eventColumns, recordOutcome, takeOver, type Claim, type ClaimOptions, type FinishRecord } from './delivery-record.ts';
import type { DeliveryState } from '../types.ts';
import type { IngestStages } from '../stage-metrics.ts';

interface Item {
  state: DeliveryState;
  record: FinishRecord;
  claim: ClaimOptions;
  resolve: (claim: Claim) => void;
  reject: (error: unknown) => void;
  /** `performance.now()` when it was queued. */
  queuedAt: number;
}

const ClaimedRow = Type.Object({ org_id: Type.String(), delivery_id: Type.String(), generation: Type.Number() });

export interface OutcomeBatcherOptions {
  /** Rows per statement. */
  maxBatch?: number;
  /** Statements in flight at once. */
  concurrency?: number;
  stages?: IngestStages;
}

export class OutcomeBatcher {
  readonly #pool: DatabasePool;
  readonly #maxBatch: number;
  readonly #concurrency: number;
  readonly #stages: IngestStages | undefined;
  #queue: Item[] = [];
  #running = 0;
  /** Statements written and rows they carried (tests, the bench). */
  statements = 0;
  rows = 0;

  constructor(pool: DatabasePool, options: OutcomeBatcherOptions = {}) {
    this.#pool = pool;
    this.#maxBatch = Math.max(1, options.maxBatch ?? 200);
    this.#concurrency = Math.max(1, options.concurrency ?? 2);
    this.#stages = options.stages;
  }

  /** Claims and finishes the record; resolves once it is committed (or found a duplicate). */
  record(state: DeliveryState, record: FinishRecord, claim: ClaimOptions): Promise<Claim> {
    const queuedAt = performance.now();
    if (state.admittedAt !== undefined) this.#stages?.observe('steps', state.admittedAt, queuedAt);
    return new Promise<Claim>((resolve, reject) => {
      this.#queue.push({ state, record, claim, resolve, reject, queuedAt });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#running < this.#concurrency && this.#queue.length > 0) {
      const batch = this.#take();
      this.#running += 1;
      void this.#write(batch).finally(() => {
        this.#running -= 1;
        this.#pump();
      });
    }
  }

  /**
   * The next batch: one idempotency window (it is a parameter of the claim condition) and each
   * delivery id once (a row cannot be claimed twice by one statement); the rest wait their turn.
   */
  #take(): Item[] {
    const window = this.#queue[0]!.claim.windowSeconds;
    const batch: Item[] = [];
    const rest: Item[] = [];
    const keys = new Set<string>();
    for (const item of this.#queue) {
      const key = `${item.state.delivery.orgId}\0${item.state.delivery.deliveryId}`;
      if (batch.length < this.#maxBatch && item.claim.windowSeconds === window && !keys.has(key)) {
        keys.add(key);
        batch.push(item);
      } else rest.push(item);
    }
    this.#queue = rest;
    return batch;
  }

  async #write(batch: Item[]): Promise<void> {
    const started = performance.now();
    for (const item of batch) this.#stages?.observe('batch_wait', item.queuedAt, started);
    try {
      await this.#writeBatch(batch);
    } finally {
      const done = performance.now();
      for (let i = 0; i < batch.length; i += 1) this.#stages?.observe('batch_write', started, done);
    }
  }

  async #writeBatch(batch: Item[]): Promise<void> {
    if (batch.length === 1) {
      const item = batch[0]!;
      this.statements += 1;
      this.rows += 1;
      await recordOutcome(this.#pool, item.state, item.record, item.claim).then(item.resolve, item.reject);
      return;
    }
    let claimed: Map<string, number>;
    try {
      claimed = await this.#insert(batch);
    } catch {
      // One bad row must not fail the others: each on its own, with its own error.
      await Promise.all(batch.map((item) => recordOutcome(this.#pool, item.state, item.record, item.claim).then(item.resolve, item.reject)));
      return;
    }
    this.statements += 1;
    this.rows += batch.length;
    for (const item of batch) {
      const generation = claimed.get(`${item.state.delivery.orgId}\0${item.state.delivery.deliveryId}`);
      if (generation !== undefined) item.resolve({ claimed: true, generation });
      else countDuplicate(this.#pool, item.state.delivery).then((status) => item.resolve({ claimed: false, status }), item.reject);
    }
  }

  async #insert(batch: Item[]): Promise<Map<string, number>> {
    const col = <T>(f: (item: Item) => T) => batch.map(f);
    const e = batch.map((item) => eventColumns(item.state));
    const over = takeOver(batch[0]!.claim.windowSeconds);
    const text = (values: Array<string | null>) => sql.array(values, 'text');
    const rows = await this.#pool.any(sqlTyped(ClaimedRow)`
      insert into webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, source_id, status, message, node_id, received_at,
        event_type, action, event_name, repository, ref, sha, sender, trust_tier, workflow_modified, run_ids, steps,
        payload_key, payload_bytes, payload_omitted, payload_omitted_reason)
      select u.org_id, u.delivery_id, u.routing_key, u.provider_kind, u.source_id::uuid, u.status, u.message, u.node_id,
        u.received_at::timestamptz, u.event_type, u.action, u.event_name, u.repository, u.ref, u.sha, u.sender, u.trust_tier,
        u.workflow_modified, '{}'::uuid[], u.steps::jsonb, u.payload_key, u.payload_bytes, u.payload_omitted, u.payload_omitted_reason
      from unnest(
        ${text(col((i) => i.state.delivery.orgId))}, ${text(col((i) => i.state.delivery.deliveryId))},
        ${text(col((i) => i.state.delivery.routingKey))}, ${text(col((i) => i.state.delivery.providerKind))},
        ${text(col((i) => i.claim.sourceId))}, ${text(col((i) => i.record.status))}, ${text(col((i) => i.record.message ?? null))},
        ${text(col((i) => i.claim.nodeId))}, ${text(col((i) => i.state.delivery.receivedAt.toISOString()))},
        ${text(e.map((x) => x.eventType))}, ${text(e.map((x) => x.action))}, ${text(e.map((x) => x.eventName))},
        ${text(e.map((x) => x.repository))}, ${text(e.map((x) => x.ref))}, ${text(e.map((x) => x.sha))}, ${text(e.map((x) => x.sender))},
        ${text(col((i) => i.state.trust.tier))}, ${sql.array(col((i) => i.state.workflowModified), 'bool')},
        ${text(col((i) => JSON.stringify(i.state.steps.entries)))}, ${text(col((i) => i.record.payload.key))},
        ${sql.array(col((i) => i.record.payload.bytes), 'int4')}, ${sql.array(col((i) => i.record.payload.omitted), 'bool')},
        ${text(col((i) => i.record.payload.reason))}
      ) as u(org_id, delivery_id, routing_key, provider_kind, source_id, status, message, node_id, received_at, event_type, action,
        event_name, repository, ref, sha, sender, trust_tier, workflow_modified, steps, payload_key, payload_bytes, payload_omitted,
        payload_omitted_reason)
      on conflict (org_id, delivery_id) do update set status = excluded.status, message = excluded.message, node_id = excluded.node_id,
        source_id = excluded.source_id, shed_reason = null, attempts = webhook_deliveries.attempts + 1, updated_at = now(),
        event_type = excluded.event_type, action = excluded.action, event_name = excluded.event_name, repository = excluded.repository,
        ref = excluded.ref, sha = excluded.sha, sender = excluded.sender, trust_tier = excluded.trust_tier,
        workflow_modified = excluded.workflow_modified, steps = excluded.steps, payload_key = excluded.payload_key,
        payload_bytes = excluded.payload_bytes, payload_omitted = excluded.payload_omitted,
        payload_omitted_reason = excluded.payload_omitted_reason,
        generation = ${over.generation}, created_at = ${over.createdAt}, run_ids = ${over.runIds}
      where ${over.where}
      returning org_id, delivery_id, generation`);
    return new Map(rows.map((r) => [`${r.org_id}\0${r.delivery_id}`, r.generation]));
  }
}
