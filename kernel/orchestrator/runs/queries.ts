// Run detail and run lists for the admin route and `svc-admin runs`.
import { Type, type Static } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { MAX_ADMIN_RUN_LIST } from '../../../schemas/http/admin.ts';
import { Nullable, RUN_IDENTITY_COLUMNS } from './run-record.ts';


const RunRow = Type.Object({
  ...RUN_IDENTITY_COLUMNS,
  trust_tier: Type.String(),
  is_fork: Type.String(),
  head_ref: Type.String(),
  head_repository: Type.String(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  content_hash: Type.String(),
  lockfile_hash: Nullable(Type.String()),
  workflow_modified: Type.Boolean(),
  created_at: Type.Number(),
  finished_at: Nullable(Type.Number()),
});

const JobRow = Type.Object({
  id: Type.String(),
  name: Type.String(),
  display_name: Type.String(),
  kind: Type.String(),
  status: Type.String(),
  needs: Type.Array(Type.String()),
  runs_on: Type.Array(Type.String()),
  matrix: Type.Unknown(),
  build_key: Nullable(Type.String()),
  waits_for_build: Nullable(Type.String()),
  reason: Nullable(Type.String()),
});

export interface RunSummary {
  runId: string;
  orgId: string;
  deliveryId: string | null;
  sourceId: string | null;
  provider: string;
  repository: string;
  workflow: string;
  workflowRepoIdentifier: string;
  workflowSha: string;
  workflowBranch: string | null;
  sha: string;
  ref: string | null;
  eventName: string;
  trustTier: string;
  isFork: string;
  headRef: string;
  headRepository: string;
  status: string;
  reason: string | null;
  contentHash: string;
  lockfileHash: string | null;
  workflowModified: boolean;
  createdAt: string;
  finishedAt: string | null;
}

export interface JobSummary {
  jobId: string;
  name: string;
  displayName: string;
  kind: string;
  status: string;
  needs: string[];
  runsOn: string[];
  matrix: unknown;
  buildKey: string | null;
  waitsForBuild: string | null;
  reason: string | null;
}

export interface RunDetail extends RunSummary {
  jobs: JobSummary[];
}

const RUN_COLUMNS = sql.fragment`id::text as id, org_id, delivery_id, source_id::text as source_id, provider, repository, workflow_repository,
  workflow, workflow_sha, workflow_ref, sha, ref, event_name, trust_tier, is_fork, head_ref, head_repository, status, reason, content_hash,
  lockfile_hash, workflow_modified, created_at, finished_at`;

function toSummary(r: Static<typeof RunRow>): RunSummary {
  return {
    runId: r.id,
    orgId: r.org_id,
    deliveryId: r.delivery_id,
    sourceId: r.source_id,
    provider: r.provider,
    repository: r.repository,
    workflow: r.workflow,
    workflowRepoIdentifier: r.workflow_repository,
    workflowSha: r.workflow_sha,
    workflowBranch: r.workflow_ref?.startsWith('refs/heads/') ? r.workflow_ref.slice('refs/heads/'.length) : r.workflow_ref,
    sha: r.sha,
    ref: r.ref,
    eventName: r.event_name,
    trustTier: r.trust_tier,
    isFork: r.is_fork,
    headRef: r.head_ref,
    headRepository: r.head_repository,
    status: r.status,
    reason: r.reason,
    contentHash: r.content_hash,
    lockfileHash: r.lockfile_hash,
    workflowModified: r.workflow_modified,
    createdAt: new Date(r.created_at).toISOString(),
    finishedAt: r.finished_at === null ? null : new Date(r.finished_at).toISOString(),
  };
}

export const MAX_RUN_LIST = MAX_ADMIN_RUN_LIST;

export async function listRuns(pool: DatabasePool, options: { limit?: number; orgId?: string } = {}): Promise<RunDetail[]> {
  const limit = Math.min(MAX_RUN_LIST, Math.max(1, options.limit ?? 50));
  const rows = await pool.any(sqlTyped(RunRow)`
    select ${RUN_COLUMNS} from runs ${options.orgId === undefined ? sql.fragment`` : sql.fragment`where org_id = ${options.orgId}`}
    order by created_at desc, id limit ${limit}`);
  const jobs = await jobsOf(pool, rows.map((r) => r.id));
  return rows.map((r) => ({ ...toSummary(r), jobs: jobs.get(r.id) ?? [] }));
}

async function jobsOf(pool: DatabasePool, runIds: string[]): Promise<Map<string, JobSummary[]>> {
  const out = new Map<string, JobSummary[]>();
  if (runIds.length === 0) return out;
  const rows = await pool.any(sqlTyped(Type.Intersect([JobRow, Type.Object({ run_id: Type.String() })]))`
    select id::text as id, run_id::text as run_id, name, display_name, kind, status, needs, runs_on, matrix, build_key, waits_for_build, reason
    from jobs where run_id = any(${sql.array(runIds, 'uuid')}) order by created_at, display_name, id`);
  for (const j of rows) {
    const list = out.get(j.run_id) ?? [];
    list.push({
      jobId: j.id,
      name: j.name,
      displayName: j.display_name,
      kind: j.kind,
      status: j.status,
      needs: j.needs,
      runsOn: j.runs_on,
      matrix: j.matrix,
      buildKey: j.build_key,
      waitsForBuild: j.waits_for_build,
      reason: j.reason,
    });
    out.set(j.run_id, list);
  }
  return out;
}

export async function getRunDetail(pool: DatabasePool, runId: string): Promise<RunDetail | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(runId)) return null;
  const row = await pool.maybeOne(sqlTyped(RunRow)`select ${RUN_COLUMNS} from runs where id = ${runId}`);
  if (row === null) return null;
  return { ...toSummary(row), jobs: (await jobsOf(pool, [row.id])).get(row.id) ?? [] };
}
