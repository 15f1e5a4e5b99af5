// Loading the workflow module named by runner.start and finding the job. `svc/sdk` imports in
// workflow files resolve to this package's SDK through the compiler's resolution hook, so the
// definitions and the runner share one SDK instance.
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InputError, NotFoundError, messageOf } from '../../core/errors.ts';
import { registerSdkResolution } from '../../workflow/sdk-resolution.ts';
import type { Job } from '../../sdk/job.ts';
import { isWorkflow, type Workflow } from '../../sdk/workflow.ts';
import type { RunnerStart } from '../../schemas/wire/runner.ts';
import { RunnerErrorCode } from './errors.ts';

export interface LoadedJob {
  workflow: Workflow;
  job: Job;
}

function jobNames(workflow: Workflow): string[] {
  const jobs = workflow.options.jobs;
  return Array.isArray(jobs) ? jobs.map((j: Job) => String(j.options.name)) : Object.keys(jobs);
}

/** The workflow definition `start` names (no job lookup: pseudo-jobs and generated jobs). */
export async function loadWorkflow(start: RunnerStart): Promise<Workflow> {
  const file = start.workflowFile;
  if (!isAbsolute(file)) throw new InputError(RunnerErrorCode.workflowLoad, `workflowFile must be an absolute path, got ${JSON.stringify(file)}`);
  registerSdkResolution();
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new InputError(RunnerErrorCode.workflowLoad, `cannot load workflow file ${file}: ${messageOf(error)}`, { cause: error });
  }
  const definition = mod[start.exportName];
  if (!isWorkflow(definition)) {
    throw new InputError(RunnerErrorCode.workflowLoad, `export ${JSON.stringify(start.exportName)} of ${file} is not a workflow(...) definition`);
  }
  if (definition.name !== start.workflowName) {
    throw new InputError(
      RunnerErrorCode.workflowLoad,
      `export ${JSON.stringify(start.exportName)} of ${file} is workflow ${JSON.stringify(definition.name)}, not ${JSON.stringify(start.workflowName)}: the lock is stale`,
    );
  }
  return definition;
}

export async function loadJob(start: RunnerStart): Promise<LoadedJob> {
  const definition = await loadWorkflow(start);
  const jobs = definition.options.jobs;
  const job = Array.isArray(jobs)
    ? (jobs as readonly Job[]).find((j) => j.options.name === start.jobName)
    : Object.hasOwn(jobs, start.jobName)
      ? (jobs as Readonly<Record<string, Job>>)[start.jobName]
      : undefined;
  if (job === undefined) {
    throw new NotFoundError(
      RunnerErrorCode.jobNotFound,
      `workflow ${JSON.stringify(definition.name)} has no job ${JSON.stringify(start.jobName)} (jobs: ${jobNames(definition).join(', ') || 'none'})`,
    );
  }
  if (job.dynamic) {
    throw new InputError(RunnerErrorCode.dynamicJob, `job ${JSON.stringify(start.jobName)} is a dynamicJobs(...) generator; this runner runs only static jobs`);
  }
  return { workflow: definition, job };
}
