// Identity claims come only from the run and job rows (spec "Identity token"): a step never sets
// them. Every claim is always present; what the run did not resolve reads '', 'unresolved' or null.
import { Type, type Static } from 'typebox';
import type { AttestationOrigin, IdentityClaims } from '../../../schemas/identity.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';

export const RunJobRow = Type.Object({
  job_id: Type.String(),
  job_status: Type.String(),
  job_name: Type.String(),
  /** ISO 8601; null before the job started. */
  job_started_at: Type.Union([Type.String(), Type.Null()]),
  agent_id: Type.Union([Type.String(), Type.Null()]),
  run_id: Type.String(),
  org_id: Type.String(),
  provider: Type.String(),
  repository: Type.String(),
  workflow_repository: Type.String(),
  workflow: Type.String(),
  sha: Type.String(),
  ref: Type.Union([Type.String(), Type.Null()]),
  event_name: Type.String(),
  subject_kind: Type.String(),
  actor: Type.String(),
  trust_tier: Type.String(),
  is_fork: Type.String(),
  head_ref: Type.String(),
  head_repository: Type.String(),
  source_origin: Type.String(),
  parent_run_id: Type.Union([Type.String(), Type.Null()]),
});
export type RunJobRow = Static<typeof RunJobRow>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export async function loadRunJob(pool: DatabasePool, jobId: string): Promise<RunJobRow | undefined> {
  if (!isUuid(jobId)) return undefined;
  const row = await pool.maybeOne(sqlTyped(RunJobRow)`
    SELECT j.id::text AS job_id, j.status AS job_status, j.display_name AS job_name,
           to_char(j.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS job_started_at, j.agent_id,
           r.id::text AS run_id, r.org_id, r.provider, r.repository, r.workflow_repository, r.workflow, r.sha, r.ref,
           r.event_name, r.subject_kind, r.actor, r.trust_tier, r.is_fork, r.head_ref, r.head_repository,
           r.source_origin, r.parent_run_id::text AS parent_run_id
    FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ${jobId}::uuid`);
  return row ?? undefined;
}

/** `repo:<owner/repo>:ref:<ref>:workflow:<name>` or `repo:<owner/repo>:pull_request`. */
export function subjectOf(row: Pick<RunJobRow, 'repository' | 'ref' | 'workflow' | 'subject_kind'>): string {
  if (row.subject_kind === 'pull_request') return `repo:${row.repository}:pull_request`;
  return `repo:${row.repository}:ref:${row.ref ?? ''}:workflow:${row.workflow}`;
}

const oneOf = <T extends string>(value: string, allowed: readonly T[], fallback: T): T => ((allowed as readonly string[]).includes(value) ? (value as T) : fallback);

export interface ClaimOptions {
  issuer: string;
  audience: string;
  orchestratorId: string;
  origin: AttestationOrigin;
  statementHash: string | null;
  nowSeconds: number;
  lifetimeSeconds: number;
  jti: string;
}

export function claimsFor(row: RunJobRow, options: ClaimOptions): IdentityClaims {
  const ref = row.ref ?? '';
  const isPr = row.subject_kind === 'pull_request';
  return {
    iss: options.issuer,
    aud: options.audience,
    sub: subjectOf(row),
    repository: row.repository,
    ref,
    base_ref: ref,
    head_ref: isPr ? row.head_ref : '',
    head_repository: isPr ? row.head_repository : '',
    is_fork: oneOf(row.is_fork, ['true', 'false', 'unresolved'], 'unresolved'),
    // A re-run keeps its parent's subject shape but says what started it.
    event_name: row.parent_run_id !== null ? 'rerun' : row.event_name,
    trust_tier: oneOf(row.trust_tier, ['trusted', 'unknown', 'unresolved'], 'unresolved'),
    actor: row.actor,
    sha: row.sha,
    workflow_ref: `${row.workflow}@${row.sha}`,
    svc_run_id: row.run_id,
    svc_job_id: row.job_id,
    org_id: row.org_id,
    orchestrator_id: options.orchestratorId,
    provider: row.provider,
    source_origin: oneOf(row.source_origin, ['triggered', 'run-remote'], 'triggered'),
    attestation_origin: options.origin,
    statement_hash: options.statementHash,
    workflow_repository: row.workflow_repository,
    iat: options.nowSeconds,
    nbf: options.nowSeconds,
    exp: options.nowSeconds + options.lifetimeSeconds,
    jti: options.jti,
  };
}
