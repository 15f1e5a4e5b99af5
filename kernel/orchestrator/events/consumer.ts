// Delivering one leased internal event: the registrations it matches each get their own run, in
// ONE transaction with the event's `processed` mark. A run's delivery key is `event:<event id>`,
// and runs are unique per (org, delivery key, workflow repository, workflow), so a redelivery
// after a crash or an expired lease finds the runs it made and never creates a second one: the
// idempotency key per (event, registration) the spec's at-least-once delivery needs.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import type { NormalizedEvent } from '../../../schemas/event.ts';
import { buildRegistrationIndex, matchRegistrations, type InternalEventFields } from '../../../workflow/matching/index.ts';
import { describeUnhonoured, unhonouredRunFeatures } from '../../../workflow/runtime-support.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { createRun, type RunPlan } from '../runs/create.ts';
import { candidateRegistrations, scheduleRegistration, type RegistrationCache, type RegistrationRecord } from '../ingest/steps/registrations.ts';
import { markProcessed, type LeasedEvent } from './delivery-store.ts';
import { eventFor, SCHEDULE_FIRE_EVENT } from './normalize.ts';

export interface ConsumerDeps {
  pool: DatabasePool;
  logger: Logger;
  nodeId: string;
  /** Source and dependency cache check (the ingest pipeline's): a miss makes the run wait for a build. */
  checkCaches(orgId: string, contentHash: string, lockfileHash: string | null): Promise<{ buildKey: string | null }>;
  notifyJobsQueued(tx: CommonQueryMethods): Promise<void>;
  /** Cached candidate reads (the ingest pipeline's, cleared on every registration change); the table otherwise. */
  registrations?: RegistrationCache;
  /** Cached provider kinds of sources; default: read per delivery. */
  providerKinds?: ProviderKinds;
}

/**
 * Provider kind per source id, cached briefly: a source's kind never changes, and a removed
 * source's registrations go with it (cascade), so a stale entry can only name a kind correctly.
 */
export class ProviderKinds {
  readonly #cache = new LRUCache<string, string>({ max: 5_000, ttl: 60_000 });

  async of(pool: DatabasePool, sourceId: string): Promise<string | null> {
    const hit = this.#cache.get(sourceId);
    if (hit !== undefined) return hit;
    const row = await pool.maybeOne(sqlTyped(SourceRow)`SELECT provider_kind FROM sources WHERE id = ${sourceId}`);
    if (row !== null) this.#cache.set(sourceId, row.provider_kind);
    return row?.provider_kind ?? null;
  }
}

export interface DeliveryResult {
  runIds: string[];
  outcome: string;
}

/** The lease was lost while delivering (another node took the event over): nothing committed. */
export class LeaseLost extends Error {}

const EmitterRow = Type.Object({ repository: Type.String(), actor: Type.String(), workflow: Type.String() });
const SourceRow = Type.Object({ provider_kind: Type.String() });
const CountRow = Type.Object({ n: Type.Number() });

interface Match {
  registration: RegistrationRecord;
  /** The event as the registration matched it (a failure batch is its own event name on the run). */
  event: NormalizedEvent;
}

async function emitterOf(pool: DatabasePool, event: LeasedEvent): Promise<Static<typeof EmitterRow> | null> {
  if (event.run_id === null) return null;
  return pool.maybeOne(sqlTyped(EmitterRow)`SELECT repository, actor, workflow FROM runs WHERE id = ${event.run_id}`);
}

/** Failures of `workflows` (any when empty) in the window, since `registration`'s last batch run. */
async function failuresFor(pool: DatabasePool, orgId: string, registration: RegistrationRecord): Promise<number> {
  const trigger = registration.trigger;
  if (trigger.type !== 'workflows_failed_batch') return 0;
  const row = await pool.one(sqlTyped(CountRow)`
    SELECT count(*)::int AS n FROM runs r
    WHERE r.org_id = ${orgId} AND r.status = 'failed' AND r.finished_at > clock_timestamp() - ${trigger.windowSeconds} * interval '1 second'
      AND (${trigger.workflows.length === 0} OR r.workflow = ANY(${sql.array([...trigger.workflows], 'text')}))
      AND r.finished_at > coalesce((
        SELECT max(b.created_at) FROM runs b
        WHERE b.org_id = ${orgId} AND b.event_name = 'workflows_failed_batch' AND b.workflow = ${registration.workflow}
          AND lower(b.workflow_repository) = lower(${registration.repository})), '-infinity'::timestamptz)`);
  return row.n;
}

/**
 * Candidates from the cache, unless an earlier attempt failed (perhaps on a registration an
 * operator has since repaired, then retried from the DLQ): that delivery reads the table.
 */
function candidatesOf(deps: ConsumerDeps, leased: LeasedEvent, event: NormalizedEvent): Promise<RegistrationRecord[]> {
  return deps.registrations !== undefined && !leased.failed_before ? deps.registrations.candidates(deps.pool, leased.org_id, event) : candidateRegistrations(deps.pool, leased.org_id, event);
}

/** Registrations `event` matches, and why the others did not. */
async function matchesFor(deps: ConsumerDeps, leased: LeasedEvent, event: NormalizedEvent, internal: InternalEventFields): Promise<{ matched: Match[]; notes: string[] }> {
  const notes: string[] = [];
  const matched: Match[] = [];
  const evaluate = (registrations: RegistrationRecord[], fields: InternalEventFields, e: NormalizedEvent) => {
    if (registrations.length === 0) return;
    const result = matchRegistrations(buildRegistrationIndex(registrations), e, leased.org_id, { internal: fields });
    for (const m of result.matched) matched.push({ registration: m.registration, event: e });
    for (const u of result.unmatched) {
      const reason = u.reasons.find((r) => r.verdict !== 'pass');
      notes.push(`${u.registration.repository}:${u.registration.workflow}: ${u.verdict}, ${reason?.detail ?? 'no trigger matched'}`);
    }
  };
  evaluate(await candidatesOf(deps, leased, event), internal, event);
  // A failed workflow also feeds the failure-batch triggers, each with its own count.
  if (event.type === 'workflow_complete' && internal.status === 'failed') {
    // Its runs carry event_name `workflows_failed_batch`: failuresFor counts from the last of them.
    const batch: NormalizedEvent = { ...event, type: 'workflows_failed_batch', eventName: 'workflows_failed_batch' };
    for (const registration of await candidatesOf(deps, leased, batch)) {
      const count = await failuresFor(deps.pool, leased.org_id, registration);
      evaluate([registration], { ...internal, countFailures: () => count }, batch);
    }
  }
  return { matched, notes };
}

/** The schedule's own registration (a fire names exactly one trigger). */
async function scheduleMatch(deps: ConsumerDeps, leased: LeasedEvent, event: NormalizedEvent): Promise<{ matched: Match[]; notes: string[] }> {
  const p = (leased.payload ?? {}) as { repository?: string; workflow?: string; triggerIndex?: number };
  const registration = await scheduleRegistration(deps.pool, leased.org_id, p.repository ?? '', p.workflow ?? '', p.triggerIndex ?? -1);
  if (registration === null) return { matched: [], notes: [`${p.repository}:${p.workflow}: the schedule is no longer registered (replaced by a later default-branch push)`] };
  return { matched: [{ registration, event }], notes: [] };
}

function planOf(leased: LeasedEvent, event: NormalizedEvent, registration: RegistrationRecord, provider: string, actor: string, buildKey: string | null): RunPlan {
  return {
    orgId: leased.org_id,
    deliveryKey: `event:${leased.id}`,
    sourceId: registration.sourceId,
    provider,
    repository: registration.repository,
    workflowRepository: registration.repository,
    workflowSourceId: registration.sourceId,
    workflowCloneUrl: registration.cloneUrl,
    workflow: registration.lockEntry,
    workflowSha: registration.sha,
    workflowRef: `refs/heads/${registration.branch}`,
    sha: registration.sha,
    ref: `refs/heads/${registration.branch}`,
    eventName: event.eventName,
    subjectKind: 'ref',
    actor,
    // Registrations come from default-branch pushes only: the workflow is the branch's own.
    trustTier: 'trusted',
    isFork: 'false',
    headRef: '',
    headRepository: '',
    lockfileHash: registration.lockfileHash,
    event: { ...event, repository: { fullName: registration.repository, owner: registration.repository.split('/')[0]!, name: registration.repository.split('/').slice(1).join('/'), id: registration.repositoryId, cloneUrl: registration.cloneUrl, defaultBranch: registration.branch }, ref: `refs/heads/${registration.branch}`, branch: registration.branch, sha: registration.sha },
    changedFiles: null,
    workflowModified: false,
    buildKey,
  };
}

/** What one event's delivery will write: read and matched, not yet committed. */
export interface PreparedDelivery {
  leased: LeasedEvent;
  kept: Array<{ registration: RegistrationRecord; event: NormalizedEvent; provider: string; buildKey: string | null }>;
  notes: string[];
  actor: string;
  depth: number;
}

/** Reads and matches `leased` (no writes); throws to have it retried. */
export async function prepareDelivery(deps: ConsumerDeps, leased: LeasedEvent): Promise<PreparedDelivery> {
  const emitter = await emitterOf(deps.pool, leased);
  const { event, internal } = eventFor(leased, emitter?.repository ?? null);
  const found = leased.name === SCHEDULE_FIRE_EVENT ? await scheduleMatch(deps, leased, event) : await matchesFor(deps, leased, event, internal);
  const notes = [...found.notes];
  const kept: PreparedDelivery['kept'] = [];
  const seen = new Set<string>();
  for (const { registration, event: matchedEvent } of found.matched) {
    // One run per workflow even when several of its triggers matched.
    const key = `${registration.repository.toLowerCase()}\0${registration.workflow}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (leased.target !== null && leased.target !== registration.workflow && leased.target.toLowerCase() !== registration.repository.toLowerCase()) {
      notes.push(`${registration.repository}:${registration.workflow}: not the event's target ${leased.target}`);
      continue;
    }
    const unhonoured = unhonouredRunFeatures(registration.lockEntry, registration.lockfileHash);
    if (unhonoured.length > 0) {
      notes.push(`${registration.repository}:${registration.workflow}: not run: ${describeUnhonoured(unhonoured)}`);
      continue;
    }
    const provider = await (deps.providerKinds ?? new ProviderKinds()).of(deps.pool, registration.sourceId);
    if (provider === null) {
      notes.push(`${registration.repository}:${registration.workflow}: its source was removed`);
      continue;
    }
    const caches = await deps.checkCaches(leased.org_id, registration.lockEntry.contentHash, registration.lockfileHash);
    kept.push({ registration, event: matchedEvent, provider, buildKey: caches.buildKey });
  }
  // A run an event started is one deeper than the event; a schedule starts a chain (depth 0), as
  // a webhook does (breaker.ts).
  const depth = leased.name === SCHEDULE_FIRE_EVENT ? 0 : leased.chain_depth + 1;
  return { leased, kept, notes, actor: emitter?.actor ?? 'svc', depth };
}

/** One event's runs, on `tx`, and the outcome line recorded on the event. */
async function writeRuns(tx: CommonQueryMethods, p: PreparedDelivery): Promise<DeliveryResult & { queued: boolean }> {
  const runIds: string[] = [];
  const made: string[] = [];
  let queued = false;
  for (const k of p.kept) {
    const created = await createRun(tx, { ...planOf(p.leased, k.event, k.registration, k.provider, p.actor, k.buildKey), chainDepth: p.depth, triggeringEventId: p.leased.id });
    if (created.queuedJobs > 0) queued = true;
    runIds.push(created.runId);
    made.push(`${k.registration.repository}:${k.registration.workflow} → run ${created.runId}${created.created ? '' : ' (existing)'}`);
  }
  const outcome = [made.length > 0 ? `matched: ${made.join('; ')}` : 'no_match', ...p.notes].join('; ');
  return { runIds, outcome, queued };
}

export type BatchOutcome = { ok: true; result: DeliveryResult } | { ok: false; error: unknown };

const Held = Type.Object({ id: Type.String() });

/**
 * The chunk in ONE transaction (one commit for many events): lock the events whose lease is still
 * this node's (the rest are reported lost), create every run, then mark them all processed in one
 * statement. Any error rolls the chunk back; the caller then delivers its events one by one.
 */
async function commitChunk(deps: ConsumerDeps, prepared: readonly PreparedDelivery[]): Promise<BatchOutcome[]> {
  return deps.pool.transaction(async (tx) => {
    const held = new Set(
      (
        await tx.any(sqlTyped(Held)`
          SELECT e.id::text AS id FROM internal_events e
          JOIN unnest(${sql.array(prepared.map((p) => p.leased.id), 'uuid')}, ${sql.array(prepared.map((p) => p.leased.claimed_at), 'timestamptz')}) AS l(id, claimed_at)
            ON e.id = l.id AND e.claimed_at = l.claimed_at
          WHERE e.lease_node = ${deps.nodeId} AND e.processed_at IS NULL
          FOR UPDATE OF e`)
      ).map((r) => r.id),
    );
    const out: BatchOutcome[] = [];
    const marks: Array<{ id: string; outcome: string; runIds: string[] }> = [];
    let queued = false;
    for (const p of prepared) {
      if (!held.has(p.leased.id)) {
        out.push({ ok: false, error: new LeaseLost(`event ${p.leased.id}: the lease moved to another node`) });
        continue;
      }
      const written = await writeRuns(tx, p);
      queued ||= written.queued;
      marks.push({ id: p.leased.id, outcome: written.outcome, runIds: written.runIds });
      out.push({ ok: true, result: { runIds: written.runIds, outcome: written.outcome } });
    }
    if (marks.length > 0) {
      await tx.query(sql.unsafe`
        UPDATE internal_events e
        SET processed_at = clock_timestamp(), delivered_at = clock_timestamp(), lease_until = NULL, last_error = NULL,
            outcome = left(m.outcome, 4000), run_ids = ARRAY(SELECT jsonb_array_elements_text(m.run_ids)::uuid)
        FROM jsonb_to_recordset(${sql.jsonb(marks.map((m) => ({ id: m.id, outcome: m.outcome, run_ids: m.runIds })))}) AS m(id uuid, outcome text, run_ids jsonb)
        WHERE e.id = m.id`);
    }
    if (queued) await deps.notifyJobsQueued(tx);
    return out;
  });
}

/**
 * Commits several prepared deliveries with one commit; when the chunk fails as a whole (one
 * event's runs hit an error), each is retried alone so one bad event cannot hold the others back.
 * Results are in input order.
 */
export async function commitDeliveries(deps: ConsumerDeps, prepared: readonly PreparedDelivery[]): Promise<BatchOutcome[]> {
  if (prepared.length > 1) {
    try {
      return await commitChunk(deps, prepared);
    } catch {
      // Fall through: one at a time, each with its own outcome.
    }
  }
  const out: BatchOutcome[] = [];
  for (const p of prepared) {
    try {
      const result = await deps.pool.transaction(async (tx) => {
        const written = await writeRuns(tx, p);
        if (!(await markProcessed(tx, p.leased, deps.nodeId, written.runIds, written.outcome))) throw new LeaseLost(`event ${p.leased.id}: the lease moved to another node`);
        if (written.queued) await deps.notifyJobsQueued(tx);
        return { runIds: written.runIds, outcome: written.outcome };
      });
      out.push({ ok: true, result });
    } catch (error) {
      out.push({ ok: false, error });
    }
  }
  return out;
}

/** Delivers `leased` on its own; throws to have it retried (LeaseLost when another node owns it now). */
export async function deliverEvent(deps: ConsumerDeps, leased: LeasedEvent): Promise<DeliveryResult> {
  const prepared = await prepareDelivery(deps, leased);
  const [outcome] = await commitDeliveries(deps, [prepared]);
  if (!outcome!.ok) throw outcome!.error;
  return outcome!.result;
}
