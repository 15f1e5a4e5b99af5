// Step 10: on a default-branch push the lock's registerable triggers (webhook and custom-event
// triggers, internal-event triggers, schedules, and triggers with repository patterns, i.e.
// organization-wide workflows) replace the repository's registrations, and
// `registration.updated` is emitted in the same transaction. Candidates for an event are read
// back by the spec's indexes: (org, event name), (org, trigger type), global by (org, type).
// The step commits before the delivery's record, so a delivery processed again (replayed to a
// restarted node or another one, retried after a shed) reaches it again: with the delivery's
// key it is done once per delivery, the `ingest_events` row (its id derived from the key) being
// the claim.
import { createHash, randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { Lock, LockTrigger, LockWorkflow } from '../../../../schemas/lock.ts';
import { webhookEventName, type Registration } from '../../../../workflow/matching/index.ts';
import { notify, sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { emitInternalEvent } from '../../events/emit.ts';
import { syncSchedules } from '../../schedules/store.ts';

export const INGEST_EVENTS_CHANNEL = 'svc_ingest_events';
const INTERNAL_TYPES = new Set(['workflow_complete', 'job_complete', 'lifecycle', 'workflows_failed_batch']);

export interface RegisterableTrigger {
  workflow: LockWorkflow;
  triggerIndex: number;
  trigger: LockTrigger;
  eventNames: string[];
  global: boolean;
}

export function registerableTriggers(lock: Lock): RegisterableTrigger[] {
  const out: RegisterableTrigger[] = [];
  for (const workflow of lock.workflows) {
    workflow.triggers.forEach((trigger, triggerIndex) => {
      const global = 'repositories' in trigger && trigger.repositories.length > 0;
      let eventNames: string[] = [];
      if (trigger.type === 'webhook') eventNames = [...trigger.events];
      else if (trigger.type === 'event') eventNames = [trigger.name];
      else if (!global && !INTERNAL_TYPES.has(trigger.type) && trigger.type !== 'schedule') return;
      out.push({ workflow, triggerIndex, trigger, eventNames, global });
    });
  }
  return out;
}

export interface ReplaceRegistrations {
  orgId: string;
  sourceId: string;
  repository: string;
  repositoryId: string | null;
  cloneUrl: string | null;
  branch: string;
  sha: string;
  lock: Lock;
  /** The delivery doing it (its id): done once per delivery. Absent: every call does it. */
  deliveryKey?: string;
}

/** A UUID fixed by (org, delivery): the id of the delivery's `registration.updated` row. */
export function registrationEventId(orgId: string, deliveryKey: string): string {
  const hash = createHash('sha256').update(`registration.updated\0${orgId}\0${deliveryKey}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50; // version 5 layout (name-based)
  hash[8] = (hash[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Replaces the repository's registrations and emits `registration.updated`. Returns the count,
 * or undefined when an earlier attempt of the same delivery (`deliveryKey`) already did it.
 */
export async function replaceRegistrations(tx: CommonQueryMethods, input: ReplaceRegistrations): Promise<number | undefined> {
  const entries = registerableTriggers(input.lock);
  const payload = { repository: input.repository, sha: input.sha, branch: input.branch, workflows: [...new Set(entries.map((e) => e.workflow.name))] };
  const id = input.deliveryKey === undefined ? randomUUID() : registrationEventId(input.orgId, input.deliveryKey);
  // The claim: a concurrent attempt of the same delivery waits here for the first to commit.
  const claimed = await tx.maybeOne(sql.unsafe`
    insert into ingest_events (id, org_id, name, payload) values (${id}, ${input.orgId}, 'registration.updated', ${sql.jsonb(payload as never)})
    on conflict (id) do nothing returning id`);
  if (claimed === null) return undefined;
  await tx.query(sql.unsafe`delete from registrations where org_id = ${input.orgId} and lower(repository) = lower(${input.repository})`);
  for (const r of entries) {
    await tx.query(sql.unsafe`
      insert into registrations (id, org_id, source_id, repository, repository_id, clone_url, branch, sha, workflow, trigger_index,
        trigger_type, event_names, global, trigger, lock_entry, lockfile_hash)
      values (${randomUUID()}, ${input.orgId}, ${input.sourceId}, ${input.repository}, ${input.repositoryId}, ${input.cloneUrl},
        ${input.branch}, ${input.sha}, ${r.workflow.name}, ${r.triggerIndex}, ${r.trigger.type}, ${sql.array(r.eventNames, 'text')},
        ${r.global}, ${sql.jsonb(r.trigger as never)}, ${sql.jsonb(r.workflow as never)}, ${input.lock.lockfileHash ?? null})`);
  }
  await notify(tx, INGEST_EVENTS_CHANNEL, { id, orgId: input.orgId, name: 'registration.updated' });
  // The same fact for workflows (`lifecycle({ events: ['registration.updated'] })`), and the
  // repository's schedules follow its new lock, all in this transaction.
  await emitInternalEvent(tx, { name: 'registration.updated', source: 'orchestrator', orgId: input.orgId, payload });
  await syncSchedules(tx, input.orgId, input.repository, input.lock);
  return entries.length;
}

const RegistrationRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  source_id: Type.String(),
  repository: Type.String(),
  repository_id: Type.Union([Type.String(), Type.Null()]),
  clone_url: Type.Union([Type.String(), Type.Null()]),
  branch: Type.String(),
  sha: Type.String(),
  workflow: Type.String(),
  trigger_index: Type.Number(),
  trigger: Type.Unknown(),
  lock_entry: Type.Unknown(),
  lockfile_hash: Type.Union([Type.String(), Type.Null()]),
});

export interface RegistrationRecord extends Registration {
  readonly sourceId: string;
  readonly repositoryId: string | null;
  readonly cloneUrl: string | null;
  readonly branch: string;
  readonly sha: string;
  readonly lockEntry: LockWorkflow;
  readonly lockfileHash: string | null;
}

function fromRow(row: Static<typeof RegistrationRow>): RegistrationRecord {
  return {
    id: row.id,
    orgId: row.org_id,
    repository: row.repository,
    workflow: row.workflow,
    trigger: row.trigger as LockTrigger,
    triggerIndex: row.trigger_index,
    sourceId: row.source_id,
    repositoryId: row.repository_id,
    cloneUrl: row.clone_url,
    branch: row.branch,
    sha: row.sha,
    lockEntry: row.lock_entry as LockWorkflow,
    lockfileHash: row.lockfile_hash,
  };
}

const COLUMNS = sql.fragment`id, org_id, source_id::text as source_id, repository, repository_id, clone_url, branch, sha, workflow,
  trigger_index, trigger, lock_entry, lockfile_hash`;

/** The index an event reads registrations by; null when it reads none. Also the cache key. */
function candidateQuery(orgId: string, event: NormalizedEvent): { key: string; where: ReturnType<typeof sql.fragment> } | null {
  const type = event.type;
  if (type === null || type === 'schedule') return null;
  if (type === 'webhook') {
    const name = webhookEventName(event);
    return { key: `${orgId}\0webhook\0${name}`, where: sql.fragment`trigger_type = 'webhook' and ${name} = any(event_names)` };
  }
  if (type === 'event') {
    if (event.customEventName === null) return null;
    return { key: `${orgId}\0event\0${event.customEventName}`, where: sql.fragment`trigger_type = 'event' and ${event.customEventName} = any(event_names)` };
  }
  if (INTERNAL_TYPES.has(type)) return { key: `${orgId}\0${type}`, where: sql.fragment`trigger_type = ${type}` };
  const repo = event.repository?.fullName ?? '';
  return { key: `${orgId}\0global\0${type}\0${repo.toLowerCase()}`, where: sql.fragment`global and trigger_type = ${type} and lower(repository) <> lower(${repo})` };
}

/** Registrations that may match the event (filters not yet evaluated). */
export async function candidateRegistrations(pool: DatabasePool, orgId: string, event: NormalizedEvent): Promise<RegistrationRecord[]> {
  const query = candidateQuery(orgId, event);
  if (query === null) return [];
  const rows = await pool.any(sqlTyped(RegistrationRow)`select ${COLUMNS} from registrations where org_id = ${orgId} and ${query.where}`);
  return rows.map(fromRow);
}

/** The registration of one schedule trigger (a `__schedule_fire` names it); null once replaced. */
export async function scheduleRegistration(pool: DatabasePool, orgId: string, repository: string, workflow: string, triggerIndex: number): Promise<RegistrationRecord | null> {
  const row = await pool.maybeOne(sqlTyped(RegistrationRow)`
    select ${COLUMNS} from registrations
    where org_id = ${orgId} and lower(repository) = lower(${repository}) and workflow = ${workflow} and trigger_index = ${triggerIndex}
      and trigger_type = 'schedule'`);
  return row === null ? null : fromRow(row);
}

/**
 * Candidate registrations per index key, so most deliveries (a push with no organization-wide
 * workflow in the org, a generic event) read no table. Registrations change only by
 * `replaceRegistrations`, which NOTIFYs `svc_ingest_events` in its transaction, and by a source
 * removal (cascade, NOTIFY on the sources channel): both clear this cache (the ingest subsystem
 * listens; this node clears it itself after its own replace). The TTL bounds staleness should a
 * notification be missed; a read that started before a clear is not cached.
 */
export class RegistrationCache {
  readonly #cache: LRUCache<string, RegistrationRecord[]>;
  #version = 0;

  constructor(options: { max?: number; ttlMs?: number } = {}) {
    this.#cache = new LRUCache({ max: options.max ?? 10_000, ttl: options.ttlMs ?? 30_000 });
  }

  async candidates(pool: DatabasePool, orgId: string, event: NormalizedEvent): Promise<RegistrationRecord[]> {
    const query = candidateQuery(orgId, event);
    if (query === null) return [];
    const hit = this.#cache.get(query.key);
    if (hit !== undefined) return hit;
    const version = this.#version;
    const rows = (await pool.any(sqlTyped(RegistrationRow)`select ${COLUMNS} from registrations where org_id = ${orgId} and ${query.where}`)).map(fromRow);
    if (version === this.#version) this.#cache.set(query.key, rows);
    return rows;
  }

  clear(): void {
    this.#version += 1;
    this.#cache.clear();
  }
}
