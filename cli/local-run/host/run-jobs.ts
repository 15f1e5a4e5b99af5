// One workflow's jobs on this machine, with the agent's own job executor (DispatchedJob: source
// restore and digest check, content-hash check, dependency restore, the step runner in the
// process sandbox, masking) and the orchestrator's scheduling rules: static matrices expand to
// one instance per combination (expandMatrix, as run creation does), a job starts when every
// instance of every job it needs completed, jobs whose needs are all met run in parallel, a job
// whose need failed, was cancelled or skipped is skipped (transitively), and dependents get the
// outputs of their needs merged per job name.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { expandMatrix } from '../../../workflow/matrix.ts';
import type { LockJob, LockWorkflow } from '../../../schemas/lock.ts';
import type { JobDispatch, JobStatus } from '../../../schemas/wire/agent.ts';
import { DispatchedJob, type SandboxChoice } from '../../../agent/jobs/executor.ts';
import type { LocalHub } from './hub.ts';

export type LocalJobStatus = 'completed' | 'failed' | 'cancelled' | 'skipped';

export interface LocalJobResult {
  /** Lock job name. */
  name: string;
  /** `test (22)` for a matrix instance. */
  displayName: string;
  jobId: string;
  matrix: Record<string, string | number | boolean> | null;
  status: LocalJobStatus;
  reason: string | null;
  outputs: Record<string, unknown>;
  steps: JobStatus['steps'];
  startedAt: string | null;
  finishedAt: string | null;
  durationMs: number | null;
}

export interface LocalWorkflowOptions {
  workflow: LockWorkflow;
  /** Fields of every job's config that come from the event and the local tree. */
  base: Pick<JobDispatch['jobConfig'], 'sha' | 'ref' | 'repository' | 'event' | 'changedFiles' | 'env' | 'secrets' | 'isTestRun'>;
  source: { url: string; digest: string };
  deps: { url: string; hash: string } | null;
  hub: LocalHub;
  logger: Logger;
  workRoot: string;
  sandboxes: ReadonlyMap<string, SandboxChoice>;
  defaultSandbox: string;
  runnerPath: string;
  readPaths: readonly string[];
  sdkVersion: string;
  /** The user's variables the jobs get (SVC_AGENT_PASS_ENV policy; docs/agent.md). */
  passedEnv?: Readonly<Record<string, string>>;
  /** Quiet time before a step's "still running" line (default 60 s). */
  quietNoticeMs?: number;
  /** Called when an instance starts (for the printer). */
  onStart?(job: { jobId: string; displayName: string }): void;
  /** Cancels every running job (Ctrl-C). */
  signal?: AbortSignal;
}

interface Instance {
  job: LockJob;
  jobId: string;
  displayName: string;
  matrix: Record<string, string | number | boolean> | null;
  state: 'waiting' | 'running' | LocalJobStatus;
  reason: string | null;
  outputs: Record<string, unknown>;
  execution?: DispatchedJob;
}

function instancesOf(workflow: LockWorkflow, job: LockJob): Instance[] {
  const base = (matrix: Instance['matrix'], displayName: string): Instance => ({
    job,
    jobId: `local-${randomUUID()}`,
    displayName,
    matrix,
    state: 'waiting',
    reason: null,
    outputs: {},
  });
  if (job.dynamic === true) {
    const one = base(null, job.name);
    one.state = 'skipped';
    one.reason = 'dynamic jobs are generated on an agent at run time; local runs do not run generators yet';
    return [one];
  }
  if (job.matrix?.type === 'dynamic') {
    const one = base(null, job.name);
    one.state = 'failed';
    one.reason = `job ${JSON.stringify(job.name)} of workflow ${JSON.stringify(workflow.name)} has a dynamic matrix, which local runs cannot expand`;
    return [one];
  }
  if (job.matrix?.type !== 'static') return [base(null, job.name)];
  return expandMatrix(job.matrix.axes).map((m) => base(m, `${job.name} (${Object.values(m).join(', ')})`));
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'skipped']);

export async function runLocalWorkflow(options: LocalWorkflowOptions): Promise<LocalJobResult[]> {
  const runId = randomUUID();
  const instances = options.workflow.jobs.flatMap((job) => instancesOf(options.workflow, job));
  const byName = new Map<string, Instance[]>();
  for (const i of instances) byName.set(i.job.name, [...(byName.get(i.job.name) ?? []), i]);
  const running = new Set<Promise<void>>();
  const cancel = () => {
    for (const i of instances) i.execution?.cancel('interrupted', false);
  };
  options.signal?.addEventListener('abort', cancel, { once: true });

  const needsOutputs = (job: LockJob): Record<string, Record<string, unknown>> => {
    const out: Record<string, Record<string, unknown>> = {};
    for (const need of job.needs) {
      out[need] = {};
      for (const i of byName.get(need) ?? []) Object.assign(out[need], i.outputs);
    }
    return out;
  };

  const start = (i: Instance): void => {
    i.state = 'running';
    const config = i.job;
    const dispatch: JobDispatch = {
      type: 'job.dispatch',
      jobId: i.jobId,
      runId,
      attempt: 1,
      jobConfig: {
        ...options.base,
        workflow: options.workflow.name,
        job: config.name,
        contentHash: options.workflow.contentHash,
        needs: needsOutputs(config),
        ...(i.matrix === null ? {} : { matrix: i.matrix }),
        ...(config.timeout === undefined ? {} : { timeoutMs: config.timeout }),
        ...(config.gracePeriod === undefined ? {} : { gracePeriodSeconds: config.gracePeriod }),
        ...(config.container === undefined ? {} : { container: config.container }),
      },
      sourceTarUrl: options.source.url,
      sourceTarDigest: options.source.digest,
      depsUrl: options.deps?.url ?? null,
      depsHash: options.deps?.hash ?? null,
      sourceAuth: { cloneUrl: 'local' },
      workflowAuth: null,
      cacheRefScope: 'shared',
    };
    options.onStart?.({ jobId: i.jobId, displayName: i.displayName });
    const execution = new DispatchedJob(dispatch, {
      logger: options.logger,
      workRoot: options.workRoot,
      sandboxes: options.sandboxes,
      defaultSandbox: options.defaultSandbox,
      runnerPath: options.runnerPath,
      readPaths: options.readPaths,
      sdkVersion: options.sdkVersion,
      ...(options.passedEnv === undefined ? {} : { passedEnv: options.passedEnv }),
      ...(options.quietNoticeMs === undefined ? {} : { quietNoticeMs: options.quietNoticeMs }),
      send: options.hub.send,
      request: options.hub.request,
    });
    i.execution = execution;
    const done = execution.done.then(() => {
      const status = options.hub.statusOf(i.jobId);
      i.state = execution.status === 'running' ? 'failed' : execution.status;
      i.reason = status?.reason ?? null;
      i.outputs = status?.outputs ?? {};
    });
    running.add(done);
    void done.finally(() => running.delete(done));
  };

  // Bounded: every pass either starts, skips or waits for a running job to finish.
  for (let guard = 0; guard <= instances.length * 4 + 4; guard++) {
    let progressed = true;
    while (progressed) {
      progressed = false;
      for (const i of instances) {
        if (i.state !== 'waiting') continue;
        let ready = true;
        let skip: string | null = null;
        for (const need of i.job.needs) {
          const deps = byName.get(need) ?? [];
          if (deps.length === 0) {
            skip = `needs ${need} which does not exist in this workflow`;
            break;
          }
          const bad = deps.find((d) => d.state === 'failed' || d.state === 'cancelled' || d.state === 'skipped');
          if (bad !== undefined) {
            skip = `needs ${need} which ${bad.state}`;
            break;
          }
          if (!deps.every((d) => d.state === 'completed')) ready = false;
        }
        if (options.signal?.aborted === true && skip === null) skip = 'the local run was interrupted';
        if (skip !== null) {
          i.state = 'skipped';
          i.reason = skip;
          progressed = true;
        } else if (ready) {
          start(i);
          progressed = true;
        }
      }
    }
    if (running.size === 0) break;
    await Promise.race(running);
  }
  options.signal?.removeEventListener('abort', cancel);
  await Promise.all(running);

  return instances.map((i) => {
    const status = options.hub.statusOf(i.jobId);
    const started = status?.startedAt ?? null;
    const finished = status?.finishedAt ?? null;
    return {
      name: i.job.name,
      displayName: i.displayName,
      jobId: i.jobId,
      matrix: i.matrix,
      status: TERMINAL.has(i.state) ? (i.state as LocalJobStatus) : 'skipped',
      reason: i.reason,
      outputs: i.outputs,
      steps: status?.steps ?? [],
      startedAt: started,
      finishedAt: finished,
      durationMs: started !== null && finished !== null ? Date.parse(finished) - Date.parse(started) : null,
    };
  });
}
