// The database side of the relay status forwarder (docs/run-index.md): claims pending rows of the
// run status feed (migration 0600: one row per run or job status change; this module owns the
// `relay_sent_at` column, the forge status reporter owns `forge_done_at`), reads the CURRENT run
// and job records they point at and makes them `execution.status` / `job.status.forward`
// messages, and keeps the feed bounded.
//
// `updatedAt` of a message is the later of the record's `updated_at` and its newest feed row's
// `at`: `updated_at = now()` is the time its transaction STARTED, so a status written by a
// transaction that began earlier but committed later could otherwise look older than the status
// it replaced; a feed row's `at` is `clock_timestamp()` of the change itself, and changes of one
// row are serialised by its row lock. The relay keeps the message with the newest `updatedAt`.
import { Type } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { MAX_STATUS_REASON_LENGTH, type ExecutionStatus, type JobStatusForward, type OrchestratorToRelay } from '../../../schemas/wire/relay.ts';
import { PLAN_EACH_EXECUTION, sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { Nullable } from '../runs/run-record.ts';

/** The feed trigger's NOTIFY channel (migration 0600). */
export const RUN_STATUS_CHANNEL = 'svc_run_status';

const Time = Nullable(Type.Number());

const RunRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  workflow: Type.String(),
  repository: Type.String(),
  ref: Nullable(Type.String()),
  sha: Type.String(),
  event_name: Type.String(),
  actor: Type.String(),
  parent_run_id: Nullable(Type.String()),
  original_run_id: Nullable(Type.String()),
  triggered_by: Nullable(Type.String()),
  cancelled_by: Nullable(Type.String()),
  created_at: Type.Number(),
  started_at: Time,
  finished_at: Time,
  updated_at: Type.Number(),
});

const JobRow = Type.Object({
  id: Type.String(),
  run_id: Type.String(),
  org_id: Type.String(),
  display_name: Type.String(),
  kind: Type.String(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  started_at: Time,
  finished_at: Time,
  updated_at: Type.Number(),
});

const FeedRow = Type.Object({ seq: Type.String(), run_id: Type.String(), job_id: Nullable(Type.String()) });

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const cut = (text: string | null): string | null => (text === null ? null : text.slice(0, MAX_STATUS_REASON_LENGTH));

/** Current records of these runs as `execution.status` messages (runs that no longer exist are left out). */
export async function runMessages(q: CommonQueryMethods, runIds: readonly string[]): Promise<ExecutionStatus[]> {
  if (runIds.length === 0) return [];
  const rows = await q.any(sqlTyped(RunRow)`${PLAN_EACH_EXECUTION}
    SELECT r.id::text AS id, r.org_id, r.status, r.reason, r.workflow, r.repository, r.ref, r.sha, r.event_name, r.actor,
      r.parent_run_id::text AS parent_run_id, r.original_run_id::text AS original_run_id, r.triggered_by, r.cancelled_by,
      r.created_at, coalesce(r.started_at, (SELECT min(j.started_at) FROM jobs j WHERE j.run_id = r.id)) AS started_at, r.finished_at,
      greatest(r.updated_at, (SELECT max(f.at) FROM run_status_feed f WHERE f.run_id = r.id AND f.job_id IS NULL)) AS updated_at
    FROM runs r WHERE r.id = any(${sql.array([...runIds], 'uuid')})
    ORDER BY r.created_at, r.id`);
  return rows.map((r) => ({
    type: 'execution.status',
    runId: r.id,
    workflow: r.workflow,
    repository: r.repository,
    status: r.status,
    updatedAt: new Date(r.updated_at).toISOString(),
    orgId: r.org_id,
    reason: cut(r.reason),
    eventName: r.event_name,
    ref: r.ref,
    sha: r.sha,
    actor: r.actor,
    createdAt: new Date(r.created_at).toISOString(),
    startedAt: iso(r.started_at),
    finishedAt: iso(r.finished_at),
    parentRunId: r.parent_run_id,
    originalRunId: r.original_run_id,
    triggeredBy: r.triggered_by,
    cancelledBy: r.cancelled_by,
  }));
}

/** Current records of these jobs as `job.status.forward` messages. */
export async function jobMessages(q: CommonQueryMethods, jobIds: readonly string[]): Promise<JobStatusForward[]> {
  if (jobIds.length === 0) return [];
  const rows = await q.any(sqlTyped(JobRow)`${PLAN_EACH_EXECUTION}
    SELECT j.id::text AS id, j.run_id::text AS run_id, j.org_id, j.display_name, j.kind, j.status, j.reason, j.started_at, j.finished_at,
      greatest(j.updated_at, (SELECT max(f.at) FROM run_status_feed f WHERE f.run_id = j.run_id AND f.job_id = j.id)) AS updated_at
    FROM jobs j WHERE j.id = any(${sql.array([...jobIds], 'uuid')})
    ORDER BY j.run_id, j.created_at, j.id`);
  return rows.map((j) => ({
    type: 'job.status.forward',
    runId: j.run_id,
    jobId: j.id,
    job: j.display_name,
    status: j.status,
    updatedAt: new Date(j.updated_at).toISOString(),
    orgId: j.org_id,
    kind: j.kind,
    reason: cut(j.reason),
    startedAt: iso(j.started_at),
    finishedAt: iso(j.finished_at),
  }));
}

/** Sends each message; false at the first the link did not accept. */
function sendAll(messages: readonly OrchestratorToRelay[], send: (message: OrchestratorToRelay) => boolean): boolean {
  for (const message of messages) if (!send(message)) return false;
  return true;
}

export interface ForwardResult {
  /** Feed rows claimed (0: nothing pending for the org). */
  claimed: number;
  /** False when the link refused a message: the claimed rows stay pending. */
  sent: boolean;
  messages: number;
}

/**
 * Claims up to `limit` pending rows of `orgId` (oldest first; rows another node holds are
 * skipped), sends one message per run and per job they name (several changes of one run or job
 * collapse into its current state; a run's message before its jobs'), and marks the rows sent
 * only when the link accepted every message.
 */
export async function forwardPending(pool: DatabasePool, orgId: string, send: (message: OrchestratorToRelay) => boolean, limit: number): Promise<ForwardResult> {
  return pool.transaction(async (tx) => {
    const rows = await tx.any(sqlTyped(FeedRow)`
      SELECT seq::text AS seq, run_id::text AS run_id, job_id::text AS job_id FROM run_status_feed
      WHERE relay_sent_at IS NULL AND org_id = ${orgId}
      ORDER BY seq LIMIT ${limit} FOR UPDATE SKIP LOCKED`);
    if (rows.length === 0) return { claimed: 0, sent: true, messages: 0 };
    const runIds = [...new Set(rows.filter((r) => r.job_id === null).map((r) => r.run_id))];
    const jobIds = [...new Set(rows.filter((r) => r.job_id !== null).map((r) => r.job_id as string))];
    const messages = [...(await runMessages(tx, runIds)), ...(await jobMessages(tx, jobIds))];
    if (!sendAll(messages, send)) return { claimed: rows.length, sent: false, messages: 0 };
    // Rows of runs or jobs deleted meanwhile have nothing to send: handled too.
    await tx.query(sql.unsafe`${PLAN_EACH_EXECUTION}UPDATE run_status_feed SET relay_sent_at = now() WHERE seq = any(${sql.array(rows.map((r) => r.seq), 'int8')})`);
    return { claimed: rows.length, sent: true, messages: messages.length };
  });
}

/** Whether rows of `orgId` are still pending (e.g. held by the other consumer's claim when this one skipped them). */
export async function hasPending(pool: DatabasePool, orgId: string): Promise<boolean> {
  return (await pool.oneFirst(sqlTyped(Type.Object({ pending: Type.Boolean() }))`
    SELECT EXISTS (SELECT 1 FROM run_status_feed WHERE relay_sent_at IS NULL AND org_id = ${orgId}) AS pending`)) as boolean;
}

export interface ResendLimits {
  /** Runs updated at or after this time (bounded below by `windowMs` ago). */
  since: Date;
  windowMs: number;
  maxRuns: number;
  maxJobs: number;
}

/**
 * The runs of `orgId` to resend after a (re)connect: updated since `since`, newest first, at most
 * `maxRuns`. Runs created within the window (index on org and creation time) plus runs with a
 * feed row in it (long-running runs whose status changed lately).
 */
export async function recentRunIds(pool: DatabasePool, orgId: string, limits: Pick<ResendLimits, 'since' | 'windowMs' | 'maxRuns'>): Promise<string[]> {
  const since = sql.fragment`greatest(now() - ${limits.windowMs} * interval '1 millisecond', ${limits.since.toISOString()}::timestamptz)`;
  return [
    ...(await pool.anyFirst(sqlTyped(Type.Object({ id: Type.String() }))`
      SELECT id FROM (
        SELECT r.id::text AS id, r.updated_at FROM runs r
        WHERE r.org_id = ${orgId} AND r.created_at >= now() - ${limits.windowMs} * interval '1 millisecond' AND r.updated_at >= ${since}
        UNION
        SELECT r.id::text AS id, r.updated_at FROM runs r
        WHERE r.id IN (SELECT f.run_id FROM run_status_feed f WHERE f.org_id = ${orgId} AND f.at >= ${since})
      ) recent ORDER BY updated_at DESC, id LIMIT ${limits.maxRuns}`)),
  ];
}

/** Jobs of these runs, at most `maxJobs`. */
export async function jobIdsOfRuns(pool: DatabasePool, runIds: readonly string[], maxJobs: number): Promise<string[]> {
  if (runIds.length === 0 || maxJobs <= 0) return [];
  return [
    ...(await pool.anyFirst(sqlTyped(Type.Object({ id: Type.String() }))`
      SELECT id::text AS id FROM jobs WHERE run_id = any(${sql.array([...runIds], 'uuid')}) ORDER BY run_id, created_at, id LIMIT ${maxJobs}`)),
  ];
}

/**
 * Marks pending rows the relay link cannot serve as handled, oldest first, at most `limit`:
 * with `linkOrgId`, rows of other orgs (a link carries one org: its platform token's); without a
 * link (no `platform.url`), every row. Only rows older than `graceMs`, so that in a cluster whose
 * nodes are configured differently a node that does serve them has sent them first.
 */
export async function settleUnservable(pool: DatabasePool, linkOrgId: string | undefined, graceMs: number, limit: number): Promise<number> {
  const org = linkOrgId === undefined ? sql.fragment`TRUE` : sql.fragment`org_id <> ${linkOrgId}`;
  const rows = await pool.any(sql.unsafe`
    UPDATE run_status_feed SET relay_sent_at = now()
    WHERE seq IN (SELECT seq FROM run_status_feed WHERE relay_sent_at IS NULL AND ${org} AND at < now() - ${graceMs} * interval '1 millisecond'
                  ORDER BY seq LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING seq`);
  return rows.length;
}

/** Deletes rows both consumers handled (`relay_sent_at` and `forge_done_at` set) more than `afterMs` ago, at most `limit`. */
export async function pruneHandled(pool: DatabasePool, afterMs: number, limit: number): Promise<number> {
  const rows = await pool.any(sql.unsafe`
    DELETE FROM run_status_feed
    WHERE seq IN (SELECT seq FROM run_status_feed
                  WHERE relay_sent_at IS NOT NULL AND forge_done_at IS NOT NULL
                    AND greatest(relay_sent_at, forge_done_at) < now() - ${afterMs} * interval '1 millisecond'
                  ORDER BY seq LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING seq`);
  return rows.length;
}
