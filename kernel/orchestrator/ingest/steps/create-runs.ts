// Steps 14-16 for a delivery's surviving candidates: cache check per workflow, then the claim,
// every run with its jobs, the delivery record and the queue notification in ONE transaction,
// so a crash leaves either all of it or none (and the replay redoes it).
import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from 'slonik';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { DatabasePool, WakeupSender } from '../../../services/db/index.ts';
import { createRun, jobRowCount, type CreatedRun, type RunPlan } from '../../runs/create.ts';
import { transactionWithWakeupsAfterCommit } from '../../runs/deferred-wakeups.ts';
import type { CacheChecker } from './caches.ts';
import { countDuplicate, recordOutcomeRow, replaceRunIds, type ClaimOptions, type FinishRecord } from '../record/delivery-record.ts';
import { planOneStatementRun, writeOneStatementRun } from './one-statement-run.ts';
import type { EventLogWriter } from '../record/event-log.ts';
import type { OutcomeBatcher } from '../record/outcome-batch.ts';
import type { IngestStages } from '../stage-metrics.ts';
import type { DepthCheck, QueueDepthGuard } from './queue-depth.ts';
import type { Candidate } from './match.ts';
import { IngestStop, type DeliveryState, type DeliveryStatus } from '../types.ts';

export type NotifyJobsQueued = (tx: CommonQueryMethods) => Promise<void>;

export interface RunTarget {
  candidate: Candidate;
  /** The run's delivery key; `deliveryKeyFor` (generic fan-out) wins when the claim's generation matters. */
  deliveryKey: string;
  deliveryKeyFor?: (generation: number) => string;
  sourceId: string;
  provider: string;
  repository: string;
  sha: string;
  ref: string | null;
}

function subjectKind(event: NormalizedEvent): 'ref' | 'pull_request' {
  return event.pullRequest !== null || event.type === 'pr' || event.type === 'review' || event.type === 'review_comment' ? 'pull_request' : 'ref';
}

export function planFor(state: DeliveryState, target: RunTarget, buildKey: string | null): RunPlan {
  const event = state.event!;
  const pr = event.pullRequest;
  const c = target.candidate;
  return {
    orgId: state.delivery.orgId,
    deliveryKey: target.deliveryKey,
    sourceId: target.sourceId,
    provider: target.provider,
    repository: target.repository,
    workflowRepository: c.workflowRepository,
    workflowSourceId: c.workflowSourceId,
    workflowCloneUrl: c.workflowCloneUrl,
    workflow: c.workflow,
    workflowSha: c.workflowSha,
    workflowRef: c.workflowRef,
    sha: target.sha,
    ref: target.ref,
    eventName: event.eventName,
    subjectKind: subjectKind(event),
    actor: event.sender.login,
    trustTier: state.trust.tier,
    isFork: state.trust.isFork,
    headRef: pr?.headRef ?? '',
    headRepository: pr?.headRepository ?? '',
    lockfileHash: c.lockfileHash,
    event,
    changedFiles: state.changedFiles ?? null,
    workflowModified: state.workflowModified,
    buildKey,
    trace: state.steps.reserveRunSpan(),
  };
}

export interface DispatchDeps {
  pool: DatabasePool;
  caches: CacheChecker;
  /** Called inside the transaction; its wake-up is sent after the commit by `wakeups`. */
  notifyJobsQueued: NotifyJobsQueued;
  wakeups: WakeupSender;
  eventLog: EventLogWriter;
  outcomes: OutcomeBatcher;
  /** `queue.maxDepth`, read per delivery (a reload applies it); undefined: no limit. */
  queueMaxDepth?: () => number | undefined;
  /** The node's memory of the queue's depth (queue-depth.ts). */
  queueDepth: QueueDepthGuard;
  stages?: IngestStages;
}

/**
 * A new delivery's one run in ONE statement (one-statement-run.ts), when it qualifies; null when
 * it does not, 'aborted' when something already existed: then nothing was written and the steps
 * are as they were.
 */
async function tryOneStatement(
  deps: DispatchDeps,
  state: DeliveryState,
  { target, buildKey }: { target: RunTarget; buildKey: string | null },
  record: Omit<FinishRecord, 'runIds'>,
  claim: ClaimOptions,
): Promise<CreatedRun[] | 'aborted' | null> {
  // A new record's generation is 0 (a take-over, which raises it, is the transaction's case).
  const keyed = target.deliveryKeyFor === undefined ? target : { ...target, deliveryKey: target.deliveryKeyFor(0) };
  const run = planOneStatementRun({ ...planFor(state, keyed, buildKey), runId: randomUUID() }, deps.queueDepth, deps.queueMaxDepth?.());
  if (run === null) return null;
  const before = state.steps.entries.length;
  const { created } = run;
  // The same words as the transaction's (jobRowCount: the workflow's jobs, pseudo-jobs aside).
  const workflow = target.candidate.workflow;
  state.steps.add('dispatch', 'runs_created', `${workflow.name} → run ${created.runId}, ${jobRowCount(workflow)} job(s), status ${created.status}`);
  state.steps.add('delivery-record', record.status);
  let generation: number | null = null;
  try {
    generation = await writeOneStatementRun(deps.pool, deps.wakeups, state, { ...record, runIds: [created.runId] }, claim, run);
  } finally {
    // Nothing was written (or the statement failed): the record's steps are as they were.
    if (generation === null) state.steps.entries.splice(before);
  }
  if (generation === null) return 'aborted';
  state.generation = generation;
  deps.queueDepth.committed({ reason: null, counted: false }, created.queuedJobs);
  return [created];
}

export type DispatchResult = { duplicate: false; runs: CreatedRun[] } | { duplicate: true; status: string };

class Duplicate extends Error {}

/**
 * Steps 14-16: cache checks, then the record (claim and final form in one statement), the runs
 * and the queue notification in ONE transaction; no runs: one row of a batched statement
 * (outcome-batch.ts). A duplicate (another attempt owns the record) rolls everything back and is
 * counted on the record. The payload object is written
 * after the commit (see event-log.ts).
 */
export async function dispatchRuns(
  deps: DispatchDeps,
  state: DeliveryState,
  targets: readonly RunTarget[],
  status: DeliveryStatus,
  message: string | undefined,
  claim: ClaimOptions,
): Promise<DispatchResult> {
  const payload = deps.eventLog.plan(state.delivery);
  try {
    if (targets.length === 0) {
      state.steps.add('dispatch', 'none');
      state.steps.add('delivery-record', status);
      const outcome = await deps.outcomes.record(state, { status, ...(message === undefined ? {} : { message }), runIds: [], payload }, claim);
      if (!outcome.claimed) {
        deps.eventLog.cancel(payload);
        return { duplicate: true, status: outcome.status };
      }
      deps.eventLog.write(state.delivery, payload);
      return { duplicate: false, runs: [] };
    }
    const checked: Array<{ target: RunTarget; buildKey: string | null }> = [];
    for (const target of targets) {
      const c = target.candidate;
      const check = await deps.caches.check(state.delivery.orgId, c.workflow.contentHash, c.lockfileHash);
      state.steps.add(
        'caches',
        check.sourceHit === null ? 'no_cache' : check.sourceHit ? 'source_hit' : 'source_miss',
        `${c.workflow.name}: source ${check.sourceHit === null ? 'not configured' : check.sourceHit ? 'hit' : `miss, build ${check.buildKey}`}` +
          (check.depsHit === null ? '' : `, deps ${check.depsHit ? 'hit' : 'miss'}`),
      );
      checked.push({ target, buildKey: check.buildKey });
    }
    const asked = performance.now();
    if (state.admittedAt !== undefined) deps.stages?.observe('steps', state.admittedAt, asked);
    if (checked.length === 1) {
      const runs = await tryOneStatement(deps, state, checked[0]!, { status, ...(message === undefined ? {} : { message }), payload }, claim);
      if (runs === 'aborted') deps.stages?.observe('one_statement_aborted', asked);
      else if (runs !== null) {
        deps.stages?.observe('one_statement', asked);
        deps.eventLog.write(state.delivery, payload);
        return { duplicate: false, runs };
      }
    }
    let entered = asked;
    let finished = asked;
    let depth: DepthCheck | undefined;
    // No NOTIFY inside: the wake-ups follow the commit (runs/deferred-wakeups.ts).
    const runs = await transactionWithWakeupsAfterCommit(deps.pool, deps.wakeups, async (tx) => {
      entered = performance.now();
      // The record first, written in its final form with the runs this transaction will create
      // (ids chosen here): it is also the claim, so a duplicate stops before any run is made. It
      // also sets the status feed's deferral (`firstStatementDefers` below).
      const planned: string[] = checked.map(() => randomUUID());
      const predicted = checked.map(({ target }, i) => {
        const workflow = target.candidate.workflow;
        return { name: workflow.name, runId: planned[i]!, jobs: jobRowCount(workflow), status: workflow.approval !== undefined ? 'held' : 'queued', existing: false };
      });
      const describe = (runs: typeof predicted) => runs.map((r) => `${r.name} → run ${r.runId}${r.existing ? ' (existing)' : ''}, ${r.jobs} job(s), status ${r.status}`).join('; ');
      state.steps.add('dispatch', 'runs_created', describe(predicted));
      const dispatchEntry = state.steps.entries.length - 1;
      state.steps.add('delivery-record', status);
      const record = { status, ...(message === undefined ? {} : { message }), runIds: planned, payload };
      const generation = await recordOutcomeRow(tx, state, record, claim, true);
      if (generation === null) throw new Duplicate();
      state.generation = generation;
      const created: CreatedRun[] = [];
      for (const [i, { target, buildKey }] of checked.entries()) {
        const keyed = target.deliveryKeyFor === undefined ? target : { ...target, deliveryKey: target.deliveryKeyFor(generation) };
        created.push(await createRun(tx, { ...planFor(state, keyed, buildKey), runId: planned[i]! }));
      }
      // A replay that found runs made before: the record names those instead (rare).
      if (created.some((r, i) => !r.created || r.runId !== planned[i])) {
        const actual = created.map((r, i) => ({ ...predicted[i]!, runId: r.runId, jobs: r.jobIds.length, status: r.status, existing: !r.created }));
        state.steps.entries[dispatchEntry] = { step: 'dispatch', outcome: 'runs_created', detail: describe(actual).slice(0, 2000) };
        await replaceRunIds(tx, state, planned, created.map((r) => r.runId));
      }
      const adding = created.reduce((sum, run) => sum + run.queuedJobs, 0);
      depth = await deps.queueDepth.check(tx, deps.queueMaxDepth?.(), adding);
      const full = depth.reason;
      if (full !== null) {
        // Rolls the runs and the record back; finishClaimed records the delivery `shed` with it.
        state.steps.entries.splice(dispatchEntry);
        state.steps.add('dispatch', 'shed', full);
        throw new IngestStop('shed', 'shed_retry_later', full);
      }
      if (created.some((r) => r.queuedJobs > 0)) await deps.notifyJobsQueued(tx);
      finished = performance.now();
      return created;
    }, { firstStatementDefers: true });
    if (depth !== undefined) deps.queueDepth.committed(depth, runs.reduce((sum, run) => sum + run.queuedJobs, 0));
    deps.stages?.observe('connection', asked, entered);
    deps.stages?.observe('statements', entered, finished);
    deps.stages?.observe('commit', finished);
    deps.eventLog.write(state.delivery, payload);
    return { duplicate: false, runs };
  } catch (error) {
    deps.eventLog.cancel(payload);
    if (error instanceof Duplicate) return { duplicate: true, status: await countDuplicate(deps.pool, state.delivery) };
    throw error;
  }
}
