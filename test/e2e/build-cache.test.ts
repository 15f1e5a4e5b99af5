// Build jobs end to end: the REAL orchestrator (startOrchestrator with the dispatch and caches
// subsystems, filesystem storage, real PostgreSQL), a REAL agent (startAgent with the real step
// runner in the process sandbox) and a REAL git repository. Runs are created by the ingest's own
// run creation (createRun + CacheChecker), as a matched webhook would:
//   1. source not cached → build job → tarballs + pointers in storage → the run's jobs run from
//      the tarball (no checkout) with restored dependencies (no inline install);
//   2. the same contentHash again → cache hit, no build job;
//   3. npm ci fails → build failed → the run's jobs skipped, the run failed.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { pino } from 'pino';
import t from 'tap';
import * as tar from 'tar';
import { DEFAULT_RUNNER_PATH, startAgent, type RunningAgent } from '../../agent/agent.ts';
import { parseAgentEnv } from '../../agent/env.ts';
import { compileWorkflows } from '../../cli/compiler/compile.ts';
import { startOrchestrator } from '../../kernel/orchestrator/app.ts';
import { createCachesSubsystem } from '../../kernel/orchestrator/caches/index.ts';
import { notifyJobsQueued } from '../../kernel/orchestrator/dispatch/notify.ts';
import { createDispatchSubsystem } from '../../kernel/orchestrator/dispatch/index.ts';
import { CacheChecker } from '../../kernel/orchestrator/ingest/steps/caches.ts';
import { createRun, type CreatedRun } from '../../kernel/orchestrator/runs/create.ts';
import type { StorageExtensionPoint } from '../../core/extension-points/storage.ts';
import { sql, type DatabasePool } from '../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../plugins/builtin.ts';
import { createProcessSandbox } from '../../plugins/sandboxes/process/index.ts';
import type { NormalizedEvent } from '../../schemas/event.ts';
import type { Lock } from '../../schemas/lock.ts';
import { eachDatabase, testLogger, type Test } from '../fixtures/db.ts';
import { createGitRemote, type GitRemote } from '../fixtures/git-repos.ts';
import { until } from '../fixtures/runs.ts';
import { sampleOf, scrape } from '../fixtures/prom-text.ts';

t.setTimeout(1_200_000);
const ORG = 'org-1';
const REPO = 'acme/widgets';

const WORKFLOW = `import { job, push, step, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: push(),
  jobs: {
    test: job({
      runsOn: 'linux',
      steps: [
        step('greet', async (ctx) => {
          const { default: greet } = await import('greet');
          ctx.log.info('dependency says: ' + greet('agent'));
          return { said: greet('agent') };
        }),
      ],
      outputs: (ctx) => ctx.outputsOf('greet'),
    }),
  },
});
`;

/** `.svc/` with a dependency packed from a local folder (npm ci needs no network). */
async function svcTree(scratch: string): Promise<Record<string, string | Buffer>> {
  const pkg = join(scratch, 'greet');
  await mkdir(join(pkg, 'package'), { recursive: true });
  await writeFile(join(pkg, 'package', 'package.json'), JSON.stringify({ name: 'greet', version: '1.0.0', main: 'index.js' }));
  await writeFile(join(pkg, 'package', 'index.js'), "module.exports = (n) => 'hello ' + n;\n");
  const tgz = join(pkg, 'greet-1.0.0.tgz');
  await tar.c({ gzip: true, file: tgz, cwd: pkg, portable: true, mtime: new Date('2000-01-01T00:00:00Z') }, ['package']);
  const svc = join(scratch, 'svc');
  await mkdir(join(svc, 'vendor'), { recursive: true });
  await writeFile(join(svc, 'vendor', 'greet-1.0.0.tgz'), await readFile(tgz));
  await writeFile(join(svc, 'package.json'), JSON.stringify({ name: 'wf', private: true, dependencies: { greet: 'file:vendor/greet-1.0.0.tgz' } }));
  await execa('npm', ['install', '--package-lock-only', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], { cwd: svc, env: { ...process.env, PATH: `${join(process.execPath, '..')}:${process.env['PATH'] ?? ''}` } });
  return {
    '.svc/workflows/ci.ts': WORKFLOW,
    '.svc/.svcignore': 'node_modules/\ntypes/\n.npmrc\npackage-lock.json\n',
    '.svc/package.json': await readFile(join(svc, 'package.json'), 'utf8'),
    '.svc/package-lock.json': await readFile(join(svc, 'package-lock.json'), 'utf8'),
    '.svc/vendor/greet-1.0.0.tgz': await readFile(join(svc, 'vendor', 'greet-1.0.0.tgz')),
  };
}

async function commitTree(remote: GitRemote, files: Record<string, string | Buffer | null>, message: string): Promise<{ sha: string; lock: Lock }> {
  for (const [path, content] of Object.entries(files)) {
    const full = join(remote.work, path);
    if (content === null) await rm(full, { force: true });
    else {
      await mkdir(join(full, '..'), { recursive: true });
      await writeFile(full, content);
    }
  }
  const compiled = await compileWorkflows({ repoRoot: remote.work, mode: 'write' });
  await remote.git(['add', '--all']);
  await remote.git(['commit', '--quiet', '-m', message]);
  await remote.push('HEAD:refs/heads/main');
  return { sha: (await remote.git(['rev-parse', 'HEAD'])).trim(), lock: compiled.lock };
}

function eventOf(remote: GitRemote, sha: string): NormalizedEvent {
  return {
    provider: 'github',
    type: 'push',
    providerEvent: 'push',
    action: null,
    eventName: 'push',
    repository: { fullName: REPO, owner: 'acme', name: 'widgets', id: '1', cloneUrl: remote.url, defaultBranch: 'main' },
    ref: 'refs/heads/main',
    branch: 'main',
    tag: null,
    sha,
    beforeSha: null,
    deleted: false,
    sender: { login: 'alice', id: null },
    commitMessage: 'change',
    changedFiles: null,
    pullRequest: null,
    comment: null,
    installationId: null,
    customEventName: null,
  };
}

/** What ingest does for a matched workflow: check the caches, create the run (and its build job). */
async function ingest(pool: DatabasePool, checker: CacheChecker, remote: GitRemote, sha: string, lock: Lock, delivery: string): Promise<CreatedRun> {
  const workflow = lock.workflows[0]!;
  const lockfileHash = lock.lockfileHash ?? null;
  const check = await checker.check(ORG, workflow.contentHash, lockfileHash);
  return pool.transaction(async (tx) => {
    const run = await createRun(tx, {
      orgId: ORG, deliveryKey: delivery, sourceId: null, provider: 'github', repository: REPO, workflowRepository: REPO,
      workflowSourceId: null, workflowCloneUrl: null, workflow, workflowSha: sha, workflowRef: 'refs/heads/main', sha, ref: 'refs/heads/main',
      eventName: 'push', subjectKind: 'ref', actor: 'alice', trustTier: 'trusted', isFork: 'false', headRef: '', headRepository: '',
      lockfileHash, event: eventOf(remote, sha), changedFiles: null, workflowModified: false, buildKey: check.buildKey,
    });
    await notifyJobsQueued(tx);
    return run;
  });
}

interface JobView {
  id: string;
  name: string;
  kind: string;
  status: string;
  reason: string | null;
  outputs: unknown;
}

async function jobsOf(pool: DatabasePool, runId: string): Promise<JobView[]> {
  return (await pool.any(sql.unsafe`SELECT id::text AS id, name, kind, status, reason, outputs FROM jobs WHERE run_id = ${runId} ORDER BY created_at, id`)) as unknown as JobView[];
}

async function logText(pool: DatabasePool, jobId: string): Promise<string> {
  const rows = (await pool.any(sql.unsafe`SELECT lines FROM job_logs WHERE job_id = ${jobId} ORDER BY seq`)) as unknown as Array<{ lines: Array<{ step: string; text: string }> }>;
  return rows.flatMap((r) => r.lines.map((l) => `${l.step}|${l.text}`)).join('\n');
}

async function runFinished(pool: DatabasePool, runId: string): Promise<{ status: string; reason: string | null }> {
  return until('run to finish', async () => {
    const row = (await pool.one(sql.unsafe`SELECT status, reason FROM runs WHERE id = ${runId}`)) as { status: string; reason: string | null };
    return ['completed', 'failed', 'cancelled'].includes(row.status) ? row : undefined;
  }, 120_000, 100);
}

async function objectText(storage: StorageExtensionPoint, key: string): Promise<string | null> {
  if ((await storage.head(key)) === null) return null;
  const chunks: Buffer[] = [];
  for await (const chunk of await storage.get(key)) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks).toString('utf8');
}

async function startStack(t: Test, dbUrl: string): Promise<{ pool: DatabasePool; storage: StorageExtensionPoint; checker: CacheChecker; agent: RunningAgent; url: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-build-e2e-'));
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: 'a'.repeat(64), SVC_AGENT_AUTH: 'none', SVC_STORAGE_TYPE: 'filesystem',
    },
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    subsystems: [createDispatchSubsystem({ tickMs: 150, heartbeatMs: 1_000, registerTimeoutMs: 3_000 }), createCachesSubsystem({ sweepMs: 0 })],
  });
  const agent = await startAgent({
    settings: parseAgentEnv({ SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_WORK_DIR: join(dataDir, 'agent'), SVC_AGENT_LABELS: 'linux', SVC_AGENT_MAX_RECONNECT_DELAY_MS: '1000' }),
    agentId: 'build-agent-1',
    logger: pino({ level: process.env['SVC_TEST_LOG'] ?? 'silent' }),
    sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'never', network: true })]]),
    runnerPath: DEFAULT_RUNNER_PATH,
  });
  t.teardown(async () => {
    await agent.stop();
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const storage = orch.ctx.host.select('storage', 'filesystem');
  return { pool: orch.ctx.db, storage, checker: new CacheChecker(storage, orch.ctx.metrics), agent, url: orch.url };
}

t.test('build job → caches → jobs run from the tarball; cache hit; failed build', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const scratch = await mkdtemp(join(tmpdir(), 'svc-build-tree-'));
    t.teardown(() => rm(scratch, { recursive: true, force: true }));
    const remote = await createGitRemote(t);
    const { pool, storage, checker, url } = await startStack(t, db.url);

    // 1. Nothing cached: the run gets a build job; its jobs wait for it.
    const first = await commitTree(remote, await svcTree(scratch), 'workflows');
    const workflow = first.lock.workflows[0]!;
    t.ok(first.lock.lockfileHash?.startsWith('npm:'), 'the lock has an npm lockfileHash');
    const run1 = await ingest(pool, checker, remote, first.sha, first.lock, 'd-1');
    t.ok(run1.ownsBuild, 'a source-cache miss creates the build job');
    t.same((await runFinished(pool, run1.runId)).status, 'completed');
    const jobs1 = await jobsOf(pool, run1.runId);
    const build = jobs1.find((j) => j.kind === 'build')!;
    const test1 = jobs1.find((j) => j.name === 'test')!;
    t.equal(build.status, 'completed', build.reason ?? '');
    const buildOut = build.outputs as { sourceTarDigest: string; depsHash: string };
    t.match(buildOut, { sourceTarDigest: /^[0-9a-f]{64}$/, depsHash: /^[0-9a-f]{64}$/ });

    // Objects and pointers, in the spec's layout.
    t.equal(await objectText(storage, `source/v2/${ORG}/${workflow.contentHash}.hash`), buildOut.sourceTarDigest, 'source pointer → digest');
    t.ok(await storage.head(`source/v2/${ORG}/${buildOut.sourceTarDigest}.tar.gz`), 'source tarball stored');
    const platformArch = `${process.platform}-${process.arch}`;
    t.equal(await objectText(storage, `deps/${platformArch}/${first.lock.lockfileHash}.hash`), buildOut.depsHash, 'deps pointer → depsHash');
    t.ok(await storage.head(`deps/${platformArch}/${buildOut.depsHash}.tar.gz`), 'deps tarball stored');

    // The build's steps and durations are in the job's record and log.
    const steps = (await pool.any(sql.unsafe`SELECT name, status, started_at, finished_at FROM job_steps WHERE job_id = ${build.id} ORDER BY index`)) as unknown as Array<{ name: string; status: string; started_at: number | null; finished_at: number | null }>;
    t.same(steps.map((s) => [s.name, s.status]), [['bundle source', 'completed'], ['install dependencies', 'completed'], ['upload', 'completed']]);
    t.ok(steps.every((s) => s.started_at !== null && s.finished_at !== null), 'every build step has timing');
    const buildLog = await logText(pool, build.id);
    t.match(buildLog, /\(setup\)\|checking out [0-9a-f]{40}/);
    t.match(buildLog, /bundle source\|bundle source took \d+(?:\.\d)?m?s/);
    t.match(buildLog, /install dependencies\|npm ci --ignore-scripts/);
    t.match(buildLog, /upload\|source tarball uploaded/);

    // The run's job ran from the tarball with the cached dependencies.
    t.equal(test1.status, 'completed', test1.reason ?? '');
    t.match(test1.outputs, { said: 'hello agent' });
    const testLog = await logText(pool, test1.id);
    t.match(testLog, /restoring source from http/);
    t.match(testLog, /workflow content hash verified/);
    t.match(testLog, /dependencies restored from cache/);
    t.match(testLog, /dependency says: hello agent/);
    // The project comes from a checkout at the run's sha; the workflow tree from the cache.
    t.match(testLog, /checking out [0-9a-f]{40}[\s\S]*restoring source from/, 'checkout, then the cached .svc/ restored over it');
    t.notMatch(testLog, /installing dependencies inline/, 'no inline install');

    // 2. Same contentHash (a commit outside .svc/): cache hit, no build job.
    const second = await commitTree(remote, { 'README.md': '# widgets\n' }, 'readme');
    t.equal(second.lock.workflows[0]!.contentHash, workflow.contentHash);
    const run2 = await ingest(pool, checker, remote, second.sha, second.lock, 'd-2');
    t.notOk(run2.ownsBuild);
    t.equal((await runFinished(pool, run2.runId)).status, 'completed');
    const jobs2 = await jobsOf(pool, run2.runId);
    t.same(jobs2.map((j) => [j.kind, j.status]), [['job', 'completed']], 'no build job on a cache hit');
    t.match(await logText(pool, jobs2[0]!.id), /restoring source from http/);

    // 3. A dependency that cannot be installed (its tarball is not one): npm ci fails → build failed → jobs skipped.
    const lockText = JSON.stringify({
      name: 'wf', lockfileVersion: 3, requires: true,
      packages: { '': { name: 'wf', dependencies: { gone: 'file:vendor/gone-1.0.0.tgz' } }, 'node_modules/gone': { version: '1.0.0', resolved: 'file:vendor/gone-1.0.0.tgz' } },
    });
    const third = await commitTree(remote, {
      '.svc/package.json': JSON.stringify({ name: 'wf', private: true, dependencies: { gone: 'file:vendor/gone-1.0.0.tgz' } }),
      '.svc/package-lock.json': lockText,
      '.svc/vendor/gone-1.0.0.tgz': 'this is not a tarball\n',
    }, 'broken dependency');
    const run3 = await ingest(pool, checker, remote, third.sha, third.lock, 'd-3');
    t.ok(run3.ownsBuild);
    const outcome3 = await runFinished(pool, run3.runId);
    t.equal(outcome3.status, 'failed');
    const jobs3 = await jobsOf(pool, run3.runId);
    const build3 = jobs3.find((j) => j.kind === 'build')!;
    t.equal(build3.status, 'failed');
    t.match(build3.reason, /^build failed: npm ci failed with exit code \d+: /);
    t.match(jobs3.find((j) => j.name === 'test'), { status: 'skipped', reason: 'needs svc:build which failed' });
    t.equal(await objectText(storage, `source/v2/${ORG}/${third.lock.workflows[0]!.contentHash}.hash`), null, 'a failed build writes no pointer');

    // The orchestrator's /metrics after the flow: misses for runs 1 and 3, a hit for run 2, for
    // both caches; one build duration (the failed build committed nothing).
    const text = await scrape(url);
    const value = (name: string) => sampleOf(text, name) ?? 0;
    t.equal(value('svc_orch_source_cache_misses_total'), 2, 'source misses: runs 1 and 3');
    t.equal(value('svc_orch_source_cache_hits_total'), 1, 'source hit: run 2');
    t.equal(value('svc_orch_dep_cache_misses_total'), 2, 'dependency misses: runs 1 and 3');
    t.equal(value('svc_orch_dep_cache_hits_total'), 1, 'dependency hit: run 2');
    t.equal(value('svc_orch_build_duration_seconds_count'), 1, 'one build committed its source cache');
    t.ok(value('svc_http_requests_total') >= 1, 'HTTP requests counted');
    t.ok((sampleOf(text, 'svc_ws_connects_total', { endpoint: 'agent' }) ?? 0) >= 1, 'the agent socket counted');
  });
});
