// Builds `job.dispatch` from the run and job rows: job config from the run's frozen lock entry,
// cache URLs from storage pointers, checkout credentials from the provider plugin.
import { Type, type Static } from 'typebox';
import type { JobDispatch } from '../../../schemas/wire/agent.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { messageOf } from '../../../core/errors.ts';
import type { MasterKeys } from '../../services/crypto/master-keys.ts';
import type { Logger } from 'pino';
import { schedulingJobConfig } from '../scheduling/config.ts';
import { outputsOf } from '../scheduling/outputs.ts';
import { findDeps, findSource } from '../caches/build-cache.ts';
import { releaseJobSecrets } from '../secrets/release.ts';
import { remoteDispatchParts } from '../runs/api/remote.ts';
import { heldSteps } from '../run-control/gates-plan.ts';
import { installConfigOf, installsWithSecrets } from './install.ts';
import type { SvcMetrics } from '../../services/metrics.ts';

const Json = Type.Unknown();
export const DispatchRow = Type.Object({
  job_id: Type.String(),
  run_id: Type.String(),
  org_id: Type.String(),
  name: Type.String(),
  kind: Type.String(),
  matrix: Json,
  needs: Type.Array(Type.String()),
  attempts: Type.Number(),
  workflow: Type.String(),
  sha: Type.String(),
  ref: Type.Union([Type.String(), Type.Null()]),
  repository: Type.String(),
  workflow_repository: Type.String(),
  provider: Type.String(),
  source_id: Type.Union([Type.String(), Type.Null()]),
  content_hash: Type.String(),
  lockfile_hash: Type.Union([Type.String(), Type.Null()]),
  lock_entry: Json,
  event: Json,
  changed_files: Json,
  trust_tier: Type.String(),
  source_origin: Type.String(),
  /** `true`, `false` or `unresolved` (a step approval `when: 'fork'` holds unless `false`). */
  is_fork: Type.Optional(Type.String()),
  /** Generated jobs: the dynamic entry that made them and their validated lock job entry. */
  generated_by: Type.Union([Type.String(), Type.Null()]),
  definition: Json,
  /** `svc run remote` runs (kernel/orchestrator/runs/api/remote.ts); null otherwise. */
  remote_overlay_key: Type.Union([Type.String(), Type.Null()]),
  remote_overlay_epk: Type.Union([Type.String(), Type.Null()]),
  remote_secrets_box: Type.Union([Type.String(), Type.Null()]),
  remote_contexts: Json,
  /** The run span's traceparent (docs/tracing.md) and when the job was queued (epoch ms): its queue-wait span. */
  trace_context: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  queued_ms: Type.Optional(Type.Union([Type.Number(), Type.Null()])),
});
export type DispatchRow = Static<typeof DispatchRow>;

// The columns of a dispatch row, over `jobs j JOIN runs r`: one list for the load and the claim.
const DISPATCH_COLUMNS = sql.fragment`
    j.id::text AS job_id, j.run_id::text AS run_id, j.org_id, j.name, j.kind, j.matrix, j.needs, j.attempts,
    r.workflow, r.sha, r.ref, r.repository, r.workflow_repository, r.provider, r.source_id::text AS source_id,
    r.content_hash, r.lockfile_hash, r.lock_entry, r.event, r.changed_files, r.trust_tier, r.source_origin, r.is_fork,
    j.generated_by, j.definition, r.remote_overlay_key, r.remote_overlay_epk, r.remote_secrets_box, r.remote_contexts,
    r.trace_context, extract(epoch from j.queued_at)::float8 * 1000 AS queued_ms`;

export async function loadDispatchRow(pool: DatabasePool, jobId: string): Promise<DispatchRow | null> {
  return pool.maybeOne(sqlTyped(DispatchRow)`SELECT ${DISPATCH_COLUMNS} FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ${jobId}`);
}

/**
 * Claims a `queued` job for `agentId` and returns its dispatch row, in one statement (the claim's
 * RETURNING joined to its run): the message is built without another read. Null when another
 * node or pass took it first. Takes the job's row lock only (never a run's, see the dispatcher).
 */
export async function claimDispatchRow(pool: DatabasePool, jobId: string, agentId: string): Promise<DispatchRow | null> {
  return pool.maybeOne(sqlTyped(DispatchRow)`
    WITH j AS (
      UPDATE jobs SET status = 'dispatched', agent_id = ${agentId}, attempts = attempts + 1, dispatched_at = now(),
             reason = NULL, unroutable_since = NULL, recovery_deadline = NULL, updated_at = now()
      WHERE id = (SELECT id FROM jobs WHERE id = ${jobId} AND status = 'queued' FOR UPDATE SKIP LOCKED)
      RETURNING *)
    SELECT ${DISPATCH_COLUMNS} FROM j JOIN runs r ON r.id = j.run_id`);
}

/** The lock's job entry (`lock_entry.jobs[name]`), or a generated job's own entry. */
export function lockJobOf(row: Pick<DispatchRow, 'lock_entry' | 'name'> & { definition?: unknown }): Record<string, unknown> | undefined {
  if (row.definition !== null && typeof row.definition === 'object' && !Array.isArray(row.definition)) return row.definition as Record<string, unknown>;
  const jobs = (row.lock_entry as { jobs?: unknown } | null)?.jobs;
  if (!Array.isArray(jobs)) return undefined;
  return jobs.find((j): j is Record<string, unknown> => typeof j === 'object' && j !== null && (j as { name?: unknown }).name === row.name);
}

export interface SourceAuthRequest {
  row: DispatchRow;
  /** `repository` for the checkout, `workflow_repository` for workflowAuth. */
  repository: string;
}
export type SourceAuth = JobDispatch['sourceAuth'];
/**
 * Turns a run's source into checkout credentials (the ingest side knows sources and their
 * sealed credentials and calls the provider's `checkoutCredentials`). Null: no credentials.
 */
export type SourceAuthResolver = (request: SourceAuthRequest) => Promise<SourceAuth | null>;

/** Clone URL from the run's event repository, else an https URL for the provider's host. */
export function fallbackSourceAuth(row: DispatchRow, repository: string): SourceAuth {
  const repo = (row.event as { repository?: { fullName?: unknown; cloneUrl?: unknown } | null } | null)?.repository;
  if (repo && repo.fullName === repository && typeof repo.cloneUrl === 'string' && repo.cloneUrl !== '') return { cloneUrl: repo.cloneUrl };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(repository)) return { cloneUrl: repository };
  const host = row.provider === 'github' ? 'github.com' : row.provider;
  return { cloneUrl: `https://${host}/${repository}.git` };
}

/** A run of an organization-wide workflow: the workflow's code lives in another repository. */
export function isCrossSourceRun(row: Pick<DispatchRow, 'kind' | 'repository' | 'workflow_repository'>): boolean {
  return row.kind !== 'build' && row.workflow_repository.toLowerCase() !== row.repository.toLowerCase();
}

/**
 * spec: svc_cross_source_errors_total{reason="bundle_missing"}. An org-wide run's jobs wait for
 * the workflow repository's built bundle (the source cache entry a build job commits); missing
 * at dispatch (swept past its TTL, deleted, storage replaced) the agent falls back to cloning
 * the workflow repository with workflowAuth, so the job still runs, but the loss is counted.
 */
function countBundleMissing(metrics: SvcMetrics, row: DispatchRow, logger: Logger): void {
  metrics.counter({ name: 'svc_cross_source_errors_total', help: 'Organization-wide dispatch errors.', labelNames: ['reason'] }).inc({ reason: 'bundle_missing' });
  logger.warn({ jobId: row.job_id, workflowRepository: row.workflow_repository, contentHash: row.content_hash }, 'organization-wide workflow bundle missing from the source cache; the agent clones the workflow repository');
}

export interface CacheUrls {
  sourceTarUrl: string | null;
  sourceTarDigest: string | null;
  depsUrl: string | null;
  depsHash: string | null;
}

/**
 * Spec "Other records": source `source/v2/<org>/<digest>.tar.gz` behind the pointer
 * `source/v2/<org>/<contentHash>.hash`; deps `deps/<platform>-<arch>/<depsHash>.tar.gz` behind
 * `deps/<platform>-<arch>/<lockfileHash>.hash`. A missing pointer means a cache miss (null).
 */
export async function cacheUrls(pool: DatabasePool, storage: StorageExtensionPoint | undefined, row: DispatchRow, platform: string, arch: string, logger: Logger, metrics?: SvcMetrics): Promise<CacheUrls> {
  const none: CacheUrls = { sourceTarUrl: null, sourceTarDigest: null, depsUrl: null, depsHash: null };
  if (storage === undefined) return none;
  const out = { ...none };
  try {
    // Through the caches module: one pointer layout, and a read refreshes the entry's TTL. The
    // two lookups are independent storage and database round trips: they go out together.
    const cache = { pool, storage, logger };
    const [source, deps] = await Promise.all([
      findSource(cache, row.org_id, row.content_hash),
      // A workflow installing with registry/installEnv secrets never shares the dependency cache (install.ts).
      row.lockfile_hash === null || installsWithSecrets(row.lock_entry) ? null : findDeps(cache, `${platform}-${arch}`, row.lockfile_hash),
    ]);
    if (source !== null) {
      out.sourceTarDigest = source.digest;
      out.sourceTarUrl = source.url;
    } else if (isCrossSourceRun(row) && metrics !== undefined) countBundleMissing(metrics, row, logger);
    if (deps !== null) {
      out.depsHash = deps.digest;
      out.depsUrl = deps.url;
    }
  } catch (error) {
    // A cache we cannot read is a miss: the agent builds or clones instead.
    logger.warn({ err: messageOf(error), jobId: row.job_id }, 'cache pointer lookup failed; dispatching without cache URLs');
    return none;
  }
  return out;
}

/**
 * Outputs of the jobs `row` needs, by job name: a matrix job's instances keyed by their matrix
 * values, a dynamic entry's generated jobs by name (kernel/orchestrator/scheduling/outputs.ts).
 */
export async function needsOutputs(pool: DatabasePool, row: DispatchRow): Promise<Record<string, Record<string, unknown>>> {
  return outputsOf(pool, row.run_id, row.needs);
}

export interface BuildDispatchOptions {
  pool: DatabasePool;
  storage: StorageExtensionPoint | undefined;
  sourceAuth: SourceAuthResolver | undefined;
  logger: Logger;
  agentOs: string;
  agentArch: string;
  /** Opens secret contexts' values; without it a job declaring a context fails. */
  masterKeys?: MasterKeys;
  /** Counts cross-source errors found while building the message (bundle_missing). */
  metrics?: SvcMetrics;
}

export async function buildJobDispatch(row: DispatchRow, options: BuildDispatchOptions): Promise<JobDispatch> {
  const lockJob = lockJobOf(row);
  const resolve = async (repository: string): Promise<SourceAuth> => {
    if (options.sourceAuth !== undefined && row.source_id !== null) {
      const given = await options.sourceAuth({ row, repository });
      if (given !== null) return given;
    }
    return fallbackSourceAuth(row, repository);
  };
  // The reads that do not depend on each other go out together: each is a database or storage
  // round trip on the job's path from dispatched to its first step (bench/dispatch-to-step.ts).
  const [needs, scheduling, remote, sourceAuth, workflowAuth, caches] = await Promise.all([
    needsOutputs(options.pool, row),
    schedulingJobConfig(options.pool, row),
    remoteDispatchParts(row, options.storage, options.masterKeys),
    resolve(row.repository),
    row.workflow_repository !== row.repository ? resolve(row.workflow_repository) : null,
    cacheUrls(options.pool, options.storage, row, options.agentOs, options.agentArch, options.logger, options.metrics),
  ]);
  const jobConfig: JobDispatch['jobConfig'] = {
    workflow: row.workflow,
    job: row.name,
    sha: row.sha,
    ref: row.ref,
    repository: row.repository,
    contentHash: row.content_hash,
    needs,
    event: row.event,
    changedFiles: Array.isArray(row.changed_files) ? (row.changed_files as string[]) : null,
    env: {},
    isTestRun: row.source_origin === 'run-remote',
  };
  if (row.matrix !== null && typeof row.matrix === 'object') jobConfig.matrix = row.matrix as Record<string, unknown>;
  if (typeof lockJob?.['timeout'] === 'number') jobConfig.timeoutMs = lockJob['timeout'];
  if (typeof lockJob?.['gracePeriod'] === 'number') jobConfig.gracePeriodSeconds = lockJob['gracePeriod'];
  if (lockJob?.['container'] !== undefined) jobConfig.container = lockJob['container'];
  if (row.kind === 'build') jobConfig.build = true;
  // The lock job's checkout settings: with a cached source the agent still checks the repository out.
  const checkoutSetting = lockJob?.['checkout'] as { enabled?: unknown; depth?: unknown; submodules?: unknown; lfs?: unknown } | undefined;
  if (row.kind !== 'build' && typeof checkoutSetting?.enabled === 'boolean') {
    const depth = typeof checkoutSetting.depth === 'number' && checkoutSetting.depth >= 0 ? checkoutSetting.depth : 1;
    jobConfig.checkout = { enabled: checkoutSetting.enabled, depth, submodules: checkoutSetting.submodules === true, lfs: checkoutSetting.lfs === true };
  }
  Object.assign(jobConfig, scheduling);
  // Steps held for an approval (docs/run-control.md "Step holds"): the runner pauses before each.
  const approvalSteps = row.kind === 'build' ? [] : heldSteps(lockJob as Parameters<typeof heldSteps>[0], { trustTier: row.trust_tier, isFork: row.is_fork ?? 'unresolved' });
  if (approvalSteps.length > 0) jobConfig.approvalSteps = approvalSteps;
  if (remote.overlay !== undefined) jobConfig.overlay = remote.overlay;
  // Throws SecretContextDeniedError (permanent: the dispatcher fails the job) when a rule refuses.
  const released = await releaseJobSecrets(options.pool, options.masterKeys, {
    orgId: row.org_id,
    repository: row.repository,
    ref: row.ref,
    trustTier: row.trust_tier,
    isTestRun: jobConfig.isTestRun,
    kind: row.kind,
    lockEntry: row.lock_entry,
    lockJob,
    jobId: row.job_id,
    ...(remote.contexts === undefined ? {} : { contextMap: remote.contexts }),
  }, options.logger);
  // spec "Authentication" 8: the developer's values win over test-context secrets on a collision.
  const secrets = remote.secrets === undefined || row.kind === 'build' ? released : { ...released, ...remote.secrets };
  if (secrets !== undefined) jobConfig.secrets = secrets;
  // Build jobs install nothing for such a workflow (agent/build-job/job.ts): no secret for them.
  const install = row.kind === 'build' ? undefined : installConfigOf(row.lock_entry, secrets, remote.contexts);
  if (install !== undefined) jobConfig.install = install;

  return {
    type: 'job.dispatch',
    jobId: row.job_id,
    runId: row.run_id,
    attempt: Math.max(1, row.attempts),
    jobConfig,
    ...caches,
    sourceAuth,
    workflowAuth,
    cacheRefScope: row.trust_tier === 'trusted' ? 'shared' : `iso/${row.run_id}`,
  };
}
