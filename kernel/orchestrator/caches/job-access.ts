// Every agent request about a job (caches, events) is answered only for the agent the job is
// dispatched to, and only while the job is active: a stale or foreign agent gets a refusal.
import { Type, type Static } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { CommonQueryMethods } from 'slonik';
import { NotAllowedError, NotFoundError } from '../../../core/errors.ts';

export const ACTIVE_JOB_STATUSES = ['dispatched', 'running'] as const;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const AgentJobRow = Type.Object({
  job_id: Type.String(),
  run_id: Type.String(),
  org_id: Type.String(),
  kind: Type.String(),
  status: Type.String(),
  agent_id: Nullable(Type.String()),
  build_key: Nullable(Type.String()),
  content_hash: Type.String(),
  lockfile_hash: Nullable(Type.String()),
  trust_tier: Type.String(),
  subject_kind: Type.String(),
  /** Seconds since the job started (or was dispatched). */
  elapsed_seconds: Nullable(Type.Number()),
});
export type AgentJobRow = Static<typeof AgentJobRow>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The job `jobId` when `agentId` runs it now; throws NotFoundError / NotAllowedError otherwise.
 * `lock` takes a share lock on the job row so it cannot finish under a commit that needs it.
 */
export async function activeJobOf(db: DatabasePool | CommonQueryMethods, agentId: string, jobId: string, options: { lock?: boolean; area?: 'CACHE' | 'EVENT' | 'ARTIFACT' } = {}): Promise<AgentJobRow> {
  const area = options.area ?? 'CACHE';
  if (!UUID.test(jobId)) throw new NotFoundError(`SVC_ERR_${area}_JOB_UNKNOWN`, `job ${JSON.stringify(jobId.slice(0, 80))} does not exist`);
  const lock = options.lock === true ? sql.fragment`FOR SHARE OF j` : sql.fragment``;
  const row = await db.maybeOne(sqlTyped(AgentJobRow)`
    SELECT j.id::text AS job_id, j.run_id::text AS run_id, j.org_id, j.kind, j.status, j.agent_id, j.build_key,
           r.content_hash, r.lockfile_hash, r.trust_tier, r.subject_kind,
           extract(epoch FROM clock_timestamp() - coalesce(j.started_at, j.dispatched_at))::float8 AS elapsed_seconds
    FROM jobs j JOIN runs r ON r.id = j.run_id
    WHERE j.id = ${jobId.toLowerCase()} ${lock}`);
  if (row === null) throw new NotFoundError(`SVC_ERR_${area}_JOB_UNKNOWN`, `job ${jobId} does not exist`);
  if (row.agent_id !== agentId) {
    throw new NotAllowedError(`SVC_ERR_${area}_JOB_NOT_OWNED`, `job ${jobId} is not dispatched to agent ${agentId}; only the agent running a job may use its caches and events`);
  }
  if (!(ACTIVE_JOB_STATUSES as readonly string[]).includes(row.status)) {
    throw new NotAllowedError(`SVC_ERR_${area}_JOB_INACTIVE`, `job ${jobId} is ${row.status}, not running; requests for it are refused`);
  }
  return row;
}

/**
 * Trusted refs (spec "Cache flows"): the run is `trusted`, or it is not a pull request (a push
 * or tag in the repository itself). Everything else is isolated to its run's scope.
 */
export function isTrustedRef(row: Pick<AgentJobRow, 'trust_tier' | 'subject_kind'>): boolean {
  return row.trust_tier === 'trusted' || row.subject_kind !== 'pull_request';
}
