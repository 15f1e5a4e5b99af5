// Steps 14-16 for a delivery's surviving candidates: cache check per workflow, then every run
// with its jobs, the delivery record and the queue notification in ONE transaction, so a crash
// leaves either all of it or none (and the replay redoes it, finding runs already made).
import type { CommonQueryMethods } from 'slonik';
import type { NormalizedEvent } from '../../../schemas/event.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { createRun, type CreatedRun, type RunPlan } from '../runs/create.ts';
import type { CacheChecker } from './caches.ts';
import { finishDelivery, type PayloadOutcome } from './delivery-record.ts';
import type { Candidate } from './match.ts';
import type { DeliveryState, DeliveryStatus } from './types.ts';

export type NotifyJobsQueued = (tx: CommonQueryMethods) => Promise<void>;

export interface RunTarget {
  candidate: Candidate;
  deliveryKey: string;
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
  };
}

export interface DispatchDeps {
  pool: DatabasePool;
  caches: CacheChecker;
  notifyJobsQueued: NotifyJobsQueued;
}

/** Cache checks, runs and the finished record. Returns the created (or found) runs. */
export async function dispatchRuns(
  deps: DispatchDeps,
  state: DeliveryState,
  targets: readonly RunTarget[],
  status: DeliveryStatus,
  message: string | undefined,
  payload: PayloadOutcome,
): Promise<CreatedRun[]> {
  const plans: RunPlan[] = [];
  for (const target of targets) {
    const c = target.candidate;
    const check = await deps.caches.check(state.delivery.orgId, c.workflow.contentHash, c.lockfileHash);
    state.steps.add(
      'caches',
      check.sourceHit === null ? 'no_cache' : check.sourceHit ? 'source_hit' : 'source_miss',
      `${c.workflow.name}: source ${check.sourceHit === null ? 'not configured' : check.sourceHit ? 'hit' : `miss, build ${check.buildKey}`}` +
        (check.depsHit === null ? '' : `, deps ${check.depsHit ? 'hit' : 'miss'}`),
    );
    plans.push(planFor(state, target, check.buildKey));
  }
  const runs = await deps.pool.transaction(async (tx) => {
    const created: CreatedRun[] = [];
    for (const plan of plans) created.push(await createRun(tx, plan));
    const queued = created.reduce((n, r) => n + r.queuedJobs, 0);
    state.steps.add(
      'dispatch',
      created.length === 0 ? 'none' : 'runs_created',
      created.map((r, i) => `${plans[i]!.workflow.name} → run ${r.runId}${r.created ? '' : ' (existing)'}, ${r.jobIds.length} job(s), status ${r.status}`).join('; ') ||
        undefined,
    );
    state.steps.add('delivery-record', status);
    await finishDelivery(tx, state, { status, ...(message === undefined ? {} : { message }), runIds: created.map((r) => r.runId), payload });
    if (queued > 0) await deps.notifyJobsQueued(tx);
    return created;
  });
  return runs;
}
