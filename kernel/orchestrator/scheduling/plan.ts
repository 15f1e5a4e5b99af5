// What a run needs besides its lock jobs, decided from the lock's workflow entry at run
// creation: a filter pseudo-job when the workflow has a filter or rules, or a concurrency group
// key that workflow code computes (the filter role evaluates it on the agent), a hooks pseudo-job when
// it has workflow hooks, and a generator job for each dynamic entry (dynamic jobs or a dynamic
// matrix) in place of that entry's job rows.
import type { LockJob, LockWorkflow } from '../../../schemas/lock.ts';

export interface GeneratorSpec {
  /** Dynamic reference to the generator in the definition. */
  ref: string;
  kind: 'jobs' | 'matrix';
}

export interface SchedulingPlan {
  filter: boolean;
  hooks: boolean;
  /** Lock entry name → its generator, for entries evaluated at run time. */
  generators: Map<string, GeneratorSpec>;
  /** Labels the pseudo-jobs run on: the first lock job's (any agent when there is none). */
  pseudoRunsOn: string[];
}

/** `jobs` + name → `jobs.name` or `jobs["a-b"]` (the compiler's reference form). */
function jobPath(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? `jobs.${name}` : `jobs[${JSON.stringify(name)}]`;
}

export function generatorOf(job: LockJob): GeneratorSpec | undefined {
  if (job.dynamic === true) return { kind: 'jobs', ref: job.generatorRef ?? `${jobPath(job.name)}.generate` };
  if (job.matrix?.type === 'dynamic') return { kind: 'matrix', ref: job.matrix.ref };
  return undefined;
}

/** True when a group key of the workflow or one of its jobs comes from workflow code. */
export function needsGroupKeys(workflow: Pick<LockWorkflow, 'concurrency' | 'jobs'>): boolean {
  return workflow.concurrency?.hasGroup === true || workflow.jobs.some((j) => j.concurrency?.hasGroup === true);
}

export function schedulingPlanOf(workflow: LockWorkflow): SchedulingPlan {
  const generators = new Map<string, GeneratorSpec>();
  for (const job of workflow.jobs) {
    const generator = generatorOf(job);
    if (generator !== undefined) generators.set(job.name, generator);
  }
  return {
    filter: workflow.hasFilter === true || (workflow.rules?.length ?? 0) > 0 || needsGroupKeys(workflow),
    hooks: workflow.hasOnSuccess === true || workflow.hasOnFailure === true || workflow.hasOnCancel === true || workflow.hasCleanup === true,
    generators,
    pseudoRunsOn: [...(workflow.jobs[0]?.runsOn ?? [])],
  };
}
