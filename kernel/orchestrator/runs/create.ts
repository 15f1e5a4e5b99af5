// A run and its jobs from one matched workflow (processing steps 14-15), inside the caller's
// transaction. Idempotent per (org, delivery key, workflow repository, workflow): a replay finds
// the run it already created. Static matrices expand to one job row per combination; a job is
// `queued` when it needs nothing and no build is pending, else `waiting`. Workflow filter, workflow
// hooks and dynamic entries add scheduling pseudo-jobs (kernel/orchestrator/scheduling).
import { randomUUID } from 'node:crypto';
import { Type } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import type { NormalizedEvent } from '../../../schemas/event.ts';
import type { LockJob, LockWorkflow } from '../../../schemas/lock.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';
import { FILTER_JOB_NAME, HOOKS_JOB_NAME, generatorJobName } from '../scheduling/names.ts';
import { schedulingPlanOf } from '../scheduling/plan.ts';
import { expandMatrix, type MatrixValue } from '../../../workflow/matrix.ts';
import { approvalApplies, ensureHold, notifyRunControl } from '../run-control/approvals.ts';
import { defaultJobGroup, defaultRunGroup, isGated } from '../run-control/gates-plan.ts';

export { expandMatrix };

/** Name of the build job inside the run that owns it; the run's jobs need it. */
export const BUILD_JOB_NAME = 'svc:build';

export interface RunPlan {
  orgId: string;
  /** The delivery id, or `<delivery_id>:<registration_id>` for a generic fan-out target. */
  deliveryKey: string | null;
  sourceId: string | null;
  provider: string;
  repository: string;
  workflowRepository: string;
  workflowSourceId: string | null;
  workflowCloneUrl: string | null;
  workflow: LockWorkflow;
  workflowSha: string;
  workflowRef: string | null;
  sha: string;
  ref: string | null;
  eventName: string;
  subjectKind: 'ref' | 'pull_request';
  actor: string;
  trustTier: 'trusted' | 'unknown' | 'unresolved';
  isFork: 'true' | 'false' | 'unresolved';
  headRef: string;
  headRepository: string;
  lockfileHash: string | null;
  event: NormalizedEvent;
  changedFiles: string[] | null;
  workflowModified: boolean;
  /** `contentHash:lockfileHash` of a build the jobs wait for (source cache miss); null on a hit. */
  buildKey: string | null;
  /** Id for the run when it is created (the caller may have recorded it already); default a new UUID. */
  runId?: string;
  /** Internal-event runs: the starting event and its depth + 1 (docs/events.md, circuit breaker). */
  chainDepth?: number;
  triggeringEventId?: string;
  /** Restart from failed jobs: lock jobs copied from the parent run instead of created (runs/api/restart-failed.ts). */
  reuse?: ReadonlySet<string>;
  /** The run span's reserved traceparent and its parent's (docs/tracing.md); absent when not tracing. */
  trace?: { context: string; parent: string } | undefined;
}

export interface CreatedRun {
  runId: string;
  /** False when a replay found the run already there. */
  created: boolean;
  status: string;
  jobIds: string[];
  queuedJobs: number;
  /** This run created the coalesced build job (else it waits for another run's). */
  ownsBuild: boolean;
}

/** Job rows a new run of `workflow` gets (static matrices expanded), the build job aside. */
export function jobRowCount(workflow: LockWorkflow): number {
  return workflow.jobs.reduce((n, job) => n + instancesOf(job).length, 0);
}

function instancesOf(job: LockJob): Array<{ matrix: Record<string, MatrixValue> | null; displayName: string }> {
  if (job.matrix?.type !== 'static') return [{ matrix: null, displayName: job.name }];
  return expandMatrix(job.matrix.axes).map((m) => ({ matrix: m, displayName: `${job.name} (${Object.values(m).join(', ')})` }));
}

const IdRow = Type.Object({ id: Type.String(), status: Type.String() });
const JobIdRow = Type.Object({ id: Type.String(), status: Type.String() });

/** How a new run starts, from its plan alone (no statement): its status, hold and concurrency group. */
export interface RunShape {
  status: 'held' | 'queued';
  held: boolean;
  /** A workflow-level concurrency group (the default one), or null. */
  group: string | null;
  /** The run-control worker must look at the run (concurrency, gated jobs). */
  wakesRunControl: boolean;
}

export function runShapeOf(plan: RunPlan): RunShape {
  const approval = plan.workflow.approval;
  const held = approval !== undefined && approvalApplies(approval, { trustTier: plan.trustTier, isFork: plan.isFork });
  // Concurrency (docs/run-control.md): the run waits for the run-control worker to admit it; a
  // key workflow code computes arrives with the filter pseudo-job's report.
  const conc = plan.workflow.concurrency;
  const group = conc === undefined || conc.hasGroup ? null : defaultRunGroup(plan.workflowRepository, plan.workflow.name);
  const wakesRunControl = conc !== undefined || plan.workflow.jobs.some((j) => isGated(plan.workflow, j));
  return { status: held ? 'held' : 'queued', held, group, wakesRunControl };
}

/** `insert into runs (...) values (...)` of a new run, without a conflict clause or RETURNING. */
export function runInsert(plan: RunPlan, runId: string, shape: RunShape) {
  const conc = plan.workflow.concurrency;
  const deadline = plan.workflow.timeout === undefined ? null : new Date(Date.now() + plan.workflow.timeout).toISOString();
  return sql.fragment`
    insert into runs (id, org_id, delivery_id, source_id, provider, repository, workflow_repository, workflow, workflow_sha, workflow_ref,
      sha, ref, event_name, subject_kind, actor, trust_tier, is_fork, head_ref, head_repository, status, content_hash, lockfile_hash,
      lock_entry, event, changed_files, deadline_at, workflow_source_id, workflow_clone_url, workflow_modified, chain_depth, triggering_event_id,
      concurrency_group, concurrency_state, concurrency_max, concurrency_cancel, trace_context, trace_parent)
    values (${runId}, ${plan.orgId}, ${plan.deliveryKey}, ${plan.sourceId}, ${plan.provider}, ${plan.repository}, ${plan.workflowRepository},
      ${plan.workflow.name}, ${plan.workflowSha}, ${plan.workflowRef}, ${plan.sha}, ${plan.ref}, ${plan.eventName}, ${plan.subjectKind},
      ${plan.actor}, ${plan.trustTier}, ${plan.isFork}, ${plan.headRef}, ${plan.headRepository}, ${shape.status}, ${plan.workflow.contentHash},
      ${plan.lockfileHash}, ${sql.jsonb(plan.workflow as never)}, ${sql.jsonb(plan.event as never)},
      ${plan.changedFiles === null ? null : sql.jsonb(plan.changedFiles)}, ${deadline}, ${plan.workflowSourceId}, ${plan.workflowCloneUrl},
      ${plan.workflowModified}, ${plan.chainDepth ?? 0}, ${plan.triggeringEventId ?? null},
      ${shape.group}, ${conc === undefined ? null : 'waiting'}, ${conc === undefined ? null : (conc.max ?? 1)}, ${conc?.cancelInProgress ?? false}, ${plan.trace?.context ?? null}, ${plan.trace?.parent ?? null})`;
}

/** One row of `jobs` a new run gets (the build job aside): what `jobRowsOf` plans. */
export interface JobRow {
  id: string;
  name: string;
  display_name: string;
  kind: 'job' | 'filter' | 'generate' | 'hooks';
  matrix: Record<string, MatrixValue> | null;
  needs: string[];
  runs_on: string[];
  status: 'queued' | 'waiting';
  waits_for_build: string | null;
  gated: boolean;
  concurrency_group: string | null;
  /** `ready_at` is the insert's now() (a gated job whose needs are met). */
  ready: boolean;
}

export interface PlannedJobs {
  rows: JobRow[];
  /** How many of the rows start `queued`. */
  queued: number;
}

/**
 * The job rows of a new run, in creation order: the workflow filter, each job's instances (or
 * its generator pseudo-job), the workflow hooks. `buildKey` is the build the jobs wait for (null:
 * none); `ownsBuild`: this run created it, so its jobs need it.
 */
export function jobRowsOf(plan: RunPlan, shape: RunShape, buildKey: string | null, ownsBuild: boolean): PlannedJobs {
  const rows: JobRow[] = [];
  let queued = 0;
  const conc = plan.workflow.concurrency;
  const held = shape.held;
  // Scheduling pseudo-jobs (docs/scheduling.md): they run from a checkout, never wait for a build.
  const scheduling = schedulingPlanOf(plan.workflow);
  const pseudo = (name: string, displayName: string, kind: JobRow['kind'], needs: string[], runsOn: readonly string[]): void => {
    // The filter runs before a concurrency group admits the run: it computes the group's key.
    const ready = !held && needs.length === 0 && (kind === 'filter' || conc === undefined);
    rows.push({ id: randomUUID(), name, display_name: displayName, kind, matrix: null, needs, runs_on: [...runsOn], status: ready ? 'queued' : 'waiting', waits_for_build: null, gated: false, concurrency_group: null, ready: false });
    if (ready) queued += 1;
  };
  const afterFilter = scheduling.filter ? [FILTER_JOB_NAME] : [];
  if (scheduling.filter) pseudo(FILTER_JOB_NAME, 'workflow filter', 'filter', [], scheduling.pseudoRunsOn);
  for (const job of plan.workflow.jobs) {
    if (plan.reuse?.has(job.name) === true) continue;
    const generator = scheduling.generators.get(job.name);
    if (generator !== undefined) {
      pseudo(generatorJobName(job.name), `generate ${job.name}`, 'generate', [...job.needs, ...afterFilter], job.runsOn);
      continue;
    }
    const needs = [...job.needs, ...afterFilter, ...(ownsBuild ? [BUILD_JOB_NAME] : [])];
    // Gated jobs (approval, concurrency, secret contexts) and jobs of a run in a concurrency
    // group reach `queued` through progression and the run-control worker, never at creation.
    const gated = isGated(plan.workflow, job);
    const ready = !held && conc === undefined && needs.length === 0 && buildKey === null;
    const isQueued = ready && !gated;
    const jobGroup = job.concurrency === undefined || job.concurrency.hasGroup ? null : defaultJobGroup(plan.workflowRepository, plan.workflow.name, job.name);
    for (const instance of instancesOf(job)) {
      rows.push({
        id: randomUUID(), name: job.name, display_name: instance.displayName, kind: 'job', matrix: instance.matrix, needs, runs_on: [...job.runsOn],
        status: isQueued ? 'queued' : 'waiting', waits_for_build: buildKey, gated, concurrency_group: jobGroup, ready: ready && gated,
      });
      if (isQueued) queued += 1;
    }
  }
  if (scheduling.hooks) {
    // Needs every other job; progression releases it once they are all terminal, whatever their outcome.
    const others = [...(ownsBuild ? [BUILD_JOB_NAME] : []), ...afterFilter, ...plan.workflow.jobs.map((j) => j.name)];
    pseudo(HOOKS_JOB_NAME, 'workflow hooks', 'hooks', others, scheduling.pseudoRunsOn);
  }
  return { rows, queued };
}

/**
 * `insert into jobs ... select ... from` the planned rows, ONE statement however many jobs (a
 * round trip each cost a delivery's transaction one wait for the database per job). The rows
 * travel as one jsonb array, so the statement's text is the same for any count (a named statement).
 */
export function jobsInsert(runId: string, orgId: string, rows: readonly JobRow[]) {
  return sql.fragment`
    insert into jobs (id, run_id, org_id, name, display_name, kind, matrix, needs, runs_on, status, waits_for_build, queued_at, gated, concurrency_group, ready_at)
    select j.id, ${runId}, ${orgId}, j.name, j.display_name, j.kind, j.matrix, j.needs, j.runs_on, j.status, j.waits_for_build,
      case when j.status = 'queued' then now() end, j.gated, j.concurrency_group, case when j.ready then now() end
    from jsonb_to_recordset(${sql.jsonb(rows as never)}) as j(id uuid, name text, display_name text, kind text, matrix jsonb, needs text[],
      runs_on text[], status text, waits_for_build text, gated boolean, concurrency_group text, ready boolean)`;
}

export async function createRun(tx: CommonQueryMethods, plan: RunPlan): Promise<CreatedRun> {
  const runId = plan.runId ?? randomUUID();
  const shape = runShapeOf(plan);
  const { held, status } = shape;
  const approval = plan.workflow.approval;
  const inserted = await tx.maybeOne(sqlTyped(IdRow)`
    ${runInsert(plan, runId, shape)}
    on conflict (org_id, delivery_id, workflow_repository, workflow) where delivery_id is not null and parent_run_id is null do nothing
    returning id, status`);
  if (inserted === null) {
    const existing = await tx.one(sqlTyped(IdRow)`
      select id::text as id, status from runs where org_id = ${plan.orgId} and delivery_id = ${plan.deliveryKey}
        and workflow_repository = ${plan.workflowRepository} and workflow = ${plan.workflow.name} and parent_run_id is null`);
    const jobs = await tx.any(sqlTyped(JobIdRow)`select id::text as id, status from jobs where run_id = ${existing.id} order by created_at, id`);
    return { runId: existing.id, created: false, status: existing.status, jobIds: jobs.map((j) => j.id), queuedJobs: 0, ownsBuild: false };
  }

  if (held && approval !== undefined) {
    await ensureHold(tx, {
      orgId: plan.orgId,
      runId,
      jobId: null,
      level: 'workflow',
      clauses: approval.clauses,
      ...(approval.reason !== undefined ? { reason: approval.reason } : {}),
      ...(approval.timeoutSeconds !== undefined ? { timeoutSeconds: approval.timeoutSeconds } : {}),
    });
  }
  // The run-control worker admits grouped runs and passes ready gated jobs through their gates.
  if (shape.wakesRunControl) await notifyRunControl(tx);

  let ownsBuild = false;
  const runsOn = plan.workflow.jobs[0]?.runsOn ?? [];
  // Runs share a build only when it runs where their jobs would: a build labelled for agents
  // nobody serves (another workflow of the same commit) must never hold this run's jobs.
  const buildKey = plan.buildKey === null ? null : `${plan.buildKey}@${[...runsOn].sort().join(',')}`;
  if (buildKey !== null) {
    // A held run builds only once approved (a build runs install scripts), and privately: other
    // runs must not wait on a build a rejection would cancel.
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const build = await tx.maybeOne(sqlTyped(JobIdRow)`
        insert into jobs (id, run_id, org_id, name, display_name, kind, runs_on, status, build_key, queued_at)
        values (${randomUUID()}, ${runId}, ${plan.orgId}, ${BUILD_JOB_NAME}, ${`build ${plan.workflow.contentHash.slice(0, 12)}`}, 'build',
          ${sql.array(runsOn, 'text')}, ${held ? 'waiting' : 'queued'}, ${held ? null : buildKey}, ${held ? null : sql.fragment`now()`})
        on conflict (org_id, build_key) where kind = 'build' and status in ('waiting', 'queued', 'dispatched', 'running', 'recovering') do nothing
        returning id::text as id, status`);
      if (build !== null) {
        ownsBuild = true;
        break;
      }
      // Another run's build is active: share-lock it, so its completion (which settles the runs
      // waiting on it) waits for this transaction and then sees this run's waiting jobs. A build
      // that ended between the insert and the lock is no longer active: try the insert again.
      const active = await tx.maybeOne(sql.unsafe`
        select id from jobs where org_id = ${plan.orgId} and build_key = ${buildKey} and kind = 'build'
          and status in ('waiting', 'queued', 'dispatched', 'running', 'recovering') for share`);
      if (active !== null) break;
    }
  }

  const jobs = jobRowsOf(plan, shape, buildKey, ownsBuild);
  if (jobs.rows.length > 0) await tx.query(sql.unsafe`${jobsInsert(runId, plan.orgId, jobs.rows)}`);
  const queuedJobs = (ownsBuild && !held ? 1 : 0) + jobs.queued;
  return { runId, created: true, status, jobIds: jobs.rows.map((r) => r.id), queuedJobs, ownsBuild };
}
