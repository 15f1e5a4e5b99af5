// The `local` scaler: (1) job queued → first step running when the job's agent is a COLD spawn
// (no agent online: the scaling subsystem asks `local`, which starts svc-agent, which registers
// and takes the job), over C jobs one at a time, p50/p99 and the phases; (2) jobs per minute
// sustained with 8 concurrent ephemeral agents (maxAgents 8), T one-job runs queued at once,
// each job on its own agent. The REAL orchestrator (dispatch, caches and scaling subsystems,
// the built-in plugins from plugins/builtin.ts with a scaler config file), REAL svc-agent
// processes (from the sources, process sandbox), a real git repository; loopback only.
// Figures and RSS, no assertions.
// Run: node bench/scaler-local.ts [cold=15] [throughput=40]
// Database: a fresh database on SVC_TEST_DATABASE_URL (default local PostgreSQL), else an
// embedded PostgreSQL under a temp directory.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import pg from 'pg';
import { pino } from 'pino';
import { compileWorkflows } from '../cli/compiler/compile.ts';
import { startOrchestrator } from '../kernel/orchestrator/app.ts';
import { createCachesSubsystem } from '../kernel/orchestrator/caches/index.ts';
import { createDispatchSubsystem, notifyJobsQueued } from '../kernel/orchestrator/dispatch/index.ts';
import { CacheChecker } from '../kernel/orchestrator/ingest/steps/caches.ts';
import { createRun } from '../kernel/orchestrator/runs/create.ts';
import { createScalingSubsystem } from '../kernel/orchestrator/scaling/subsystem.ts';
import { resolveDatabase, sql, type DatabasePool } from '../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../plugins/builtin.ts';
import type { NormalizedEvent } from '../schemas/event.ts';
import type { Lock, LockWorkflow } from '../schemas/lock.ts';
import { createGitRemote } from '../test/fixtures/git-repos.ts';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const COLD = Math.max(1, Math.min(200, Number(args[0] ?? 15)));
const THROUGHPUT = Math.max(8, Math.min(500, Number(args[1] ?? 40)));
const CONCURRENT = 8;
const ORG = 'bench-org';
const REPO = 'acme/bench';

const WORKFLOWS = {
  '.svc/workflows/one.ts': `import { job, push, workflow } from 'svc/sdk';
export default workflow('one', { on: push(), jobs: { one: job({ runsOn: 'bench-scaled', steps: (s) => s.step('first', () => {}) }) } });
`,
  '.svc/workflows/bare.ts': `import { job, push, workflow } from 'svc/sdk';
export default workflow('bare', { on: push(), jobs: { bare: job({ runsOn: 'bench-scaled', checkout: false, steps: (s) => s.step('first', () => {}) }) } });
`,
  '.svc/.svcignore': 'node_modules/\ntypes/\n.npmrc\npackage-lock.json\n',
  '.svc/package.json': JSON.stringify({ name: 'bench-workflows', private: true, version: '1.0.0' }),
};

const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const fmt = (ms: number) => `${ms.toFixed(0)} ms`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const teardown: Array<() => Promise<unknown> | unknown> = [];
const t = { teardown: (fn: () => unknown) => void teardown.push(fn) };
const silent = pino({ level: 'silent' });

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function systemDatabase(): Promise<string | null> {
  const serverUrl = process.env['SVC_TEST_DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `svc_bench_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 3_000 });
  try {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
  } catch {
    await admin.end().catch(() => undefined);
    return null;
  }
  await admin.end();
  teardown.push(async () => {
    const c = new pg.Client({ connectionString: serverUrl });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-scaler-'));
const systemUrl = await systemDatabase();
const database = systemUrl !== null ? { url: systemUrl } : await resolveDatabase({ dataDir: join(dataDir, 'pg'), logger: silent });
if ('close' in database) teardown.push(() => database.close());
console.log(`database: ${systemUrl !== null ? 'system PostgreSQL' : 'embedded PostgreSQL'}`);

try {
  const remote = await createGitRemote(t);
  for (const [path, content] of Object.entries(WORKFLOWS)) {
    await mkdir(join(remote.work, path, '..'), { recursive: true });
    await writeFile(join(remote.work, path), content);
  }
  await execa('npm', ['install', '--package-lock-only', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], {
    cwd: join(remote.work, '.svc'),
    env: { ...process.env, PATH: `${join(process.execPath, '..')}:${process.env['PATH'] ?? ''}` },
  });
  const lock: Lock = (await compileWorkflows({ repoRoot: remote.work, mode: 'write' })).lock;
  await remote.git(['add', '--all']);
  await remote.git(['commit', '--quiet', '-m', 'bench']);
  await remote.push('HEAD:refs/heads/main');
  const sha = (await remote.git(['rev-parse', 'HEAD'])).trim();

  const scalerFile = join(dataDir, 'scalers.yaml');
  await writeFile(
    scalerFile,
    [
      'scalers:',
      '  - name: bench',
      '    plugin: local',
      '    labels: [bench-scaled]',
      `    maxAgents: ${CONCURRENT}`,
      '    startsPerMinute: 10000',
      '    idleTimeoutMs: 120000',
      'plugins:',
      '  local:',
      '    logLevel: warn',
      '    env: { SVC_AGENT_BWRAP: never }',
      '',
    ].join('\n'),
  );
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: database.url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: 'c'.repeat(64), SVC_AGENT_AUTH: 'none', SVC_STORAGE_TYPE: 'filesystem', SVC_SCALER_CONFIG_PATH: scalerFile,
    },
    cwd: dataDir,
    logger: silent,
    plugins: orchestratorPlugins,
    // Default timings: what is below the 1 s scaling tick comes from NOTIFY, not polling.
    subsystems: [createDispatchSubsystem(), createCachesSubsystem({ sweepMs: 0 }), createScalingSubsystem()],
  });
  teardown.unshift(() => orch.stop());
  const pool: DatabasePool = orch.ctx.db;
  const checker = new CacheChecker(orch.ctx.host.select('storage', 'filesystem'), orch.ctx.metrics);
  const event = {
    provider: 'github', type: 'push', providerEvent: 'push', action: null, eventName: 'push',
    repository: { fullName: REPO, owner: 'acme', name: 'bench', id: '1', cloneUrl: remote.url, defaultBranch: 'main' },
    ref: 'refs/heads/main', branch: 'main', tag: null, sha, beforeSha: null, deleted: false, sender: { login: 'bench', id: null },
    commitMessage: 'bench', changedFiles: null, pullRequest: null, comment: null, installationId: null, customEventName: null,
  } as unknown as NormalizedEvent;

  let deliveries = 0;
  const queue = async (workflow: LockWorkflow): Promise<string> => {
    const check = await checker.check(ORG, workflow.contentHash, lock.lockfileHash ?? null);
    return pool.transaction(async (tx) => {
      const r = await createRun(tx, {
        orgId: ORG, deliveryKey: `bench-${++deliveries}`, sourceId: null, provider: 'github', repository: REPO, workflowRepository: REPO,
        workflowSourceId: null, workflowCloneUrl: null, workflow, workflowSha: sha, workflowRef: 'refs/heads/main', sha, ref: 'refs/heads/main',
        eventName: 'push', subjectKind: 'ref', actor: 'bench', trustTier: 'trusted', isFork: 'false', headRef: '', headRepository: '',
        lockfileHash: lock.lockfileHash ?? null, event, changedFiles: null, workflowModified: false, buildKey: check.buildKey,
      });
      await notifyJobsQueued(tx);
      return r.runId;
    });
  };
  const finished = (runId: string) =>
    until(`run ${runId}`, async () => {
      const row = (await pool.one(sql.unsafe`SELECT status, reason FROM runs WHERE id = ${runId}`)) as { status: string; reason: string | null };
      if (!['completed', 'failed', 'cancelled', 'skipped'].includes(row.status)) return undefined;
      if (row.status !== 'completed') {
        // Name the failing job's own reason and steps: the run's reason only says which job failed.
        const jobs = await pool.any(sql.unsafe`SELECT j.name, j.status, j.reason, j.agent_id FROM jobs j WHERE j.run_id = ${runId}`);
        throw new Error(`run ${runId} ${row.status}: ${row.reason ?? ''}\n${JSON.stringify(jobs, null, 1)}`);
      }
      return row;
    }, 300_000);
  const noAgentOnline = () => until('no agent online', async () => ((await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM agents WHERE connected`)) === 0 ? true : undefined), 120_000);
  const workflow = (name: string) => lock.workflows.find((w) => w.name === name)!;

  // Warm-up: the build job caches source + deps (itself on a spawned agent).
  const warm = performance.now();
  await finished(await queue(workflow('one')));
  console.log(`warm-up run (build job + job, each on a spawned agent): ${fmt(performance.now() - warm)}`);

  // (1) Cold spawns, one job at a time, nothing online when each is queued.
  const latencies: number[] = [];
  const phases = { spawn: [] as number[], dispatch: [] as number[], step: [] as number[] };
  for (let i = 0; i < COLD; i += 1) {
    await noAgentOnline();
    const runId = await queue(workflow('one'));
    await finished(runId);
    const row = (await pool.one(sql.unsafe`
      SELECT extract(epoch FROM (s.started_at - j.queued_at)) * 1000 AS total,
             extract(epoch FROM (u.created_at - j.queued_at)) * 1000 AS spawn,
             extract(epoch FROM (j.dispatched_at - u.created_at)) * 1000 AS dispatch,
             extract(epoch FROM (s.started_at - j.dispatched_at)) * 1000 AS step
      FROM jobs j JOIN job_steps s ON s.job_id = j.id AND s.index = 0
      LEFT JOIN scale_ups u ON u.agent_id = j.agent_id
      WHERE j.run_id = ${runId} AND j.kind = 'job'`)) as Record<string, number | string | null>;
    latencies.push(Number(row['total']));
    phases.spawn.push(Number(row['spawn']));
    phases.dispatch.push(Number(row['dispatch']));
    phases.step.push(Number(row['step']));
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const p50 = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50);
  console.log(`queued → first step running, cold local spawn  n=${COLD}  p50=${fmt(percentile(sorted, 50))}  p99=${fmt(percentile(sorted, 99))}  max=${fmt(sorted[sorted.length - 1]!)}`);
  console.log(`  p50 by phase: queued → scale-up ${fmt(p50(phases.spawn))}, scale-up → dispatched (agent start + register) ${fmt(p50(phases.dispatch))}, dispatched → first step running ${fmt(p50(phases.step))}`);

  // (2) Throughput: T one-job runs queued at once, at most 8 agents alive.
  await noAgentOnline();
  let peak = 0;
  const sampler = setInterval(() => {
    void pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM agents WHERE connected`).then((n) => (peak = Math.max(peak, Number(n))), () => undefined);
  }, 100);
  const start = performance.now();
  const runIds: string[] = [];
  for (let i = 0; i < THROUGHPUT; i += 1) runIds.push(await queue(workflow('bare')));
  for (const id of runIds) await finished(id);
  const wallMs = performance.now() - start;
  clearInterval(sampler);
  const agentsUsed = (await pool.oneFirst(sql.unsafe`SELECT count(DISTINCT j.agent_id)::int FROM jobs j WHERE j.run_id = ANY(${sql.array(runIds, 'uuid')}) AND j.kind = 'job'`)) as number;
  console.log(`throughput, ${THROUGHPUT} one-job runs queued at once, maxAgents ${CONCURRENT}: ${((THROUGHPUT / wallMs) * 60_000).toFixed(1)} jobs/min  (wall ${fmt(wallMs)}, ${agentsUsed} agents, at most ${peak} online at once)`);
  const mem = process.memoryUsage();
  console.log(`RSS of the bench process (orchestrator; agents are child processes): ${mib(mem.rss)}  heap used ${mib(mem.heapUsed)}`);
} finally {
  for (const fn of teardown) await Promise.resolve(fn()).catch(() => undefined);
  await rm(dataDir, { recursive: true, force: true });
}
