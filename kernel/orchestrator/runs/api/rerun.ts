// Re-run (spec "Dashboard actions"): a new run of the same workflow from the original's stored
// event (the normalized form of its stored payload), with the lock file fetched again at the
// original workflow sha. Dedup, normalization and trigger matching are skipped. The new row
// keeps the original's event name and subject shape (identity claims read `parent_run_id` and
// say `rerun`) and carries the lineage: `parent_run_id` (the run re-run), `original_run_id` (the
// root ancestor), `triggered_by`. Re-runs of one original run are at least 5 s apart (429).
// Mode `failed` (restart from failed jobs) reuses the run's own lock entry and copies the jobs
// that completed (restart-failed.ts); lineage and cooldown are the same.
import type { CommonQueryMethods } from 'slonik';
import { Type, type Static } from 'typebox';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { LockWorkflow } from '../../../../schemas/lock.ts';
import type { ProviderSource, RepositoryRef, SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { ConflictError, InputError, RateLimitedError, UnavailableError, messageOf } from '../../../../core/errors.ts';
import type { CacheCheck } from '../../ingest/steps/caches.ts';
import { readLockText } from '../../ingest/steps/lock-fetch.ts';
import { createRun, type RunPlan } from '../create.ts';
import type { OpenedSource } from '../../sources/store.ts';
import { checkRunId, runNotFound } from './show.ts';
import { Nullable, RUN_IDENTITY_COLUMNS } from '../run-record.ts';
import { progressRun } from '../../dispatch/progression.ts';
import { checkRestartable, copyReusedJobs, reusableJobs } from './restart-failed.ts';

/** spec Limits: re-run cooldown per original run. */
export const RERUN_COOLDOWN_MS = 5_000;
export const RERUN_COOLDOWN_CODE = 'SVC_ERR_RUNS_RERUN_COOLDOWN' as const;

/** Inside the cooldown: rate_limited, so every transport answers 429 with `Retry-After`. */
export class RerunCooldownError extends RateLimitedError {
  constructor(originalRunId: string, retryAfterMs: number) {
    const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    super(RERUN_COOLDOWN_CODE, `run ${originalRunId} was re-run less than ${RERUN_COOLDOWN_MS / 1000} s ago; retry in ${seconds} s`, seconds);
  }
}

export interface RerunDeps {
  pool: DatabasePool;
  /** Opened sources by id (the ingest pipeline's source cache). */
  sourceById(id: string): Promise<OpenedSource | null>;
  providerFor(routingKey: string): SourceProviderExtensionPoint | undefined;
  /** Source/deps cache check: a cold source cache makes the new run wait for a build. */
  checkCaches(orgId: string, contentHash: string, lockfileHash: string | null): Promise<CacheCheck>;
  notifyJobsQueued(tx: CommonQueryMethods): Promise<void>;
  cooldownMs?: number;
}

export interface RerunRequest {
  orgId: string;
  runId: string;
  triggeredBy: string;
  /** `failed`: restart from the failed jobs, with the run's own event and lock entry (restart-failed.ts). */
  mode?: 'failed';
}


const OriginalRow = Type.Object({
  ...RUN_IDENTITY_COLUMNS,
  subject_kind: Type.Union([Type.Literal('ref'), Type.Literal('pull_request')]),
  actor: Type.String(),
  trust_tier: Type.Union([Type.Literal('trusted'), Type.Literal('unknown'), Type.Literal('unresolved')]),
  is_fork: Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('unresolved')]),
  head_ref: Type.String(),
  head_repository: Type.String(),
  source_origin: Type.String(),
  event: Type.Unknown(),
  changed_files: Type.Unknown(),
  original_run_id: Nullable(Type.String()),
  workflow_source_id: Nullable(Type.String()),
  workflow_clone_url: Nullable(Type.String()),
  workflow_modified: Type.Boolean(),
  status: Type.String(),
  lock_entry: Type.Unknown(),
  lockfile_hash: Nullable(Type.String()),
});

type OriginalRun = Static<typeof OriginalRow>;

const RegistrationRepoRow = Type.Object({ repository_id: Nullable(Type.String()), clone_url: Nullable(Type.String()) });
const LastRow = Type.Object({ age_ms: Type.Number() });

function checkTriggeredBy(triggeredBy: string): string {
  if (typeof triggeredBy !== 'string' || triggeredBy.trim() === '' || triggeredBy.length > 200) {
    throw new InputError('SVC_ERR_RUNS_TRIGGERED_BY', 'triggeredBy must name who asked for the re-run (1 to 200 characters)');
  }
  return triggeredBy.trim();
}

/** The workflow repository as its provider addresses it. */
async function workflowRepositoryRef(pool: DatabasePool, run: OriginalRun, event: NormalizedEvent | null): Promise<RepositoryRef> {
  const repo = event?.repository ?? null;
  if (repo !== null && repo.fullName.toLowerCase() === run.workflow_repository.toLowerCase()) {
    const ref: RepositoryRef = { id: repo.id ?? repo.cloneUrl ?? repo.fullName, fullName: repo.fullName };
    if (repo.cloneUrl !== null) ref.cloneUrl = repo.cloneUrl;
    if (event?.installationId) ref.installationId = event.installationId;
    return ref;
  }
  // Organization-wide workflow: its repository as registered.
  const reg = run.workflow_source_id === null ? null : await pool.maybeOne(sqlTyped(RegistrationRepoRow)`
    select repository_id, clone_url from registrations
    where org_id = ${run.org_id} and source_id = ${run.workflow_source_id} and lower(repository) = lower(${run.workflow_repository}) limit 1`);
  const cloneUrl = run.workflow_clone_url ?? reg?.clone_url ?? null;
  const ref: RepositoryRef = { id: reg?.repository_id ?? cloneUrl ?? run.workflow_repository, fullName: run.workflow_repository };
  if (cloneUrl !== null) ref.cloneUrl = cloneUrl;
  return ref;
}

/** The workflow's lock entry, read again from the lock at the original workflow sha. */
async function refetchWorkflow(deps: RerunDeps, run: OriginalRun, event: NormalizedEvent | null): Promise<{ workflow: LockWorkflow; lockfileHash: string | null }> {
  const sourceId = run.workflow_source_id ?? run.source_id;
  if (sourceId === null) {
    throw new ConflictError('SVC_ERR_RUNS_RERUN_NO_SOURCE', `run ${run.id} came from no source (a remote test run?), so its lock file cannot be fetched again; start it the way it was started`);
  }
  const source = await deps.sourceById(sourceId);
  if (source === null) throw new ConflictError('SVC_ERR_RUNS_RERUN_SOURCE_GONE', `source ${sourceId} of run ${run.id} was removed; the lock file cannot be fetched again`);
  const provider = deps.providerFor(source.routingKey);
  if (provider === undefined) throw new UnavailableError('SVC_ERR_RUNS_RERUN_NO_PROVIDER', `no provider serves routing key ${source.routingKey} on this orchestrator`);
  const providerSource: ProviderSource = { id: source.id, orgId: source.orgId, routingKey: source.routingKey, settings: source.settings, credentials: source.credentials };
  const repository = await workflowRepositoryRef(deps.pool, run, event);
  let bytes: Uint8Array | null;
  try {
    bytes = await provider.fetchLockFile({ source: providerSource, repository, sha: run.workflow_sha });
  } catch (error) {
    throw new UnavailableError('SVC_ERR_RUNS_RERUN_LOCK_FETCH', `the lock file of ${run.workflow_repository} at ${run.workflow_sha} could not be fetched: ${messageOf(error)}; retry later`);
  }
  if (bytes === null) throw new ConflictError('SVC_ERR_RUNS_RERUN_NO_LOCK', `${run.workflow_repository} has no lock file at ${run.workflow_sha} any more`);
  const read = readLockText(bytes);
  if (read.kind !== 'lock') throw new ConflictError('SVC_ERR_RUNS_RERUN_LOCK_REFUSED', read.kind === 'corrupt' ? read.message : 'no lock file');
  const workflow = read.lock.workflows.find((w) => w.name === run.workflow);
  if (workflow === undefined) throw new ConflictError('SVC_ERR_RUNS_RERUN_NO_WORKFLOW', `the lock file at ${run.workflow_sha} has no workflow "${run.workflow}"`);
  return { workflow, lockfileHash: read.lock.lockfileHash ?? null };
}

/** Creates the re-run; returns its id. */
export async function rerunRun(deps: RerunDeps, request: RerunRequest): Promise<{ newRunId: string }> {
  const runId = checkRunId(request.runId);
  const triggeredBy = checkTriggeredBy(request.triggeredBy);
  const cooldownMs = deps.cooldownMs ?? RERUN_COOLDOWN_MS;
  const run = await deps.pool.maybeOne(sqlTyped(OriginalRow)`
    select id::text as id, org_id, delivery_id, source_id::text as source_id, provider, repository, workflow_repository, workflow,
      workflow_sha, workflow_ref, sha, ref, event_name, subject_kind, actor, trust_tier, is_fork, head_ref, head_repository, source_origin,
      event, changed_files, original_run_id::text as original_run_id, workflow_source_id::text as workflow_source_id, workflow_clone_url,
      workflow_modified, status, lock_entry, lockfile_hash
    from runs where id = ${runId} and org_id = ${request.orgId}`);
  if (run === null) throw runNotFound(runId, request.orgId);
  // A remote run's jobs ran the developer's sealed working-tree overlay and a lock compiled from
  // it; the commit's own lock would run something else under the same name, so it is refused.
  if (run.source_origin === 'run-remote') {
    throw new ConflictError('SVC_ERR_RUNS_RERUN_REMOTE', `run ${run.id} is a \`svc run remote\` run: its working-tree overlay was for that run only; run \`svc run remote\` again to try the changes once more`);
  }
  const originalRunId = run.original_run_id ?? run.id;
  const event = (typeof run.event === 'object' && run.event !== null ? run.event : null) as NormalizedEvent | null;
  if (event === null) throw new ConflictError('SVC_ERR_RUNS_RERUN_NO_EVENT', `run ${run.id} has no stored event to re-run`);

  const restart = request.mode === 'failed';
  if (restart) checkRestartable(run.id, run.status);
  // A cheap early refusal before the forge is asked; the authoritative check is under the lock below.
  await checkCooldown(deps.pool, originalRunId, cooldownMs);
  // A restart reuses the run's frozen lock entry: the reused jobs' outputs came from it.
  const { workflow, lockfileHash } = restart
    ? { workflow: run.lock_entry as LockWorkflow, lockfileHash: run.lockfile_hash }
    : await refetchWorkflow(deps, run, event);
  const reuse = restart ? await reusableJobs(deps.pool, run.id, workflow) : undefined;
  const caches = await deps.checkCaches(run.org_id, workflow.contentHash, lockfileHash);
  const plan: RunPlan = {
    orgId: run.org_id,
    deliveryKey: null,
    sourceId: run.source_id,
    provider: run.provider,
    repository: run.repository,
    workflowRepository: run.workflow_repository,
    workflowSourceId: run.workflow_source_id,
    workflowCloneUrl: run.workflow_clone_url,
    workflow,
    workflowSha: run.workflow_sha,
    workflowRef: run.workflow_ref,
    sha: run.sha,
    ref: run.ref,
    eventName: run.event_name,
    subjectKind: run.subject_kind,
    actor: run.actor,
    trustTier: run.trust_tier,
    isFork: run.is_fork,
    headRef: run.head_ref,
    headRepository: run.head_repository,
    lockfileHash,
    event,
    changedFiles: Array.isArray(run.changed_files) ? (run.changed_files as string[]) : null,
    workflowModified: run.workflow_modified,
    buildKey: caches.buildKey,
    ...(reuse === undefined ? {} : { reuse }),
  };
  return deps.pool.transaction(async (tx) => {
    // Serializes re-runs of one original run across nodes: the cooldown holds under concurrency.
    await tx.query(sql.unsafe`select id from runs where id = ${originalRunId} for no key update`);
    await checkCooldown(tx, originalRunId, cooldownMs);
    const created = await createRun(tx, plan);
    await tx.query(sql.unsafe`
      update runs set parent_run_id = ${run.id}, original_run_id = ${originalRunId}, triggered_by = ${triggeredBy},
        delivery_id = ${run.delivery_id}, source_origin = ${run.source_origin}, rerun_mode = ${restart ? 'failed' : 'all'}, updated_at = now()
      where id = ${created.runId}`);
    if (reuse !== undefined) {
      await copyReusedJobs(tx, created.runId, run.id, reuse);
      // Jobs whose needs are all reused are ready now: progression queues (or gates) them.
      await progressRun(tx, created.runId);
    }
    if (created.queuedJobs > 0) await deps.notifyJobsQueued(tx);
    return { newRunId: created.runId };
  });
}

async function checkCooldown(db: CommonQueryMethods, originalRunId: string, cooldownMs: number): Promise<void> {
  const last = await db.maybeOne(sqlTyped(LastRow)`
    select (extract(epoch from (clock_timestamp() - max(created_at))) * 1000)::float8 as age_ms
    from runs where original_run_id = ${originalRunId} having count(*) > 0`);
  if (last !== null && last.age_ms < cooldownMs) throw new RerunCooldownError(originalRunId, cooldownMs - last.age_ms);
}
