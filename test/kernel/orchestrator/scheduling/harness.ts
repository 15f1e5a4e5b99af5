// Scheduling tests: lock entries, runs created by the real createRun, a real orchestrator with
// the dispatch and scheduling subsystems, and a TestAgent that completes jobs as scripted.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { createRunControlSubsystem } from '../../../../kernel/orchestrator/run-control/subsystem.ts';
import { createDispatchSubsystem, type DispatchService } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { dispatchServiceRef } from '../../../../kernel/orchestrator/service-refs.ts';
import { notifyJobsQueued } from '../../../../kernel/orchestrator/dispatch/notify.ts';
import { createRun, type CreatedRun, type RunPlan } from '../../../../kernel/orchestrator/runs/create.ts';
import { createSchedulingSubsystem } from '../../../../kernel/orchestrator/scheduling/index.ts';
import { sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { LockJob, LockWorkflow } from '../../../../schemas/lock.ts';
import type { JobDispatch } from '../../../../schemas/wire/agent.ts';
import { workflowToLockEntry } from '../../../../workflow/compile/lock-entry.ts';
import { registerSdkResolution } from '../../../../workflow/sdk-resolution.ts';
import { gitRepo, makeTree, type Tree } from '../../../agent/fixtures/trees.ts';
import { testLogger, type Test } from '../../../fixtures/db.ts';
import { FAST } from '../dispatch/harness.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';

export function lockJob(name: string, extra: Partial<LockJob> = {}): LockJob {
  return {
    name,
    runsOn: ['linux'],
    needs: [],
    contexts: [],
    checkout: { enabled: true, depth: 1, submodules: false, lfs: false },
    steps: [{ name: 'step', hasOutputs: false }],
    ...extra,
  };
}

export function lockWorkflow(jobs: LockJob[], extra: Partial<LockWorkflow> = {}): LockWorkflow {
  return {
    name: 'ci',
    source: '.svc/workflows/ci.ts#default',
    contentHash: 'c'.repeat(64),
    compileSchemaVersion: 7,
    triggers: [{ type: 'push', branches: [], paths: [], repositories: [], requires: [] }],
    jobs,
    ...extra,
  };
}

export function runPlan(workflow: LockWorkflow, overrides: Partial<RunPlan> = {}): RunPlan {
  const repository = 'acme/widgets';
  return {
    orgId: 'org-1',
    deliveryKey: null,
    sourceId: null,
    provider: 'github',
    repository,
    workflowRepository: repository,
    workflowSourceId: null,
    workflowCloneUrl: null,
    workflow,
    workflowSha: 'b'.repeat(40),
    workflowRef: 'refs/heads/main',
    sha: 'b'.repeat(40),
    ref: 'refs/heads/main',
    eventName: 'push',
    subjectKind: 'ref',
    actor: 'dev',
    trustTier: 'trusted',
    isFork: 'false',
    headRef: '',
    headRepository: '',
    lockfileHash: null,
    event: {
      provider: 'github',
      eventName: 'push',
      repository: { fullName: repository, owner: 'acme', name: 'widgets', id: '1', cloneUrl: `https://git.example.test/${repository}.git`, defaultBranch: 'main' },
      ref: 'refs/heads/main',
    } as unknown as NormalizedEvent,
    changedFiles: null,
    workflowModified: false,
    buildKey: null,
    ...overrides,
  };
}

/** createRun in a transaction, waking the dispatchers as ingest does. */
export async function createTestRun(pool: DatabasePool, workflow: LockWorkflow, overrides: Partial<RunPlan> = {}): Promise<CreatedRun> {
  return pool.transaction(async (tx) => {
    const created = await createRun(tx, runPlan(workflow, overrides));
    await notifyJobsQueued(tx);
    return created;
  });
}

export interface JobRowView {
  id: string;
  name: string;
  display_name: string;
  kind: string;
  status: string;
  reason: string | null;
  needs: string[];
  matrix: Record<string, unknown> | null;
  generated_by: string | null;
  outputs: unknown;
}

export async function jobsOf(pool: DatabasePool, runId: string): Promise<JobRowView[]> {
  return (await pool.any(sql.unsafe`
    SELECT id::text AS id, name, display_name, kind, status, reason, needs, matrix, generated_by, outputs FROM jobs
    WHERE run_id = ${runId} ORDER BY display_name`)) as unknown as JobRowView[];
}

export function byName(rows: readonly JobRowView[]): Record<string, JobRowView> {
  return Object.fromEntries(rows.map((r) => [r.display_name, r]));
}

export async function runOf(pool: DatabasePool, runId: string): Promise<{ status: string; reason: string | null; cancelled_by: string | null; deadline_at: number | null }> {
  return (await pool.one(sql.unsafe`SELECT status, reason, cancelled_by, deadline_at FROM runs WHERE id = ${runId}`)) as never;
}

export async function runEvents(pool: DatabasePool, runId: string): Promise<Array<{ kind: string; status: string; job_id: string | null }>> {
  return (await pool.any(sql.unsafe`SELECT kind, status, job_id::text AS job_id FROM run_events WHERE run_id = ${runId} ORDER BY id`)) as never;
}

export interface SchedulingNode {
  url: string;
  service: DispatchService;
}

export async function startSchedulingNode(t: Test, dbUrl: string, sweepMs = 100): Promise<SchedulingNode> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-scheduling-'));
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl,
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: 'a'.repeat(64),
      SVC_AGENT_AUTH: 'none',
    },
    cwd: dataDir,
    logger: testLogger,
    plugins: () => ({ builtIns: [], config: {}, selection: {} }),
    subsystems: [createDispatchSubsystem(FAST), createSchedulingSubsystem({ sweepMs }), createRunControlSubsystem()],
  });
  t.teardown(async () => {
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { url: orch.url, service: orch.get(dispatchServiceRef) };
}

/** A TestAgent that answers each job.dispatch with `script(dispatch)` (a report, or null to hold it). */
export async function scriptedAgent(
  t: Test,
  url: string,
  agentId: string,
  script: (d: JobDispatch) => Record<string, unknown> | null,
): Promise<TestAgent> {
  const agent = await TestAgent.online({ url, agentId, labels: ['linux'] });
  t.teardown(() => agent.close());
  agent.onMessage((m) => {
    if (m.type !== 'job.dispatch') return;
    // A dispatch can arrive before the test registers its script (the run id is known only once
    // the run exists, and an idle agent claims at once): ask again for a moment before giving up.
    // `script` may therefore see one dispatch several times.
    const answer = (tries: number): void => {
      const report = script(m);
      if (report === null) {
        if (tries > 0) setTimeout(() => answer(tries - 1), 50);
        return;
      }
      agent.jobStatus(m.jobId, 'running');
      const { status, ...extra } = report as { status: 'completed' | 'failed' | 'cancelled' };
      agent.jobStatus(m.jobId, status, extra);
    };
    answer(40);
  });
  return agent;
}

/**
 * A real workflow file in a real git repository, compiled the way `svc compile` does
 * (workflowToLockEntry): the lock entry a test creates runs from, and the push event whose
 * checkout reads that repository.
 */
export async function compiledWorkflowRepo(dir: string, workflowSource: string): Promise<{ tree: Tree; sha: string; entry: LockWorkflow; event: NormalizedEvent }> {
  const tree = await makeTree(dir, { '.svc/workflows/ci.ts': workflowSource });
  const sha = await gitRepo(tree.dir);
  registerSdkResolution();
  const mod = (await import(pathToFileURL(join(tree.dir, '.svc/workflows/ci.ts')).href)) as { default: unknown };
  const entry = workflowToLockEntry(mod.default, { sourcePath: '.svc/workflows/ci.ts', exportName: 'default', contentHash: tree.contentHash });
  const event = {
    provider: 'github',
    eventName: 'push',
    repository: { fullName: 'acme/widgets', owner: 'acme', name: 'widgets', id: '1', cloneUrl: `file://${tree.dir}`, defaultBranch: 'main' },
    ref: 'refs/heads/main',
  } as unknown as NormalizedEvent;
  return { tree, sha, entry, event };
}

/** A job's stored log lines (job_logs), joined by newlines. */
export async function jobLogText(pool: DatabasePool, jobId: string): Promise<string> {
  const rows = (await pool.any(sql.unsafe`SELECT lines FROM job_logs WHERE job_id = ${jobId} ORDER BY seq`)) as readonly { lines: Array<{ text: string }> }[];
  return rows.flatMap((r) => r.lines.map((l) => l.text)).join('\n');
}
