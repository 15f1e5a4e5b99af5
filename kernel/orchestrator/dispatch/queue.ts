// The dispatcher of one node: claims `queued` jobs for the idle agents connected HERE. Claims
// use `FOR UPDATE SKIP LOCKED` plus a `status = 'queued'` re-check, so several nodes on one
// database never dispatch a job twice. It runs when woken (NOTIFY, registration, free capacity)
// and on a bounded periodic tick; passes never overlap.
import type { Logger } from 'pino';
import type { JobDispatch } from '../../../schemas/wire/agent.ts';
import { PLAN_EACH_EXECUTION, sql, type DatabasePool } from '../../services/db/index.ts';
import { messageOf } from '../../../core/errors.ts';
import { nowMs, type Tracing } from '../../../core/tracing/index.ts';
import { TRACE_PROTOCOL_VERSION } from '../../../schemas/wire/relay.ts';
import { traceDispatch } from './trace-spans.ts';
import { SecretOpenError } from '../secrets/store.ts';
import { requiredMatchers, satisfies } from './labels.ts';
import { claimDispatchRow, type DispatchRow } from './message.ts';
import { lockRunsOfJobs, progressRun, recordJobComplete } from './progression.ts';
import type { AgentRegistry, AgentSession } from './registry.ts';
import { pickByRouting, routingOf, type JobRouting } from './routing.ts';
import { sandboxNeed, sandboxUnavailableError, type OnlineAgentRow } from './sandbox-gap.ts';
import { protocolFloor, protocolTooOldError, speaks, wireFeatures, type VersionedAgentRow, type WireParts } from './protocol-gap.ts';

/** Jobs read per page and pages per pass: bounds one pass's work. */
const PAGE_SIZE = 200;
const MAX_PAGES = 25;
export const NO_JOBS_DISPATCHED = 'No jobs dispatched';

export interface QueuedJob {
  id: string;
  run_id: string;
  runs_on: string[];
  needs_container: boolean;
  /** `routing` of the job's definition or lock entry (prefer/avoid among matching agents). */
  routing: JobRouting | null;
  /** Protocol-gated features (`jobConfig` fields its dispatch carries, retry.exitCodes) and the protocol they need (protocol-gap.ts). */
  wire_features: string[];
  min_protocol: number;
  order_at: number;
  reason: string | null;
  unroutable_since: number | null;
}

export interface DispatcherOptions {
  pool: DatabasePool;
  registry: AgentRegistry;
  logger: Logger;
  /** Read at each decision: the cluster settings may change it while the node runs. */
  readonly maxDispatchAttempts: number;
  /** Wait before a job whose sealed secrets this node could not open is dispatched again (read per put-back). */
  sealedSecretsRetryBackoffMs(): number;
  /** This node, named in the reason of a job put back for its sealed secrets. */
  nodeId: string;
  /** Builds the message for a claimed job and the agent that got it. */
  build(row: DispatchRow, session: AgentSession): Promise<JobDispatch>;
  /** How long a container job no agent can run stays queued before it fails as unroutable. */
  containerGraceMs: number;
  onDispatched?(jobId: string, agentId: string): void;
  /** A pass over the queue completed (one with no idle agent too: it had nobody to give a job). */
  onPass?(): void;
  /** Queue-wait and dispatch spans of traced runs (docs/tracing.md). */
  tracing?: Tracing;
}

/** Spec ("Dispatch and run errors"): a job no coordinator can open fails with this, then why. */
export const SEALED_SECRETS_UNOPENABLE = 'Sealed secrets of this job could not be opened by any coordinator: finish the master-key rotation on every coordinator';

/**
 * Failure text of a job that stayed `queued` past `queue.timeoutMs` (docs/config.md): names the
 * setting and the labels no agent took it with.
 */
export function queueTimeoutReason(timeoutMs: number, runsOn: readonly string[]): string {
  return `Queue timeout: not dispatched within queue.timeoutMs (${timeoutMs} ms); no agent took it with the labels ${runsOn.length === 0 ? '(none)' : runsOn.join(', ')}`;
}

/** Jobs failed per queue-timeout pass: bounds one pass's work (the next tick takes the rest). */
const QUEUE_TIMEOUT_BATCH = 200;

/** `No jobs dispatched: …` for a job whose matchers no online agent satisfies. */
export function noJobsReason(matchers: readonly string[]): string {
  return `${NO_JOBS_DISPATCHED}: no online or spawnable agent carries the labels ${matchers.length === 0 ? '(none)' : matchers.join(', ')}`;
}

/**
 * One page of dispatchable `queued` jobs in queue order (after the cursor), with whether each
 * needs a container. The dispatcher and the scaling subsystem read the queue the same way.
 */
export async function queuedJobsPage(
  pool: DatabasePool,
  after: { at: number; id: string } | undefined,
  options: { unmarkedOrContainerPastMs?: number } = {},
): Promise<QueuedJob[]> {
  const cursor = after === undefined ? sql.fragment`TRUE` : sql.fragment`(coalesce(j.queued_at, j.created_at), j.id) > (${sql.timestamp(new Date(after.at))}, ${after.id}::uuid)`;
  const needsContainer = sql.fragment`(EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.lock_entry->'jobs') = 'array' THEN r.lock_entry->'jobs' ELSE '[]'::jsonb END) e
                   WHERE e->>'name' = j.name AND e ? 'container') OR coalesce(j.definition ? 'container', false))`;
  // A generated job carries its own definition; a lock job's entry is found by name, as above.
  const routing = sql.fragment`CASE WHEN j.definition IS NOT NULL THEN j.definition->'routing' ELSE
    (SELECT e->'routing' FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.lock_entry->'jobs') = 'array' THEN r.lock_entry->'jobs' ELSE '[]'::jsonb END) e
     WHERE e->>'name' = j.name AND e ? 'routing' LIMIT 1) END`;
  // The lock job entry as message.ts reads it (lockJobOf): a generated job's own, else by name.
  const entry = sql.fragment`LEFT JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(j.definition) = 'object' THEN j.definition ELSE
    (SELECT e FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.lock_entry->'jobs') = 'array' THEN r.lock_entry->'jobs' ELSE '[]'::jsonb END) e
     WHERE e->>'name' = j.name LIMIT 1) END AS entry) le ON TRUE`;
  const graceMs = options.unmarkedOrContainerPastMs;
  const only = graceMs === undefined
    ? sql.fragment`TRUE`
    : sql.fragment`(j.unroutable_since IS NULL OR (j.unroutable_since <= now() - ${graceMs} * interval '1 millisecond' AND ${needsContainer}))`;
  const rows = await pool.any(sql.unsafe`
    SELECT j.id::text AS id, j.run_id::text AS run_id, j.runs_on, j.reason, j.unroutable_since,
           coalesce(j.queued_at, j.created_at) AS order_at, ${needsContainer} AS needs_container, ${routing} AS routing,
           j.kind, le.entry->'checkout' AS checkout, le.entry->'container' AS container, le.entry->'retry' AS retry,
           r.lock_entry->'registries' AS registries, r.lock_entry->'installEnv' AS install_env
    FROM jobs j JOIN runs r ON r.id = j.run_id ${entry}
    WHERE j.status = 'queued' AND (j.ready_at IS NULL OR j.ready_at <= now()) AND ${cursor} AND ${only}
    ORDER BY coalesce(j.queued_at, j.created_at), j.id
    LIMIT ${PAGE_SIZE}`);
  type Row = Omit<QueuedJob, 'routing' | 'wire_features' | 'min_protocol'> & WireParts & { routing: unknown };
  return (rows as unknown as Row[]).map(({ kind, checkout, container, registries, install_env, retry, ...row }) => {
    const features = wireFeatures({ kind, checkout, container, registries, install_env, retry });
    return { ...row, routing: routingOf(row.routing), wire_features: features, min_protocol: protocolFloor(features) };
  });
}

/** Whether a configured scaler could start an agent satisfying these matchers. */
export type SpawnableCheck = (matchers: readonly string[]) => boolean;

/**
 * A full annotation pass reads every queued job; the ones in between read only the jobs not yet
 * marked (and container jobs whose grace is over) while the connected agents' labels and the
 * scalers' gates stay as they were, since a marked job's reason cannot change without one of
 * them. At least this often a full pass runs anyway.
 */
export const FULL_ANNOTATION_MS = 30_000;

export class Dispatcher {
  readonly #o: DispatcherOptions;
  /** Set by the scaling subsystem: a job a scaler can start an agent for is not "No jobs dispatched". */
  #spawnable: SpawnableCheck = () => false;
  /** What `#spawnable` answers from (the scalers' gates): a change calls for a full annotation pass. */
  #spawnableKey: () => string = () => '';
  /** The last full annotation pass: what it saw and when. */
  #annotated: { key: string; at: number } | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  readonly #inflight = new Set<Promise<void>>();

  constructor(options: DispatcherOptions) {
    this.#o = options;
  }

  /** Runs a pass now, or right after the current one. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.#pass();
          this.#o.onPass?.();
        } catch (error) {
          this.#o.logger.warn({ err: messageOf(error) }, 'dispatch pass failed; retrying on the next wake');
        }
      } while (this.#again && !this.#stopped);
    })().finally(() => {
      this.#running = undefined;
    });
  }

  /** Waits for the current pass and the sends it started. */
  async idle(): Promise<void> {
    while (this.#running !== undefined || this.#inflight.size > 0) {
      await this.#running;
      await Promise.all([...this.#inflight]);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.idle();
  }

  async #pass(): Promise<void> {
    let idle = this.#o.registry.idle();
    if (idle.length === 0) return;
    let after: { at: number; id: string } | undefined;
    for (let page = 0; page < MAX_PAGES && idle.length > 0 && !this.#stopped; page += 1) {
      const jobs = await this.#page(after);
      if (jobs.length === 0) break;
      for (const job of jobs) {
        const matchers = requiredMatchers(job.runs_on, job.needs_container);
        // An agent below the protocol of the job's fields would drop or refuse them: never it.
        const fits = (s: AgentSession): boolean => s.protocolVersion >= job.min_protocol && satisfies(matchers, s.labelSet);
        // Among the idle agents that satisfy it, the job's routing picks (prefer first, avoid last).
        const session = job.routing === null ? idle.find(fits) : pickByRouting(idle.filter(fits), (s) => s.labelSet, job.routing);
        if (session === undefined) continue;
        const claimed = await this.#claim(job.id, job.run_id, session);
        if (!claimed) continue;
        idle = idle.filter((s) => s.activeJobs.size < s.capacity && !(s.ephemeral && s.dispatchedCount > 0));
        if (idle.length === 0) break;
      }
      const last = jobs[jobs.length - 1] as QueuedJob;
      after = { at: last.order_at, id: last.id };
      if (jobs.length < PAGE_SIZE) break;
    }
  }

  /** Which matchers a configured scaler can serve (the scaling subsystem; read at each annotation). */
  setSpawnable(check: SpawnableCheck, key: () => string = () => ''): void {
    this.#spawnable = check;
    this.#spawnableKey = key;
    this.#annotated = undefined;
  }

  #page(after: { at: number; id: string } | undefined): Promise<QueuedJob[]> {
    return queuedJobsPage(this.#o.pool, after);
  }

  async #claim(jobId: string, runId: string, session: AgentSession): Promise<boolean> {
    // One statement, job lock only: a claim never waits on a run lock while holding a job. It
    // returns the dispatch row, so the message is built without reading the job again.
    const claimedAt = this.#o.tracing?.enabled === true ? nowMs() : 0;
    const row = await claimDispatchRow(this.#o.pool, jobId, session.agentId);
    if (row === null) return false;
    session.activeJobs.add(jobId);
    session.dispatchedCount += 1;
    session.lastDispatchAt = Date.now();
    const sending = this.#send(row, runId, session, claimedAt).finally(() => this.#inflight.delete(sending));
    this.#inflight.add(sending);
    return true;
  }

  /**
   * The run starts with its first dispatched job (a run waiting for its concurrency group stays
   * `queued` while its filter or build runs: it starts with the first job dispatched after
   * admission). Its own statement after the claim (the claim takes no run lock), written while
   * the message is built, and committed before the message goes out.
   */
  #startRun(runId: string): Promise<unknown> {
    return this.#o.pool.query(sql.unsafe`
      UPDATE runs SET status = 'running', started_at = coalesce(started_at, now()), updated_at = now()
      WHERE id = ${runId} AND status = 'queued' AND concurrency_state IS DISTINCT FROM 'waiting'`);
  }

  async #send(row: DispatchRow, runId: string, session: AgentSession, claimedAt: number): Promise<void> {
    const jobId = row.job_id;
    let stage = 'build';
    try {
      const started = this.#startRun(runId);
      // Both settle before either's failure is acted on: no statement of this job is left running.
      const [built, run] = await Promise.allSettled([this.#o.build(row, session), started]);
      if (built.status === 'rejected') throw built.reason;
      if (run.status === 'rejected') throw run.reason;
      const message = built.value;
      stage = 'send';
      const tracing = this.#o.tracing;
      // The agent's job span joins the run's trace; an agent older than protocol 5 refuses the field.
      if (tracing?.enabled === true && row.trace_context && session.protocolVersion >= TRACE_PROTOCOL_VERSION) message.traceparent = row.trace_context;
      await session.send(message);
      if (tracing?.enabled === true) traceDispatch(tracing, row, claimedAt, nowMs(), session.agentId);
      this.#o.onDispatched?.(jobId, session.agentId);
    } catch (error) {
      this.#o.logger.warn({ err: messageOf(error), jobId, agentId: session.agentId, stage }, 'dispatch failed; putting the job back');
      session.activeJobs.delete(jobId);
      session.dispatchedCount = Math.max(0, session.dispatchedCount - 1);
      // A refusal the same run would always get (a secret context's rule) fails the job now.
      const permanent = stage === 'build' && (error as { permanent?: unknown } | null)?.permanent === true;
      const put =
        stage === 'build' && error instanceof SecretOpenError
          ? this.#putBackSealed(jobId, session.agentId, messageOf(error))
          : this.#putBack(jobId, session.agentId, stage === 'send', messageOf(error), permanent);
      await put.catch((e: unknown) => this.#o.logger.error({ err: messageOf(e), jobId }, 'could not put a job back after a failed dispatch'));
      this.wake();
    }
  }

  /**
   * A send the socket refused was not the job's fault: the attempt is given back. A message we
   * could not build counts as an attempt, so a job that can never be built stops at the limit.
   */
  async #putBack(jobId: string, agentId: string, socketFailure: boolean, why: string, permanent = false): Promise<void> {
    await this.#o.pool.transaction(async (tx) => {
      await lockRunsOfJobs(tx, sql.fragment`id = ${jobId}`);
      const row = (await tx.maybeOne(sql.unsafe`
        SELECT run_id::text AS run_id, attempts FROM jobs WHERE id = ${jobId} AND status = 'dispatched' AND agent_id = ${agentId} FOR UPDATE`)) as {
        run_id: string;
        attempts: number;
      } | null;
      if (row === null) return;
      if (permanent || (!socketFailure && row.attempts >= this.#o.maxDispatchAttempts)) {
        const reason = permanent ? why : `Dispatch failed ${row.attempts} times (limit ${this.#o.maxDispatchAttempts}): ${why}`;
        await tx.query(sql.unsafe`
          UPDATE jobs SET status = 'failed', reason = ${reason}, finished_at = now(), updated_at = now() WHERE id = ${jobId}`);
        await recordJobComplete(tx, row.run_id, jobId, 'failed', { reason });
        await progressRun(tx, row.run_id);
        return;
      }
      await tx.query(sql.unsafe`
        UPDATE jobs SET status = 'queued', agent_id = NULL, dispatched_at = NULL,
               attempts = ${socketFailure ? sql.fragment`greatest(attempts - 1, 0)` : sql.fragment`attempts`},
               reason = ${socketFailure ? null : `Dispatch attempt failed: ${why}`}, updated_at = now()
        WHERE id = ${jobId}`);
    });
  }

  /**
   * Sealed secrets this node cannot open (a master-key rotation under way: another node may hold
   * the new key). The job goes back to the queue, not dispatchable before the cluster's back-off
   * so any node can take it, and counts an attempt; at the attempt limit no coordinator opened
   * it and it fails with the spec's message.
   */
  async #putBackSealed(jobId: string, agentId: string, why: string): Promise<void> {
    const max = this.#o.maxDispatchAttempts;
    const backoffMs = this.#o.sealedSecretsRetryBackoffMs();
    await this.#o.pool.transaction(async (tx) => {
      await lockRunsOfJobs(tx, sql.fragment`id = ${jobId}`);
      const row = (await tx.maybeOne(sql.unsafe`
        SELECT run_id::text AS run_id, attempts FROM jobs WHERE id = ${jobId} AND status = 'dispatched' AND agent_id = ${agentId} FOR UPDATE`)) as {
        run_id: string;
        attempts: number;
      } | null;
      if (row === null) return;
      if (row.attempts >= max) {
        const reason = `${SEALED_SECRETS_UNOPENABLE} (${row.attempts} attempts, the last on node ${this.#o.nodeId}: ${why})`;
        await tx.query(sql.unsafe`
          UPDATE jobs SET status = 'failed', reason = ${reason}, finished_at = now(), updated_at = now() WHERE id = ${jobId}`);
        await recordJobComplete(tx, row.run_id, jobId, 'failed', { reason });
        await progressRun(tx, row.run_id);
        return;
      }
      const reason = `Sealed secrets could not be opened on node ${this.#o.nodeId} (attempt ${row.attempts} of ${max}): ${why}; queued again, retried after ${Math.round(backoffMs / 1000)} s`;
      await tx.query(sql.unsafe`
        UPDATE jobs SET status = 'queued', agent_id = NULL, dispatched_at = NULL, reason = ${reason},
               ready_at = now() + ${backoffMs} * interval '1 millisecond', updated_at = now()
        WHERE id = ${jobId}`);
    });
    this.#o.logger.warn({ jobId, backoffMs }, 'sealed secrets could not be opened with this node\'s master keys; job queued again after the back-off');
  }

  /**
   * Marks queued jobs no online agent (on any node) can take and no configured scaler can start
   * one for with the "No jobs dispatched" reason, clears it when one can, and fails container
   * jobs left unroutable past the grace.
   */
  async annotateUnroutable(): Promise<{ marked: number; failed: number; full: boolean }> {
    // Distinct label sets, not every agent: thousands of agents usually carry a handful of sets,
    // and this runs every tick (the many-agents bench's idle CPU).
    const agents = (await this.#o.pool.any(sql.unsafe`SELECT DISTINCT labels, protocol_version FROM agents WHERE connected`)) as readonly { labels: string[]; protocol_version: number | null }[];
    const speakers = agents.map((a) => ({ labels: new Set(a.labels), protocol: a.protocol_version }));
    const labelSets = speakers.map((a) => a.labels);
    // A job's mark depends only on these: while they hold, marked jobs need not be read again
    // (with a deep queue and no agent for it, re-reading every queued job each tick was a
    // growing burst of database work every 2 s, issue 19).
    const key = `${[...new Set(agents.map((a) => `${a.protocol_version ?? ''}\u0003${[...a.labels].sort().join('\u0000')}`))].sort().join('\u0001')}\u0002${this.#spawnableKey()}`;
    const now = Date.now();
    const full = this.#annotated === undefined || this.#annotated.key !== key || now - this.#annotated.at >= FULL_ANNOTATION_MS;
    const options = full ? {} : { unmarkedOrContainerPastMs: this.#o.containerGraceMs };
    let marked = 0;
    let failed = 0;
    // Read only when a job fails for a sandbox or a protocol its labels' agents lack (its reason names them).
    type Row = OnlineAgentRow & VersionedAgentRow;
    let online: Promise<Row[]> | undefined;
    const onlineAgents = (): Promise<Row[]> =>
      (online ??= this.#o.pool.any(sql.unsafe`SELECT id, labels, unavailable_sandboxes, protocol_version FROM agents WHERE connected`) as Promise<Row[]>);
    let after: { at: number; id: string } | undefined;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const jobs = await queuedJobsPage(this.#o.pool, after, options);
      if (jobs.length === 0) break;
      const clear: string[] = [];
      const mark: Array<[string, string]> = [];
      for (const job of jobs) {
        const matchers = requiredMatchers(job.runs_on, job.needs_container);
        const routable = speakers.some((a) => speaks(a.protocol, job.min_protocol) && satisfies(matchers, a.labels)) || this.#spawnable(matchers);
        if (routable) {
          if (job.reason?.startsWith(NO_JOBS_DISPATCHED) || job.unroutable_since !== null) clear.push(job.id);
          continue;
        }
        // Agents carry all its labels but speak a protocol that drops or refuses its fields: left
        // queued it would wait for an upgrade nobody is told is needed; it fails now, naming them.
        if (job.min_protocol > 0 && labelSets.some((labels) => satisfies(matchers, labels))) {
          const error = protocolTooOldError(job.wire_features, matchers, job.runs_on, await onlineAgents());
          failed += await this.#failQueued(job, `${error.code}: ${error.message}`, { code: error.code });
          continue;
        }
        // Agents carry its labels but none offers the sandbox: waiting cannot help, it fails now.
        const need = sandboxNeed(matchers);
        if (need !== null && labelSets.some((labels) => satisfies(need.rest, labels))) {
          const error = sandboxUnavailableError(need, job.runs_on, await onlineAgents());
          failed += await this.#failQueued(job, `${error.code}: ${error.message}`, { code: error.code });
          continue;
        }
        // The matchers, not runsOn alone: a container job's reason names the sandbox it needs too.
        const reason = noJobsReason(matchers);
        if (job.needs_container && job.unroutable_since !== null && Date.now() - job.unroutable_since >= this.#o.containerGraceMs) {
          failed += await this.#failUnroutable(job, matchers);
          continue;
        }
        if (job.reason !== reason || job.unroutable_since === null) mark.push([job.id, reason]);
      }
      // One statement per page, not one per job: with no agent for them, every queued job of a
      // burst is marked, and per-job updates were one statement per webhook (issue 19). Rows
      // another transaction holds are skipped, never waited for (so several rows locked in one
      // statement cannot deadlock with a run's own updates); the next pass takes them.
      if (clear.length > 0) {
        await this.#o.pool.query(sql.unsafe`${PLAN_EACH_EXECUTION}
          UPDATE jobs SET reason = CASE WHEN reason LIKE ${`${NO_JOBS_DISPATCHED}%`} THEN NULL ELSE reason END,
                 unroutable_since = NULL, updated_at = now()
          WHERE id IN (SELECT id FROM jobs WHERE id = ANY(${sql.array(clear, 'uuid')}) AND status = 'queued' FOR UPDATE SKIP LOCKED)`);
      }
      if (mark.length > 0) {
        const rows = await this.#o.pool.any(sql.unsafe`${PLAN_EACH_EXECUTION}
          UPDATE jobs j SET reason = v.reason, unroutable_since = coalesce(j.unroutable_since, now()), updated_at = now()
          FROM (SELECT q.id, v.reason FROM ${sql.unnest(mark, ['uuid', 'text'])} AS v(id, reason)
                JOIN jobs q ON q.id = v.id AND q.status = 'queued' FOR UPDATE OF q SKIP LOCKED) AS v
          WHERE j.id = v.id
          RETURNING j.id`);
        marked += rows.length;
      }
      const last = jobs[jobs.length - 1] as QueuedJob;
      after = { at: last.order_at, id: last.id };
      if (jobs.length < PAGE_SIZE) break;
    }
    if (full) this.#annotated = { key, at: now };
    return { marked, failed, full };
  }

  /**
   * Fails jobs `queued` longer than `timeoutMs`, counted from when they last became dispatchable
   * (queued, or a later `ready_at` back-off). One transaction per job, like the other failures
   * here, so run locks are never taken for several runs at once. Safe on every node at once.
   */
  async failQueueTimeouts(timeoutMs: number): Promise<string[]> {
    const expired = (await this.#o.pool.any(sql.unsafe`
      SELECT id::text AS id, run_id::text AS run_id, runs_on FROM jobs
      WHERE status = 'queued' AND greatest(coalesce(queued_at, created_at), ready_at) < now() - ${timeoutMs} * interval '1 millisecond'
      ORDER BY coalesce(queued_at, created_at), id
      LIMIT ${QUEUE_TIMEOUT_BATCH}`)) as readonly { id: string; run_id: string; runs_on: string[] }[];
    const failed: string[] = [];
    for (const job of expired) {
      const reason = queueTimeoutReason(timeoutMs, job.runs_on);
      const done = await this.#o.pool.transaction(async (tx) => {
        await lockRunsOfJobs(tx, sql.fragment`id = ${job.id}`);
        // Re-checked under the lock: dispatched (or cancelled) meanwhile means it is not ours.
        const row = await tx.maybeOne(sql.unsafe`
          UPDATE jobs SET status = 'failed', reason = ${reason}, finished_at = now(), updated_at = now()
          WHERE id = (SELECT id FROM jobs WHERE id = ${job.id} AND status = 'queued'
                        AND greatest(coalesce(queued_at, created_at), ready_at) < now() - ${timeoutMs} * interval '1 millisecond'
                      FOR UPDATE SKIP LOCKED)
          RETURNING id`);
        if (row === null) return false;
        await recordJobComplete(tx, job.run_id, job.id, 'failed', { reason });
        await progressRun(tx, job.run_id);
        return true;
      });
      if (done) failed.push(job.id);
    }
    return failed;
  }

  #failUnroutable(job: QueuedJob, matchers: readonly string[]): Promise<number> {
    const reason = `Unroutable: no agent can start containers for this job (needs ${matchers.join(', ')}) within the grace window of ${Math.round(this.#o.containerGraceMs / 1000)}s`;
    return this.#failQueued(job, reason);
  }

  /** Fails a still-queued job with `reason` (0 when it left the queue meanwhile). */
  async #failQueued(job: QueuedJob, reason: string, extra: Record<string, unknown> = {}): Promise<number> {
    const done = await this.#o.pool.transaction(async (tx) => {
      await lockRunsOfJobs(tx, sql.fragment`id = ${job.id}`);
      const row = await tx.maybeOne(sql.unsafe`
        UPDATE jobs SET status = 'failed', reason = ${reason}, finished_at = now(), updated_at = now()
        WHERE id = (SELECT id FROM jobs WHERE id = ${job.id} AND status = 'queued' FOR UPDATE SKIP LOCKED) RETURNING id`);
      if (row === null) return 0;
      await recordJobComplete(tx, job.run_id, job.id, 'failed', { reason, ...extra });
      await progressRun(tx, job.run_id);
      return 1;
    });
    if (done === 1) this.#o.logger.warn({ jobId: job.id, runId: job.run_id, reason }, 'queued job failed: no agent can run it');
    return done;
  }
}
