// `svc run remote` → first step: with a warm agent (connected, idle, its source and dependency
// caches warm from a first pushed run), the time from starting `svc run remote <fixture>
// --no-wait` (the CLI process: compile in memory, pack, seal, upload through a pre-signed URL,
// create the run through the relay) to the run's first step reporting `running` (its
// `job_steps.started_at`), for an overlay of 1 MB and of 50 MB (one incompressible file).
// REAL processes: svc-relay, svc-orchestrator, svc-agent (process sandbox), the svc CLI, a git
// repository with a post-receive hook; loopback only. Figures, no assertions.
// Target: p50 ≤ 2 s for 1 MB.
// Run: npm run build && node bench/run-remote.ts --dist [iterations=5]
//   --dist: the programs (svc, svc-relay, svc-orchestrator, svc-agent) are the compiled ones, as
//   shipped (what a developer's `svc` is); otherwise they run from the sources (slower to start).
// Database: a fresh database on SVC_TEST_DATABASE_URL (default local PostgreSQL), else an
// embedded PostgreSQL.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from '../kernel/services/db/index.ts';
import { embeddedServer, freshDatabase, systemAvailability, systemTestUrl, testLogger, type Test, type TestDb } from '../test/fixtures/db.ts';
import { gitEnv } from '../test/fixtures/git-repos.ts';
import { ORG, startJobsStack } from '../test/fixtures/jobs-stack.ts';
import { REPO_ROOT, runProgram } from '../test/fixtures/programs.ts';
import { until } from '../test/fixtures/runs.ts';
import { createDatabase } from '../kernel/services/db/index.ts';

if (process.argv.includes('--dist')) process.env['SVC_TEST_DIST'] = '1';
const ITERATIONS = Math.max(1, Math.min(50, Number(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? 5)));
const SIZES_MB = [1, 50];

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
export default workflow('ci', { on: push({ branches: ['main'] }), jobs: { one: job({ runsOn: 'e2e', steps: (s) => s.step('first', () => { console.log('first step'); }) }) } });
`;
const FIXTURE = `import { fixture, push } from 'svc/sdk';
export default fixture('bench', { event: push(), branch: 'main', repo: 'acme/app' });
`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const teardowns: Array<() => unknown> = [];
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) } as unknown as Test;

const system = await systemAvailability();
const serverUrl = system.ok ? systemTestUrl() : (await embeddedServer()).url;
const main = await freshDatabase(serverUrl);
const extras: Array<{ drop(): Promise<void> }> = [];
const pool = await createDatabase({ url: main.url, logger: testLogger, maxPoolSize: 2 });
const db = {
  kind: system.ok ? 'system' : 'embedded',
  url: main.url,
  name: main.name,
  serverUrl,
  pool,
  logger: testLogger,
  async extraDatabase() {
    const extra = await freshDatabase(serverUrl);
    extras.push(extra);
    return extra.url;
  },
} as unknown as TestDb;

try {
  const stack = await startJobsStack(t, db);
  await stack.startAgent({ SVC_AGENT_ID: 'bench-remote' });
  const sha = await stack.pushWorkflow({ '.svc/workflows/ci.ts': WORKFLOW, '.svc/tests/bench.ts': FIXTURE, 'README.md': 'bench\n' }, 'bench');
  const first = await stack.waitForRun(sha, 300_000);
  if (first.status !== 'completed') throw new Error(`the warm-up run ended ${first.status}: ${first.reason}`);
  const pat = await stack.relayAdmin(['relay', 'pat', 'create', ORG, '--user', 'bench', '--json']);
  const login = await stack.svc(['login', '--token', (JSON.parse(pat.stdout) as { token: string }).token, '--platform-url', stack.relayUrl]);
  if (login.code !== 0) throw new Error(login.stderr);
  const env: NodeJS.ProcessEnv = { ...gitEnv(), XDG_CONFIG_HOME: join(stack.root, 'svc-config') };
  for (const k of Object.keys(env)) if (k.startsWith('SVC_')) delete env[k];
  console.log(`svc run remote → first step running, warm agent, ${ITERATIONS} iteration(s) per size (database: ${system.ok ? 'system' : 'embedded'}; programs: ${process.env['SVC_TEST_DIST'] === '1' ? 'dist' : 'sources'})`);
  for (const mb of SIZES_MB) {
    await writeFile(join(stack.remote.work, 'blob.bin'), randomBytes(mb * 1_000_000));
    const times: number[] = [];
    const cli: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const started = Date.now();
      const r = await runProgram(join(REPO_ROOT, 'bin/svc.ts'), ['run', 'remote', 'bench', '--no-wait', '--debug'], { env, cwd: stack.remote.work, timeoutMs: 300_000 });
      const cliDone = Date.now();
      if (r.code !== 0) throw new Error(`svc run remote: ${r.stderr}`);
      const runId = r.stdout.trim();
      const at = await until('the first step to run', async () => {
        const row = (await stack.pool.maybeOne(sql.unsafe`
          select (extract(epoch from min(s.started_at)) * 1000)::float8 as at from job_steps s join jobs j on j.id = s.job_id
          where j.run_id = ${runId} and s.started_at is not null having count(*) > 0`)) as { at: number } | null;
        return row?.at ?? undefined;
      }, 300_000, 20);
      await until('the run to end', async () => {
        const row = (await stack.pool.one(sql.unsafe`select status from runs where id = ${runId}`)) as { status: string };
        return ['completed', 'failed', 'cancelled'].includes(row.status) ? true : undefined;
      }, 300_000, 50);
      times.push(at - started);
      cli.push(cliDone - started);
      if (i === 0) console.log(`    ${mb} MB, first iteration, CLI ${(/timings: (.*)/.exec(r.stderr)?.[1] ?? '(no timings)')}`);
    }
    console.log(
      `  ${String(mb).padStart(3)} MB overlay: start → first step p50 ${percentile(times, 50).toFixed(0).padStart(6)} ms  p99 ${percentile(times, 99).toFixed(0).padStart(6)} ms` +
        `   (CLI process until it printed the run id: p50 ${percentile(cli, 50).toFixed(0)} ms)`,
    );
  }
} finally {
  for (const fn of teardowns.reverse()) await Promise.resolve(fn()).catch(() => undefined);
  await pool.end();
  for (const e of extras) await e.drop().catch(() => undefined);
  await main.drop().catch(() => undefined);
}
