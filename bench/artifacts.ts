// Run-artifact throughput through pre-signed URLs, per storage backend: filesystem (the
// orchestrator serves the pre-signed URLs) and s3 (the s3 plugin against s3rver on 127.0.0.1,
// test/fixtures/s3-server.ts). A real orchestrator (dispatch + artifacts subsystems, real
// PostgreSQL) and a test agent on a real socket; each round calls the agent's own functions:
//   upload   = pack the directory (tar.gz) + sha256 + pre-signed PUT + commit
//   download = pre-signed GET + sha256 check + extract
// MB/s counts the artifact's file bytes (random, so gzip gains nothing). Prints medians, the
// slowest rounds (p99 of few rounds) and peak RSS; figures only, nothing is asserted.
// Run: node bench/artifacts.ts [MiB per artifact, default 32] [rounds, default 7]
// Database: SVC_TEST_DATABASE_URL (default local PostgreSQL), else embedded.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { downloadArtifact, uploadArtifact } from '../agent/jobs/artifacts.ts';
import type { OrchestratorRequest } from '../agent/jobs/runner-api.ts';
import { adminAuthSubsystem } from '../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator } from '../kernel/orchestrator/app.ts';
import { createArtifactsSubsystem } from '../kernel/orchestrator/artifacts/subsystem.ts';
import { createDispatchSubsystem } from '../kernel/orchestrator/dispatch/index.ts';
import { createDatabase } from '../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../plugins/builtin.ts';
import type { OrchestratorToAgent } from '../schemas/wire/agent.ts';
import { embeddedServer, freshDatabase, systemAvailability, systemTestUrl, testLogger } from '../test/fixtures/db.ts';
import { insertRun } from '../test/fixtures/runs.ts';
import { startS3Server } from '../test/fixtures/s3-server.ts';
import { TestAgent } from '../test/fixtures/test-agent.ts';

const MiB = 1024 * 1024;
const sizeMiB = Number(process.argv[2] ?? 32);
const rounds = Number(process.argv[3] ?? 7);

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)] as number;
/** The slow tail of throughput: the 1st percentile of MB/s (with few rounds, the slowest). */
const p99slow = (xs: number[]) => sorted(xs)[Math.floor(xs.length * 0.01)] as number;
let peakRss = 0;
const sampleRss = () => (peakRss = Math.max(peakRss, process.memoryUsage.rss()));

const RESPONSE_OF: Record<string, OrchestratorToAgent['type']> = {
  'artifact.upload.request': 'artifact.upload.response',
  'artifact.commit.request': 'artifact.commit.response',
  'artifact.download.request': 'artifact.download.response',
};

function requester(agent: TestAgent): OrchestratorRequest {
  return async (message) => {
    agent.sendRaw(message);
    return agent.waitFor(RESPONSE_OF[message.type]!, (m) => (m as { requestId?: string }).requestId === message.requestId);
  };
}

async function measure(what: string, fn: (round: number) => Promise<void>): Promise<void> {
  await fn(-1); // warm-up
  const rates: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    await fn(round);
    rates.push(sizeMiB / ((performance.now() - started) / 1000));
    sampleRss();
  }
  console.log(`  ${what.padEnd(40)} median ${median(rates).toFixed(1).padStart(7)} MB/s   p99 (slowest) ${p99slow(rates).toFixed(1).padStart(7)} MB/s`);
}

async function bench(name: string, serverUrl: string, env: Record<string, string>): Promise<void> {
  const database = await freshDatabase(serverUrl);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-artifacts-'));
  const pool = await createDatabase({ url: database.url, logger: testLogger, maxPoolSize: 2 });
  const orch = await startOrchestrator({
    env: { SVC_DATABASE_URL: database.url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: 'b'.repeat(64), SVC_AGENT_AUTH: 'none', ...env },
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    subsystems: [adminAuthSubsystem, createDispatchSubsystem({ tickMs: 150 }), createArtifactsSubsystem({ sweepMs: 0 })],
  });
  const agent = await TestAgent.online({ url: orch.url, agentId: 'bench-artifacts', labels: ['bench'] });
  try {
    const run = await insertRun(pool, { jobs: [{ name: 'job', runsOn: ['bench'] }] });
    const jobId = run.jobs['job']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === jobId);
    const workspace = join(dataDir, 'ws');
    const scratch = join(dataDir, 'scratch');
    await mkdir(join(workspace, 'data'), { recursive: true });
    await mkdir(scratch, { recursive: true });
    // Four files, as a build output would be several files.
    for (let i = 0; i < 4; i++) await writeFile(join(workspace, 'data', `part-${i}.bin`), randomBytes((sizeMiB * MiB) / 4));
    const ctx = { jobId, workspace, scratch, request: requester(agent), signal: new AbortController().signal };
    console.log(`${name}: ${sizeMiB} MiB artifacts (4 files), ${rounds} rounds`);
    await measure('upload (pack + sha256 + PUT + commit)', async (r) => {
      await uploadArtifact(ctx, `bench-${r + 1}`, ['data']);
    });
    await measure('download (GET + sha256 check + extract)', async (r) => {
      const dest = `out-${r + 1}`;
      await downloadArtifact(ctx, `bench-${Math.max(r, 0) + 1}`, dest);
      await rm(join(workspace, dest), { recursive: true, force: true });
    });
  } finally {
    await agent.close();
    await orch.stop();
    await pool.end();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

const system = await systemAvailability();
const serverUrl = system.ok ? systemTestUrl() : (await embeddedServer()).url;
const s3 = await startS3Server({ bucket: 'bench-artifacts' });
try {
  await bench('filesystem', serverUrl, { SVC_STORAGE_TYPE: 'filesystem' });
  await bench('s3 (s3rver on 127.0.0.1)', serverUrl, s3.env());
  console.log(`peak RSS ${(peakRss / MiB).toFixed(0)} MB (this process: orchestrator, agent functions and s3rver together)`);
} finally {
  await s3.stop();
}
