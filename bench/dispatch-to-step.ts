// Dispatch → first step: with warm caches (the source tarball and the dependency tarball built
// and cached by a first run's build job; the agent connected and idle), the time from a job
// becoming queued (its run created in one transaction, as ingest does) to its first step
// reporting `running`, over J jobs one at a time; and the per-step overhead of a job of N
// trivial steps ((last step end − first step start) / N). The REAL orchestrator (dispatch and
// caches subsystems, filesystem storage), the REAL agent (process sandbox, real step runner), a
// real git repository; loopback only. Figures and RSS, no assertions.
// Targets: p50 ≤ 100 ms (p99 ≤ 200 ms for the default checkout with warm caches), ≤ 10 ms per step.
// The default checkout is measured cold (the first job: empty repository store), warm at the same
// commit, and warm with a new commit per job (as pushes bring); agent phases include the store's
// `storeWait`, `fetch`, `materialise`, and the runner's `runnerReady`/`firstStep`. Each job's total
// is also split into named groups that add up to it (breakdown(), printed at p50/p99 and for the
// median job): which phase a slow job lost its time in.
// Run: node bench/dispatch-to-step.ts [--dist] [--busy] [--keep-data] [jobs=50] [steps=100]
//   --busy: a background CPU load (stress-ng --cpu 1 --cpu-load 50, bench/lib/machine.ts) meanwhile.
//   --keep-data: leave the data directory (lib/machine.ts keepOrRemove says why a set of runs would).
//   --dist: the programs as shipped (`npm run build` first): `dist/bin/svc-orchestrator.js` (every
//   subsystem) and `dist/bin/svc-agent.js`, each its own process (vendored bundles, compiled step
//   runner); otherwise both run in this process from the sources (the orchestrator with its
//   dispatch and caches subsystems only). Either way the agent's debug line `job set-up timings` gives the agent-side
//   phases (source, content hash, deps, runner start, ...), printed as p50 per phase.
// Database: a fresh database on SVC_TEST_DATABASE_URL (default local PostgreSQL), else an
// embedded PostgreSQL under a temp directory. (No test fixture that loads tap: its timeout.)
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { pino } from 'pino';
import { DEFAULT_RUNNER_PATH, startAgent } from '../agent/agent.ts';
import { parseAgentEnv } from '../agent/env.ts';
import { compileWorkflows } from '../cli/compiler/compile.ts';
import { startOrchestrator } from '../kernel/orchestrator/app.ts';
import { createCachesSubsystem } from '../kernel/orchestrator/caches/index.ts';
import { createDispatchSubsystem, notifyJobsQueued } from '../kernel/orchestrator/dispatch/index.ts';
import { buildKeyOf, CacheChecker, sourcePointerKey } from '../kernel/orchestrator/ingest/steps/caches.ts';
import { createRun } from '../kernel/orchestrator/runs/create.ts';
import { createDatabase, resolveDatabase, sql, type DatabasePool } from '../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../plugins/builtin.ts';
import { createProcessSandbox } from '../plugins/sandboxes/process/index.ts';
import type { NormalizedEvent } from '../schemas/event.ts';
import type { Lock, LockWorkflow } from '../schemas/lock.ts';
import pg from 'pg';
import { createGitRemote } from '../test/fixtures/git-repos.ts';
import { distBin, fileCreateProbe, keepOrRemove, machineLine, rssMiB, startBusyLoad } from './lib/machine.ts';

const DIST = process.argv.includes('--dist');
const BUSY = process.argv.includes('--busy');
const KEEP_DATA = process.argv.includes('--keep-data');
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const JOBS = Math.max(1, Math.min(1000, Number(args[0] ?? 50)));
const STEPS = Math.max(1, Math.min(2000, Number(args[1] ?? 100)));
const DIST_AGENT = fileURLToPath(new URL('../dist/bin/svc-agent.js', import.meta.url));
if (DIST && !existsSync(DIST_AGENT)) throw new Error(`--dist needs the compiled tree: run npm run build first (${DIST_AGENT} is missing)`);
const ORG = 'bench-org';
const REPO = 'acme/bench';

const WORKFLOWS = {
  '.svc/workflows/one.ts': `import { job, push, workflow } from 'svc/sdk';
export default workflow('one', { on: push(), jobs: { one: job({ runsOn: 'bench', steps: (s) => s.step('first', () => {}) }) } });
`,
  '.svc/workflows/bare.ts': `import { job, push, workflow } from 'svc/sdk';
export default workflow('bare', { on: push(), jobs: { bare: job({ runsOn: 'bench', checkout: false, steps: (s) => s.step('first', () => {}) }) } });
`,
  '.svc/workflows/many.ts': `import { job, push, step, workflow } from 'svc/sdk';
const steps = Array.from({ length: ${STEPS} }, (_, i) => step(\`s\${i}\`, () => {}));
export default workflow('many', { on: push(), jobs: { many: job({ runsOn: 'bench', steps }) } });
`,
  '.svc/.svcignore': 'node_modules/\ntypes/\n.npmrc\npackage-lock.json\n',
  '.svc/package.json': JSON.stringify({ name: 'bench-workflows', private: true, version: '1.0.0' }),
};

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const fmt = (ms: number) => `${ms.toFixed(1)} ms`;
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

const teardown: Array<() => Promise<unknown> | unknown> = [];
const t = { teardown: (fn: () => unknown) => void teardown.push(fn) };

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const testLogger = pino({ level: 'silent' });

/**
 * One job's queued → first step in the issue's phases: the orchestrator's dispatch, the dispatch
 * message reaching the agent (`job running`), the checkout's fetch (store lock and check
 * included), the tree (written from the store, plus the wait for the cached `.svc/` overlay and
 * its move), the checks and dependencies, the runner's start (taking the spare or spawning one),
 * the SDK load the job still waited for, and the runner's start → first step (workflow import).
 * `rest` is what the agent's phases do not cover (its line's total against the database's).
 */
function breakdown(totalMs: number, dispatchMs: number, messageMs: number, t: Record<string, number>): Record<string, number> {
  const v = (...names: string[]) => names.reduce((sum, name) => sum + (t[name] ?? 0), 0);
  const parts = {
    dispatch: dispatchMs,
    message: messageMs,
    fetch: v('storeWait', 'fetch'),
    tree: v('materialise', 'source'),
    checks: v('contentHash', 'deps', 'workspace', 'workDir'),
    runnerStart: v('spare', 'spawn'),
    sdkLoad: v('runnerReady'),
    firstStep: v('firstStep'),
  };
  const covered = Object.values(parts).reduce((a, b) => a + b, 0);
  return { ...parts, rest: totalMs - covered, total: totalMs };
}

/** Agent-side set-up phases by job id, from the agent's `job set-up timings` debug lines. */
const agentTimings = new Map<string, Record<string, number>>();
function collectTimings(line: string): void {
  if (!line.includes('job set-up timings')) return;
  try {
    const entry = JSON.parse(line) as { jobId?: string; timings?: Record<string, number> };
    if (entry.jobId !== undefined && entry.timings !== undefined) agentTimings.set(entry.jobId, entry.timings);
  } catch {
    // not a log line
  }
}
function lineCollector(): Writable {
  let rest = '';
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) collectTimings(line);
      done();
    },
  });
}
const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-d2s-'));

/** A fresh database on the system server, or null when there is none. */
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

/** The orchestrator the jobs go through, and the bench's own view of its database and caches. */
interface BenchOrchestrator {
  url: string;
  pool: DatabasePool;
  /** Its own process (--dist), for its RSS. */
  pid?: number | undefined;
  /** As ingest decides it: null when the source cache holds the workflow, else the build's key. */
  buildKeyFor(contentHash: string, lockfileHash: string | null): Promise<string | null>;
}
const ORCHESTRATOR_ENV = (url: string) => ({
  SVC_DATABASE_URL: url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir,
  SVC_SECRET_KEY: 'c'.repeat(64), SVC_AGENT_AUTH: 'none', SVC_STORAGE_TYPE: 'filesystem',
});

/** The orchestrator's dispatch and caches subsystems in this process, from the sources. */
async function startInProcessOrchestrator(url: string): Promise<BenchOrchestrator> {
  const orch = await startOrchestrator({
    env: ORCHESTRATOR_ENV(url),
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    // The default 2 s tick: what is below it comes from NOTIFY, not polling.
    subsystems: [createDispatchSubsystem(), createCachesSubsystem({ sweepMs: 0 })],
  });
  teardown.unshift(() => orch.stop());
  const checker = new CacheChecker(orch.ctx.host.select('storage', 'filesystem'), orch.ctx.metrics);
  return { url: orch.url, pool: orch.ctx.db, buildKeyFor: async (c, l) => (await checker.check(ORG, c, l)).buildKey };
}

/**
 * `svc-orchestrator` as shipped (dist/, every subsystem) in its own process, so the bench's own
 * work (creating runs, polling for their end) never shares the orchestrator's event loop. The
 * bench reads the source-cache pointer from the orchestrator's filesystem storage directly.
 */
async function startDistOrchestrator(url: string): Promise<BenchOrchestrator> {
  const child = execa(process.execPath, [distBin('svc-orchestrator')], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? dataDir, ...ORCHESTRATOR_ENV(url), SVC_SERVER_LOG_LEVEL: 'warn' },
    extendEnv: false,
    reject: false,
    cwd: dataDir,
  });
  teardown.unshift(async () => {
    child.kill('SIGTERM');
    await child;
  });
  let out = '';
  const ready = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc-orchestrator not ready in 60 s: ${out}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const m = /svc-orchestrator ready (\S+)/.exec(out);
      if (m !== null) (clearTimeout(timer), resolve(m[1]!));
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    void child.then((r) => reject(new Error(`svc-orchestrator exited ${r.exitCode}: ${out}`)));
  });
  const pool = await createDatabase({ url, logger: testLogger });
  teardown.unshift(() => pool.end());
  const storageRoot = join(dataDir, 'storage');
  return {
    url: ready,
    pool,
    pid: child.pid,
    buildKeyFor: async (c, l) => (existsSync(join(storageRoot, sourcePointerKey(ORG, c))) ? null : buildKeyOf(c, l)),
  };
}

const systemUrl = await systemDatabase();
const database = systemUrl !== null ? { url: systemUrl } : await resolveDatabase({ dataDir: join(dataDir, 'pg'), logger: testLogger });
if ('close' in database) teardown.push(() => database.close());
console.log(`database: ${systemUrl !== null ? 'system PostgreSQL' : 'embedded PostgreSQL'}`);

const endMachine = machineLine(BUSY);
console.log(fileCreateProbe(dataDir));
const busyLoad = BUSY ? await startBusyLoad(600) : undefined;
try {
  // A repository whose .svc/ has a package lock: the build job caches source and deps.
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

  const orch = DIST ? await startDistOrchestrator(database.url) : await startInProcessOrchestrator(database.url);
  console.log(`orchestrator: ${DIST ? 'dist/bin/svc-orchestrator.js (compiled, own process, every subsystem)' : 'in this process, from the sources (dispatch and caches only)'}`);
  const agentWorkDir = join(dataDir, 'agent');
  let agentPid: number | undefined;
  if (DIST) {
    // The compiled program as operators run it; its pino lines (stdout) carry the timings.
    const child = execa(process.execPath, [DIST_AGENT], {
      env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? dataDir, SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_WORK_DIR: agentWorkDir, SVC_AGENT_LABELS: 'bench', SVC_AGENT_ID: 'bench-agent', SVC_AGENT_BWRAP: 'never', SVC_AGENT_LOG_LEVEL: 'debug' },
      extendEnv: false,
      reject: false,
      stderr: 'inherit',
    });
    agentPid = child.pid;
    const collector = lineCollector();
    let ready!: () => void;
    const readyLine = new Promise<void>((resolve) => (ready = resolve));
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString('utf8').includes('svc-agent ready')) ready();
      collector.write(chunk);
    });
    teardown.unshift(async () => {
      child.kill('SIGTERM');
      await child;
    });
    await Promise.race([readyLine, new Promise((_, reject) => setTimeout(() => reject(new Error('the dist agent did not get ready in 30 s')), 30_000))]);
  } else {
    const agent = await startAgent({
      settings: parseAgentEnv({ SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_WORK_DIR: agentWorkDir, SVC_AGENT_LABELS: 'bench' }),
      agentId: 'bench-agent',
      logger: pino({ level: 'debug' }, lineCollector()),
      sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'never', network: true })]]),
      runnerPath: DEFAULT_RUNNER_PATH,
    });
    teardown.unshift(() => agent.stop());
  }
  console.log(`agent: ${DIST ? 'dist/bin/svc-agent.js (compiled, own process)' : 'in this process, from the sources'}`);
  const pool: DatabasePool = orch.pool;
  const event = {
    provider: 'github', type: 'push', providerEvent: 'push', action: null, eventName: 'push',
    repository: { fullName: REPO, owner: 'acme', name: 'bench', id: '1', cloneUrl: remote.url, defaultBranch: 'main' },
    ref: 'refs/heads/main', branch: 'main', tag: null, sha, beforeSha: null, deleted: false, sender: { login: 'bench', id: null },
    commitMessage: 'bench', changedFiles: null, pullRequest: null, comment: null, installationId: null, customEventName: null,
  } as unknown as NormalizedEvent;

  let deliveries = 0;
  const run = async (workflow: LockWorkflow, commit = sha): Promise<string> => {
    const buildKey = await orch.buildKeyFor(workflow.contentHash, lock.lockfileHash ?? null);
    const created = await pool.transaction(async (tx) => {
      const r = await createRun(tx, {
        orgId: ORG, deliveryKey: `bench-${++deliveries}`, sourceId: null, provider: 'github', repository: REPO, workflowRepository: REPO,
        workflowSourceId: null, workflowCloneUrl: null, workflow, workflowSha: commit, workflowRef: 'refs/heads/main', sha: commit, ref: 'refs/heads/main',
        eventName: 'push', subjectKind: 'ref', actor: 'bench', trustTier: 'trusted', isFork: 'false', headRef: '', headRepository: '',
        lockfileHash: lock.lockfileHash ?? null, event: { ...event, sha: commit } as NormalizedEvent, changedFiles: null, workflowModified: false, buildKey,
      });
      await notifyJobsQueued(tx);
      return r;
    });
    const runId = created.runId;
    const status = await until(`run ${runId}`, async () => {
      const row = (await pool.one(sql.unsafe`SELECT status, reason FROM runs WHERE id = ${runId}`)) as { status: string; reason: string | null };
      return ['completed', 'failed', 'cancelled', 'skipped'].includes(row.status) ? row : undefined;
    }, 120_000);
    if (status.status !== 'completed') throw new Error(`run ${runId} ${status.status}: ${status.reason ?? ''}`);
    return runId;
  };
  const workflow = (name: string) => lock.workflows.find((w) => w.name === name)!;

  // Warm-up: the build job caches source + deps; a second run uses them (and warms the agent).
  // Jobs without a checkout, so the first checkout job below meets an empty repository store.
  const warmStart = performance.now();
  const first = await run(workflow('bare'));
  const builds = (await pool.any(sql.unsafe`SELECT kind, status FROM jobs WHERE run_id = ${first}`)) as readonly { kind: string; status: string }[];
  console.log(`warm-up: first run with ${builds.filter((b) => b.kind === 'build').length} build job(s) in ${fmt(performance.now() - warmStart)}`);
  await run(workflow('bare'));
  const cached = (await pool.one(sql.unsafe`SELECT count(*)::int AS n FROM jobs WHERE kind = 'build'`)) as { n: number };
  if (cached.n !== 1) console.log(`note: ${cached.n} build jobs (expected 1: the caches should be warm after the first)`);

  /** Each job's queued → first step and the agent's phases; `commitFor(i)` picks the job's commit. */
  const measure = async (name: string, note: string, jobs = JOBS, commitFor: (i: number) => Promise<string> = async () => sha) => {
    const latencies: number[] = [];
    const phases = { dispatch: [] as number[], start: [] as number[], step: [] as number[] };
    const agentPhases = new Map<string, number[]>();
    const jobGroups: Array<Record<string, number>> = [];
    const wall = performance.now();
    for (let i = 0; i < jobs; i += 1) {
      const runId = await run(workflow(name), await commitFor(i));
      const row = (await pool.one(sql.unsafe`
        SELECT j.id::text AS id, extract(epoch FROM (s.started_at - j.queued_at)) * 1000 AS ms,
               extract(epoch FROM (j.dispatched_at - j.queued_at)) * 1000 AS dispatch,
               extract(epoch FROM (j.started_at - j.dispatched_at)) * 1000 AS start,
               extract(epoch FROM (s.started_at - j.started_at)) * 1000 AS step
        FROM jobs j JOIN job_steps s ON s.job_id = j.id AND s.index = 0 WHERE j.run_id = ${runId} AND j.kind = 'job'`)) as Record<string, number | string>;
      latencies.push(Number(row['ms']));
      phases.dispatch.push(Number(row['dispatch']));
      phases.start.push(Number(row['start']));
      phases.step.push(Number(row['step']));
      // The agent's line may land just after the step row: wait for it briefly.
      const id = String(row['id']);
      for (let wait = 0; wait < 25 && !agentTimings.has(id); wait += 1) await new Promise((r) => setTimeout(r, 20));
      const timings = agentTimings.get(id);
      for (const [phase, ms] of Object.entries(timings ?? {})) {
        if (!agentPhases.has(phase)) agentPhases.set(phase, []);
        agentPhases.get(phase)!.push(ms);
      }
      if (timings !== undefined) jobGroups.push(breakdown(Number(row['ms']), Number(row['dispatch']), Number(row['start']), timings));
    }
    const wallMs = performance.now() - wall;
    const sorted = [...latencies].sort((a, b) => a - b);
    const p = (xs: number[], q: number) => percentile([...xs].sort((a, b) => a - b), q);
    console.log(`queued → first step running, ${note}  n=${jobs}  p50=${fmt(percentile(sorted, 50))}  p90=${fmt(percentile(sorted, 90))}  p99=${fmt(percentile(sorted, 99))}  max=${fmt(sorted[sorted.length - 1]!)}  (target p50 ≤ 100 ms, p99 ≤ 200 ms)`);
    console.log(`  p50 by phase: queued → dispatched ${fmt(p(phases.dispatch, 50))}, dispatched → job running ${fmt(p(phases.start, 50))}, job running → first step running ${fmt(p(phases.step, 50))}; whole run ${fmt(wallMs / jobs)} (create → completed, incl. polling)`);
    if (agentPhases.size > 0) {
      console.log(`  agent set-up p50 (n=${agentPhases.get('total')?.length ?? 0}): ${[...agentPhases].map(([phase, xs]) => `${phase} ${fmt(p(xs, 50))}`).join(', ')}`);
      console.log(`  agent set-up p99: ${[...agentPhases].map(([phase, xs]) => `${phase} ${fmt(p(xs, 99))}`).join(', ')}`);
    }
    // The same time in the issue's terms, per job (so the groups of one job add up to its total).
    const groups = jobGroups.map((g) => Object.entries(g));
    if (groups.length > 0) {
      const names = groups[0]!.map(([name]) => name);
      const column = (i: number) => groups.map((g) => g[i]![1]);
      console.log(`  breakdown p50 / p99: ${names.map((name, i) => `${name} ${fmt(p(column(i), 50))} / ${fmt(p(column(i), 99))}`).join(', ')}`);
      const median = [...jobGroups].sort((a, b) => a['total']! - b['total']!)[Math.floor(jobGroups.length / 2)]!;
      console.log(`  median job: ${Object.entries(median).map(([name, ms]) => `${name} ${fmt(ms)}`).join(', ')}`);
    }
  };
  await measure('bare', 'checkout: false (source tarball + deps from the cache)');
  // The default path: a checkout (from the agent's repository store) + the cached .svc/ tarball.
  // The first checkout job meets an empty store (creates it and fetches the commit): cold.
  await measure('one', 'default checkout, COLD (empty repository store: first fetch)', 1);
  await measure('one', 'default checkout, warm, same commit (no fetch)');
  // As after pushes: each job's commit is new (one changed file), fetched alone into the warm store.
  let pushes = 0;
  const newCommit = async () => {
    await writeFile(join(remote.work, 'pushed.txt'), `push ${++pushes}\n`);
    await remote.git(['add', 'pushed.txt']);
    await remote.git(['commit', '--quiet', '-m', `push ${pushes}`]);
    await remote.push('HEAD:refs/heads/main');
    return (await remote.git(['rev-parse', 'HEAD'])).trim();
  };
  await measure('one', 'default checkout, warm, a new commit per job (fetch of that commit only)', JOBS, newCommit);

  const spans: number[] = [];
  for (let i = 0; i < 3; i += 1) {
    const runId = await run(workflow('many'));
    const row = (await pool.one(sql.unsafe`
      SELECT extract(epoch FROM (max(s.finished_at) - min(s.started_at))) * 1000 AS ms, count(*)::int AS n
      FROM jobs j JOIN job_steps s ON s.job_id = j.id WHERE j.run_id = ${runId} AND j.kind = 'job'`)) as { ms: number | string; n: number };
    if (row.n !== STEPS) throw new Error(`expected ${STEPS} steps, got ${row.n}`);
    spans.push(Number(row.ms) / STEPS);
  }
  const medianStep = [...spans].sort((a, b) => a - b)[1]!;
  console.log(`per-step overhead (${STEPS} trivial steps, median of 3 jobs): ${medianStep.toFixed(2)} ms/step  (target ≤ 10 ms)`);
  const mem = process.memoryUsage();
  if (DIST) console.log(`RSS: orchestrator ${rssMiB(orch.pid).toFixed(0)} MiB, agent ${rssMiB(agentPid).toFixed(0)} MiB, bench process ${mib(mem.rss)}`);
  else console.log(`RSS of the bench process (orchestrator + agent in one process): ${mib(mem.rss)}  heap used ${mib(mem.heapUsed)}`);
} finally {
  await busyLoad?.stop();
  endMachine();
  for (const fn of teardown) await Promise.resolve(fn()).catch(() => undefined);
  keepOrRemove(dataDir, KEEP_DATA);
}
