// Internal event delivery: throughput and emit → downstream-run latency, on one orchestrator node
// and on a cluster of three (in-process `startOrchestrator` with every kernel subsystem, one
// PostgreSQL). A registration of `event('bench')` makes every event one run (with its jobs), as a
// step's `ctx.emit` would.
//
// - throughput: N events inserted in one burst (their NOTIFYs with them); events/s = N divided by
//   the time from the first insert to the last `processed_at` (database clock).
// - latency: events emitted one at a time, spaced; each sample is the downstream run's
//   `created_at` (its delivery transaction) minus the event's `created_at` (its insert): the
//   time from emit to the run and its queued jobs being committed. p50 / p99.
// Prints the load average at start and end. Figures only, no assertions.
// Run: node bench/events.ts [events=3000] [samples=200]
// Database: SVC_TEST_DATABASE_URL (default local PostgreSQL), else embedded.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOrchestrator, type Orchestrator } from '../kernel/orchestrator/app.ts';
import { emitInternalEvent } from '../kernel/orchestrator/events/emit.ts';
import { replaceRegistrations } from '../kernel/orchestrator/ingest/steps/registrations.ts';
import { createSource } from '../kernel/orchestrator/sources/store.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../kernel/orchestrator/subsystems.ts';
import { createDatabase, sql, type DatabasePool } from '../kernel/services/db/index.ts';
import { embeddedServer, freshDatabase, systemAvailability, systemTestUrl, testLogger } from '../test/fixtures/db.ts';
import { job, lockOf, trig, workflow } from '../test/fixtures/locks.ts';

const total = Number(process.argv[2] ?? 3000);
const samples = Number(process.argv[3] ?? 200);
const ORG = 'bench';

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function startNodes(url: string, count: number, dataDir: string): Promise<Orchestrator[]> {
  const nodes: Orchestrator[] = [];
  for (let i = 0; i < count; i += 1) {
    nodes.push(
      await startOrchestrator({
        env: {
          SVC_DATABASE_URL: url,
          SVC_SERVER_PORT: '0',
          SVC_SERVER_HOST: '127.0.0.1',
          SVC_DATA_DIR: dataDir,
          SVC_SECRET_KEY: 'b'.repeat(64),
          SVC_AGENT_AUTH: 'none',
          SVC_INSTANCE_ID: `bench-node-${i + 1}`,
          SVC_CLUSTER_JOIN_TOKEN: 'bench-join-token-0123456789',
          SVC_SERVER_LOG_LEVEL: 'warn',
          // The breaker must not refuse the burst.
          SVC_EVENTS_RATE_LIMIT_PER_ORG_PER_MINUTE: String(total * 4),
        },
        cwd: dataDir,
        logger: testLogger,
        plugins: () => ({ builtIns: [], config: {}, selection: {} }),
        subsystems: ORCHESTRATOR_SUBSYSTEMS,
      }),
    );
  }
  return nodes;
}

async function register(pool: DatabasePool): Promise<void> {
  const { source } = await createSource(pool, randomBytes(32), { orgId: ORG, providerKind: 'forge', targetId: '1' });
  const lock = lockOf([workflow('downstream', [trig.event({ name: 'bench' })], [job('a')])]);
  await pool.transaction((tx) =>
    replaceRegistrations(tx, { orgId: ORG, sourceId: source.id, repository: 'bench/repo', repositoryId: '1', cloneUrl: null, branch: 'main', sha: 'a'.repeat(40), lock }),
  );
}

async function emit(pool: DatabasePool, n: number): Promise<void> {
  await pool.transaction(async (tx) => {
    for (let i = 0; i < n; i += 1) await emitInternalEvent(tx, { name: 'bench', payload: { i }, orgId: ORG });
  });
}

async function waitProcessed(pool: DatabasePool, expected: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = (await pool.one(sql.unsafe`SELECT count(*)::int AS n FROM internal_events WHERE name = 'bench' AND processed_at IS NOT NULL`)) as { n: number };
    if (row.n >= expected) return;
    if (Date.now() > deadline) throw new Error(`only ${row.n} of ${expected} events processed within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function throughput(pool: DatabasePool, n: number): Promise<number> {
  await pool.query(sql.unsafe`DELETE FROM internal_events WHERE name = 'bench'`);
  // Insert in chunks of 500 (one transaction each), as fast as the database takes them.
  for (let done = 0; done < n; done += 500) await emit(pool, Math.min(500, n - done));
  await waitProcessed(pool, n, 600_000);
  const row = (await pool.one(sql.unsafe`
    SELECT extract(epoch FROM (max(processed_at) - min(created_at)))::float8 AS seconds FROM internal_events WHERE name = 'bench'`)) as { seconds: number };
  return n / row.seconds;
}

async function latency(pool: DatabasePool, n: number): Promise<number[]> {
  await pool.query(sql.unsafe`DELETE FROM internal_events WHERE name = 'bench'`);
  for (let i = 0; i < n; i += 1) {
    await emit(pool, 1);
    await waitProcessed(pool, i + 1, 60_000);
    await new Promise((r) => setTimeout(r, 20));
  }
  const rows = (await pool.any(sql.unsafe`
    SELECT (extract(epoch FROM (r.created_at - e.created_at)) * 1000)::float8 AS ms
    FROM internal_events e JOIN runs r ON r.triggering_event_id = e.id WHERE e.name = 'bench'`)) as unknown as Array<{ ms: number }>;
  return rows.map((r) => r.ms).sort((a, b) => a - b);
}

const system = await systemAvailability();
const serverUrl = system.ok ? systemTestUrl() : (await embeddedServer()).url;
console.log(`events bench: ${total} events per throughput phase, ${samples} latency samples; load average at start ${load()}`);
for (const nodeCount of [1, 3]) {
  const database = await freshDatabase(serverUrl);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-events-'));
  const pool = await createDatabase({ url: database.url, logger: testLogger, maxPoolSize: 4 });
  const nodes = await startNodes(database.url, nodeCount, dataDir);
  try {
    await register(pool);
    const rate = await throughput(pool, total);
    const lat = await latency(pool, samples);
    const rss = process.memoryUsage().rss / 1024 / 1024;
    console.log(
      `${nodeCount} node${nodeCount > 1 ? 's' : ' '}  delivered ${rate.toFixed(0)} events/s (each one run with a queued job)  ` +
        `emit → run queued p50=${percentile(lat, 50).toFixed(1)} ms p99=${percentile(lat, 99).toFixed(1)} ms max=${lat.at(-1)!.toFixed(1)} ms  RSS ${rss.toFixed(0)} MB`,
    );
  } finally {
    for (const node of nodes.reverse()) await node.stop();
    await pool.end();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
console.log(`load average at end ${load()}`);
