// What run control needs to know about a lock entry when its rows are created: the default
// concurrency group keys, and whether a job passes through the run-control gates (an approval,
// a concurrency group, a secret context whose protection rules may hold it) before `queued`.
import type { LockApproval, LockJob, LockWorkflow } from '../../../schemas/lock.ts';

/**
 * Whether a gate applies to a run: `always`; `untrusted` when the trust tier is not `trusted`;
 * `fork` when the run comes from a fork. An unresolved tier or fork status holds (fails closed).
 */
export function approvalApplies(approval: Pick<LockApproval, 'when'>, run: { trustTier: string; isFork: string }): boolean {
  if (approval.when === 'untrusted') return run.trustTier !== 'trusted';
  if (approval.when === 'fork') return run.isFork !== 'false';
  return true;
}

/** A workflow's group when its `concurrency` names none: all runs of that workflow. */
export function defaultRunGroup(workflowRepository: string, workflow: string): string {
  return `workflow:${workflowRepository}:${workflow}`;
}

/** A job's group when its `concurrency` names none: that job across runs of its workflow. */
export function defaultJobGroup(workflowRepository: string, workflow: string, job: string): string {
  return `job:${workflowRepository}:${workflow}:${job}`;
}

/** True when `job` must pass the run-control gates between ready and `queued`. */
export function isGated(workflow: Pick<LockWorkflow, 'contexts'>, job: Pick<LockJob, 'approval' | 'concurrency' | 'contexts'>): boolean {
  return job.approval !== undefined || job.concurrency !== undefined || job.contexts.length > 0 || (workflow.contexts?.length ?? 0) > 0;
}

/** The steps of `job` held for an approval that applies to the run (the dispatch's `approvalSteps`). */
export function heldSteps(job: Pick<LockJob, 'steps'> | undefined, run: { trustTier: string; isFork: string }): Array<{ index: number; name: string }> {
  if (job === undefined || !Array.isArray(job.steps)) return [];
  return job.steps.flatMap((step, index) => (step.approval !== undefined && approvalApplies(step.approval, run) ? [{ index, name: step.name }] : []));
}
