// Dispatch latency: from a job becoming queued (insert + NOTIFY, measured from before the
// inserting transaction) to `job.dispatch` arriving at a connected test agent over a real
// WebSocket. Agents complete each job at once. Two phases: one job at a time (idle latency)
// and a burst (all inserted concurrently). Figures only, no assertions.
// Run: node bench/dispatch.ts [jobs=300] [agents=4]
// Database: SVC_TEST_DATABASE_URL (default local PostgreSQL), else embedded.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOrchestrator } from '../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../kernel/orchestrator/dispatch/index.ts';
import { embeddedServer, freshDatabase, systemAvailability, systemTestUrl, testLogger } from '../test/fixtures/db.ts';
import { insertRun } from '../test/fixtures/runs.ts';
import { TestAgent } from '../test/fixtures/test-agent.ts';
import { createDatabase } from '../kernel/services/db/index.ts';

const jobs = Number(process.argv[2] ?? 300);
const agentCount = Number(process.argv[3] ?? 4);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function report(name: string, samples: number[]): void {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  console.log(
    `${name.padEnd(10)} n=${samples.length}  p50=${percentile(sorted, 50).toFixed(1)} ms  p90=${percentile(sorted, 90).toFixed(1)} ms  p99=${percentile(sorted, 99).toFixed(1)} ms  max=${sorted[sorted.length - 1]!.toFixed(1)} ms  mean=${mean.toFixed(1)} ms`,
  );
}

const system = await systemAvailability();
const serverUrl = system.ok ? systemTestUrl() : (await embeddedServer()).url;
const database = await freshDatabase(serverUrl);
const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-dispatch-'));
const pool = await createDatabase({ url: database.url, logger: testLogger, maxPoolSize: 8 });
const orch = await startOrchestrator({
  env: { SVC_DATABASE_URL: database.url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: 'b'.repeat(64), SVC_AGENT_AUTH: 'none' },
  cwd: dataDir,
  logger: testLogger,
  plugins: () => ({ builtIns: [], config: {}, selection: {} }),
  // The default 2 s tick: latency below it comes from NOTIFY, not polling.
  subsystems: [createDispatchSubsystem()],
});
const agents: TestAgent[] = [];
const arrived = new Map<string, number>();
const waiting = new Map<string, (at: number) => void>();
try {
  for (let i = 0; i < agentCount; i += 1) {
    const agent = await TestAgent.online({ url: orch.url, agentId: `bench-${i}`, labels: ['bench'] });
    agents.push(agent);
    agent.onMessage((m) => {
      if (m.type !== 'job.dispatch') return;
      const at = performance.now();
      arrived.set(m.jobId, at);
      waiting.get(m.jobId)?.(at);
      agent.jobStatus(m.jobId, 'completed');
    });
  }
  const waitDispatched = (jobId: string): Promise<number> => {
    const at = arrived.get(jobId);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`job ${jobId} not dispatched within 30 s`)), 30_000);
      waiting.set(jobId, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
  };

  const sequential: number[] = [];
  for (let i = 0; i < jobs; i += 1) {
    const start = performance.now();
    const run = await insertRun(pool, { jobs: [{ name: 'job', runsOn: ['bench'] }] });
    sequential.push((await waitDispatched(run.all[0]!.id)) - start);
  }
  report('sequential', sequential);

  const started = new Map<string, number>();
  await Promise.all(
    Array.from({ length: 4 }, async (_, worker) => {
      for (let i = worker; i < jobs; i += 4) {
        const start = performance.now();
        const run = await insertRun(pool, { jobs: [{ name: 'job', runsOn: ['bench'] }] });
        started.set(run.all[0]!.id, start);
      }
    }),
  );
  const burst: number[] = [];
  for (const [jobId, start] of started) burst.push((await waitDispatched(jobId)) - start);
  report('burst', burst);
} finally {
  for (const agent of agents) await agent.close();
  await orch.stop();
  await pool.end();
  await database.drop();
  await rm(dataDir, { recursive: true, force: true });
}
