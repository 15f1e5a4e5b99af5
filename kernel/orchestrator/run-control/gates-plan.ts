// What run control needs to know about a lock entry when its rows are created: the default
// concurrency group keys, and whether a job passes through the run-control gates (an approval,
// a concurrency group, a secret context whose protection rules may hold it) before `queued`.
import type { LockJob, LockWorkflow } from '../../../schemas/lock.ts';

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
