// The scaling subsystem on real PostgreSQL with the real dispatch subsystem and agent endpoint:
// scale-up for queued jobs no online agent can take (mandatoryLabels = the scaler's labels),
// never twice for one job, within maxAgents and startsPerMinute; idle agents reaped; "No jobs
// dispatched" only for labels no online or spawnable agent carries; the scaler config validated
// at start and re-read after a config reload; two nodes on one database. Agents are TestAgent
// connections a test-only scaler opens (test/fixtures/plugins/test-agent-scaler.ts).
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { SvcPlugin } from '../../../../core/plugins/index.ts';
import { startOrchestrator, type Orchestrator } from '../../../../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { createRunControlSubsystem } from '../../../../kernel/orchestrator/run-control/subsystem.ts';
import { createScalingSubsystem } from '../../../../kernel/orchestrator/scaling/subsystem.ts';
import { sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger, type Test } from '../../../fixtures/db.ts';
import testAgentScaler, { resetScalerLog, scalerLog } from '../../../fixtures/plugins/test-agent-scaler.ts';
import { insertRun, jobRow, until } from '../../../fixtures/runs.ts';


interface ScalerFileEntry {
  name: string;
  plugin?: string;
  labels: string[];
  maxAgents?: number;
  startsPerMinute?: number;
  idleTimeoutMs?: number;
}

/** TestAgents register as linux/x64 with the bare-metal sandbox: the entries say so. */
const yamlOf = (entries: ScalerFileEntry[], connect = true): string =>
  JSON.stringify({
    scalers: entries.map((e) => ({ plugin: 'test-agent-scaler', os: 'linux', arch: 'x64', ...e })),
    plugins: { 'test-agent-scaler': { connect } },
  });

async function startNode(t: Test, dbUrl: string, scalerFile: string, nodeId = 'node-a'): Promise<Orchestrator> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-scaling-'));
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl,
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: 'a'.repeat(64),
      SVC_AGENT_AUTH: 'none',
      SVC_INSTANCE_ID: nodeId,
      SVC_SCALER_CONFIG_PATH: scalerFile,
    },
    cwd: dataDir,
    logger: testLogger,
    // What plugins/builtin.ts does for `local`: the file's plugins.<id> over the host's address.
    plugins: (env) => {
      const file = JSON.parse(readFileSync(scalerFile, 'utf8')) as { plugins?: Record<string, Record<string, unknown>> };
      return {
        builtIns: [testAgentScaler as SvcPlugin],
        config: { 'scaler:test-agent-scaler': { orchestratorUrl: env.publicUrl, ...file.plugins?.['test-agent-scaler'] } },
        selection: {},
      };
    },
    subsystems: [
      createDispatchSubsystem({ tickMs: 150, heartbeatMs: 1_000, registerTimeoutMs: 3_000, containerGraceMs: 60_000 }),
      createRunControlSubsystem(),
      createScalingSubsystem({ tickMs: 150 }),
    ],
  });
  t.teardown(async () => {
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return orch;
}

async function scratch(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-scaler-cfg-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

interface Row {
  scaler: string;
  job_id: string | null;
  agent_id: string | null;
  labels: string[];
  state: string;
  reason: string | null;
}

const rowsOf = async (pool: DatabasePool): Promise<Row[]> =>
  (await pool.any(sql.unsafe`SELECT scaler, job_id::text AS job_id, agent_id, labels, state, reason FROM scale_ups ORDER BY created_at`)) as unknown as Row[];

/** A counter of the node's /metrics (summed over its label sets matching `labels`). */
async function counterOf(orch: Orchestrator, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${orch.url}/metrics`)).text();
  const lines = text.split('\n').filter((l) => (l.startsWith(`${name} `) || l.startsWith(`${name}{`)) && l.includes(labels));
  if (!text.includes(`# TYPE ${name} `)) throw new Error(`${name} is not exposed`);
  return lines.reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

/** Two more scaling passes of `orch` (the second began after this call; they tick every 150 ms). */
async function twoScalingPasses(orch: Orchestrator): Promise<void> {
  const start = await counterOf(orch, 'svc_orch_scaling_passes_total');
  await until('two scaling passes', async () => ((await counterOf(orch, 'svc_orch_scaling_passes_total')) >= start + 2 ? true : undefined), 60_000, 20);
}

/**
 * Each connected scaled agent runs its job to completion and then goes away, as an ephemeral
 * agent does: once the orchestrator has recorded the result (the real agent flushes first).
 */
function runJobsAndExit(pool: DatabasePool): () => void {
  const handled = new Set<string>();
  const timer = setInterval(() => {
    for (const [id, agent] of scalerLog.agents) {
      if (handled.has(id)) continue;
      handled.add(id);
      void agent.waitFor('job.dispatch', () => true, 300_000).then(async (d) => {
        agent.jobStatus(d.jobId, 'running');
        agent.jobStatus(d.jobId, 'completed');
        await until('the job result recorded', async () => ((await jobRow(pool, d.jobId)).status === 'completed' ? true : undefined), 300_000, 50);
        await agent.close();
      }, () => undefined)
        // A dispatch that arrives as the test ends finds the pool shut: the test's own
        // assertions, not this helper, say whether its jobs completed.
        .catch(() => undefined);
    }
  }, 50);
  return () => clearInterval(timer);
}

t.test('scale-up: one agent per uncovered job, the scaler labels, within maxAgents; No jobs dispatched only for labels nothing serves', async (t) => {
  await eachDatabase(t, async (t, db) => {
    resetScalerLog();
    const dir = await scratch(t);
    const file = join(dir, 'scalers.json');
    await writeFile(file, yamlOf([{ name: 'gpu-pool', labels: ['gpu', 'big'], maxAgents: 2, startsPerMinute: 100, idleTimeoutMs: 300_000 }]));
    const orch = await startNode(t, db.url, file);
    const stopRunning = runJobsAndExit(db.pool);
    t.teardown(stopRunning);

    const { runId, all } = await insertRun(db.pool, {
      trustTier: 'unknown',
      jobs: [
        { name: 'g1', runsOn: ['gpu'] },
        { name: 'g2', runsOn: ['gpu', 'svc:role:ephemeral'] },
        { name: 'g3', runsOn: ['gpu', 'big', 'svc:os:linux'] },
        { name: 'tpu', runsOn: ['tpu'] },
      ],
    });
    const byName = Object.fromEntries(all.map((j) => [j.name, j.id]));

    // The job no scaler serves: the spec's outcome, and it stays queued.
    const tpu = await until('tpu job marked', async () => {
      const row = await jobRow(db.pool, byName['tpu']!);
      return row.reason?.startsWith('No jobs dispatched') ? row : undefined;
    });
    t.equal(tpu.status, 'queued');
    t.equal(tpu.reason, 'No jobs dispatched: no online or spawnable agent carries the labels tpu');

    // All three gpu jobs complete, on agents started for them.
    const done = await until('the gpu jobs completed', async () => {
      const rows = await Promise.all(['g1', 'g2', 'g3'].map((n) => jobRow(db.pool, byName[n]!)));
      return rows.every((r) => r.status === 'completed') ? rows : undefined;
    });
    t.equal(new Set(done.map((r) => r.agent_id)).size, 3, 'three distinct agents ran the three jobs');
    for (const r of done) t.match(r.agent_id, /^scaled-/, 'each on a scaled-up agent');

    const requests = scalerLog.requests;
    t.equal(requests.length, 3, 'three scale-ups, one per job');
    for (const r of requests) {
      t.same(r.mandatoryLabels, ['gpu', 'big'], 'mandatoryLabels: the labels the agent registers with');
      t.equal(r.count, 1);
    }
    const rows = await until('every scaled agent ended', async () => {
      const rs = await rowsOf(db.pool);
      return rs.every((r) => r.state === 'exited') ? rs : undefined;
    });
    t.equal(rows.length, 3);
    t.equal(new Set(rows.map((r) => r.job_id)).size, 3, 'no job scaled up twice');
    t.same(rows.map((r) => r.reason), ['ended after its job', 'ended after its job', 'ended after its job']);
    for (const r of rows) t.same(r.labels, ['gpu', 'big']);
    const perAgent = (await db.pool.any(sql.unsafe`SELECT agent_id, count(*)::int AS n FROM jobs WHERE run_id = ${runId} AND agent_id IS NOT NULL GROUP BY agent_id`)) as readonly { n: number }[];
    t.same(perAgent.map((p) => p.n), [1, 1, 1], 'each agent took exactly one job');

    // maxAgents 2: never more than two alive at once. Every request after the first two came
    // after an earlier agent had ended (its row exited before the third started).
    const third = (await db.pool.one(sql.unsafe`SELECT created_at FROM scale_ups ORDER BY created_at OFFSET 2 LIMIT 1`)) as { created_at: number };
    const endedBefore = (await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM scale_ups WHERE ended_at <= ${sql.timestamp(new Date(third.created_at))}`)) as number;
    t.ok(endedBefore >= 1, 'the third agent started only after one of the first two ended (maxAgents 2)');
    t.equal((await jobRow(db.pool, byName['tpu']!)).status, 'queued', 'the tpu job still waits');
    t.ok(orch.subsystems.includes('scaling'));
  });
});

t.test('limits and reaping: agents that never take a job are reaped after idleTimeoutMs; startsPerMinute holds', async (t) => {
  await eachDatabase(t, async (t, db) => {
    resetScalerLog();
    const dir = await scratch(t);
    const file = join(dir, 'scalers.json');
    // connect: false — the scaler "starts" agents that never register.
    await writeFile(file, yamlOf([{ name: 'slow', labels: ['slow'], maxAgents: 5, startsPerMinute: 2, idleTimeoutMs: 1_000 }], false));
    const orch = await startNode(t, db.url, file);
    const { all } = await insertRun(db.pool, { trustTier: 'unknown', jobs: [{ name: 's1', runsOn: ['slow'] }] });
    const jobId = all[0]!.id;

    const reaped = await until('two scale-ups reaped as idle', async () => {
      const rs = (await rowsOf(db.pool)).filter((r) => r.state === 'reaped');
      return rs.length >= 2 ? rs : undefined;
    });
    for (const r of reaped) {
      t.equal(r.reason, 'idle: took no job within idleTimeoutMs (1000 ms)');
      t.equal(r.job_id, jobId);
    }
    t.ok(scalerLog.scaledDown.includes(reaped[0]!.agent_id!), 'the reaped agent was scaled down by id');
    // The first two starts used the minute's budget: two passes after both were reaped (each would
    // start an agent for the uncovered job), no third start.
    await twoScalingPasses(orch);
    const rows = await rowsOf(db.pool);
    t.equal(rows.length, 2, 'startsPerMinute 2: no third scale-up within the minute');
    t.equal(scalerLog.requests.length, 2);
    const job = await jobRow(db.pool, jobId);
    t.equal(job.status, 'queued');
    t.notOk(job.reason?.startsWith('No jobs dispatched'), 'a spawnable job is not marked No jobs dispatched while it waits');
  });
});

t.test('scaler config: validated at start with one line; re-read after a reload; a bad reload keeps the running one', async (t) => {
  await eachDatabase(t, async (t, db) => {
    resetScalerLog();
    const dir = await scratch(t);
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ scalers: [{ name: 'x', plugin: 'test-agent-scaler', labels: ['a'], maxAgents: 0 }] }));
    await t.rejects(startNode(t, db.url, bad), { code: 'SVC_ERR_SCALER_CONFIG_INVALID', message: `scaler config ${bad}: scalers.0.maxAgents: must be >= 1` });
    await writeFile(bad, JSON.stringify({ scalers: [{ name: 'x', plugin: 'kubernetes', labels: ['a'] }] }));
    await t.rejects(startNode(t, db.url, bad), { code: 'SVC_ERR_SCALER_CONFIG_INVALID', message: /scaler "x" names plugin "kubernetes", which is not a signed-in scaler plugin/ });
    await writeFile(bad, JSON.stringify({ scalers: [{ name: 'x', plugin: 'test-agent-scaler', labels: ['svc:os:linux'] }] }));
    await t.rejects(startNode(t, db.url, bad), { code: 'SVC_ERR_SCALER_CONFIG_INVALID', message: /scalers\.0\.labels: "svc:os:linux" is in the reserved "svc:" namespace/ });
    t.equal((await rowsOf(db.pool)).length, 0, 'a refused start scaled nothing');

    const file = join(dir, 'scalers.json');
    await writeFile(file, yamlOf([{ name: 'gpu', labels: ['gpu'] }]));
    const orch = await startNode(t, db.url, file);
    const stopRunning = runJobsAndExit(db.pool);
    t.teardown(stopRunning);
    const { all } = await insertRun(db.pool, { trustTier: 'unknown', jobs: [{ name: 'arm', runsOn: ['arm-box'] }] });
    const jobId = all[0]!.id;
    await until('No jobs dispatched before the reload', async () => ((await jobRow(db.pool, jobId)).reason?.startsWith('No jobs dispatched') ? true : undefined));

    // A reload that does not validate keeps the running config: the gpu scaler still serves.
    await writeFile(file, '{ not json');
    const holder = orch.ctx.configHolder;
    holder.swap({ ...holder.snapshot });
    await until('the bad scaler config tried and refused', async () => ((await counterOf(orch, 'svc_orch_scaler_config_reloads_total', 'result="kept"')) >= 1 ? true : undefined));
    const gpu = (await insertRun(db.pool, { trustTier: 'unknown', jobs: [{ name: 'gpu', runsOn: ['gpu'] }] })).all[0]!.id;
    await until('the gpu job ran on the running config', async () => ((await jobRow(db.pool, gpu)).status === 'completed' ? true : undefined));
    t.ok((await jobRow(db.pool, jobId)).reason?.startsWith('No jobs dispatched'), 'the arm job is still unserved');

    // A reload that adds a scaler for the label: the job is scaled up and runs.
    await writeFile(file, yamlOf([{ name: 'gpu', labels: ['gpu'] }, { name: 'arm', labels: ['arm-box'] }]));
    holder.swap({ ...holder.snapshot });
    const done = await until('the arm job ran after the reload', async () => {
      const row = await jobRow(db.pool, jobId);
      return row.status === 'completed' ? row : undefined;
    });
    t.equal(done.reason, null, 'the No jobs dispatched reason was cleared');
    t.same(scalerLog.requests.map((r) => r.mandatoryLabels), [['gpu'], ['arm-box']]);
    t.same((await rowsOf(db.pool)).map((r) => r.scaler), ['gpu', 'arm']);
  });
});

t.test('two nodes on one database: a job is scaled up once', async (t) => {
  await eachDatabase(t, async (t, db) => {
    resetScalerLog();
    const dir = await scratch(t);
    const file = join(dir, 'scalers.json');
    // connect: false keeps the scale-ups waiting, so both nodes see the same uncovered jobs.
    await writeFile(file, yamlOf([{ name: 'pool', labels: ['many'], maxAgents: 50, startsPerMinute: 1000, idleTimeoutMs: 120_000 }], false));
    const nodeA = await startNode(t, db.url, file, 'node-a');
    const nodeB = await startNode(t, db.url, file, 'node-b');
    const { all } = await insertRun(db.pool, { trustTier: 'unknown', jobs: Array.from({ length: 6 }, (_, i) => ({ name: `m${i}`, runsOn: ['many'] })) });
    await until('six scale-ups', async () => ((await rowsOf(db.pool)).length >= 6 ? true : undefined));
    await twoScalingPasses(nodeA);
    await twoScalingPasses(nodeB);
    const rows = await rowsOf(db.pool);
    t.equal(rows.length, 6, 'six scale-ups for six jobs, not more, with both nodes scaling');
    t.same(new Set(rows.map((r) => r.job_id)), new Set(all.map((j) => j.id)), 'one per job');
  });
});
