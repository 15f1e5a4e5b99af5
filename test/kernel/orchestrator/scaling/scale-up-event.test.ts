// The spec's scale-up event ("Internal events": carries `mandatoryLabels`, the full gate the
// spawned agent registers with) on the internal event bus, and the registration check of that
// gate: an agent a scaler started that registers without a mandatory label is refused with
// SVC_ERR_DISPATCH_MANDATORY_LABELS_MISSING; one that registered before the scaler answered
// (so registration could not know it) is stopped when the scale-up learns its id. Also a job's
// `routing.avoid` choosing between two scalers that both serve it. Real PostgreSQL, the
// in-process orchestrator (dispatch, run-control, scaling), the test-only scaler whose agents are
// TestAgents on real WebSockets (test/fixtures/plugins/test-agent-scaler.ts).
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { SvcPlugin } from '../../../../core/plugins/index.ts';
import { startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { checkEvent, SCALE_UP_EVENT } from '../../../../kernel/orchestrator/events/emit.ts';
import { createRunControlSubsystem } from '../../../../kernel/orchestrator/run-control/subsystem.ts';
import { createScalingSubsystem } from '../../../../kernel/orchestrator/scaling/subsystem.ts';
import { WS_CLOSE_REFUSED } from '../../../../schemas/wire/relay.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import testAgentScaler, { resetScalerLog, scalerLog } from '../../../fixtures/plugins/test-agent-scaler.ts';
import { insertRun, jobRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';

/** TestAgents register as linux/x64 with the bare-metal sandbox: the entries say so. */
const SCALERS = {
  scalers: [
    { name: 'gpu-pool', labels: ['gpu'] },
    { name: 'tpu-pool', labels: ['tpu'] },
    { name: 'racers', labels: ['racer'], startsPerMinute: 1 },
    { name: 'spot-pool', labels: ['shared', 'spot'] },
    { name: 'on-demand', labels: ['shared', 'on-demand'] },
  ].map((e) => ({ plugin: 'test-agent-scaler', os: 'linux', arch: 'x64', maxAgents: 4, idleTimeoutMs: 3_600_000, ...e })),
  // Agents connect when the test says (or in beforeAnswer), with the labels it chooses.
  plugins: { 'test-agent-scaler': { connect: false } },
};
const gateOf = (labels: string[]) => ['svc:os:linux', 'svc:arch:x64', 'svc:role:ephemeral', 'svc:sandbox:bare-metal', ...labels];

t.test('a step cannot forge the scale-up event', async (t) => {
  t.throws(() => checkEvent({ name: SCALE_UP_EVENT, payload: {}, orgId: 'org-1' }), { code: 'SVC_ERR_EVENT_NAME_RESERVED' });
  t.doesNotThrow(() => checkEvent({ name: SCALE_UP_EVENT, payload: {}, orgId: 'org-1', source: 'orchestrator' }));
});

await eachDatabase(t, async (t, db) => {
  resetScalerLog();
  t.teardown(resetScalerLog);
  const dir = await mkdtemp(join(tmpdir(), 'svc-scale-up-event-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'scalers.json');
  await writeFile(file, JSON.stringify(SCALERS));
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: db.url,
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_DATA_DIR: dir,
      SVC_SECRET_KEY: 'a'.repeat(64),
      SVC_AGENT_AUTH: 'none',
      SVC_SCALER_CONFIG_PATH: file,
    },
    cwd: dir,
    logger: testLogger,
    plugins: (env) => {
      const parsed = JSON.parse(readFileSync(file, 'utf8')) as { plugins: Record<string, Record<string, unknown>> };
      return {
        builtIns: [testAgentScaler as SvcPlugin],
        config: { 'scaler:test-agent-scaler': { orchestratorUrl: env.publicUrl, ...parsed.plugins['test-agent-scaler'] } },
        selection: {},
      };
    },
    subsystems: [
      createDispatchSubsystem({ tickMs: 150, heartbeatMs: 1_000, registerTimeoutMs: 3_000, containerGraceMs: 60_000 }),
      createRunControlSubsystem(),
      createScalingSubsystem({ tickMs: 150 }),
    ],
  });
  t.teardown(() => orch.stop());
  const opened: TestAgent[] = [];
  t.teardown(async () => {
    for (const a of opened) await a.close();
  });
  // The racer registers before the scaler answers, without its mandatory label.
  scalerLog.beforeAnswer = async (agentId, request) => {
    if (!request.mandatoryLabels.includes('racer')) return;
    const agent = await TestAgent.online({ url: orch.url, agentId, labels: [], ephemeral: true });
    opened.push(agent);
    scalerLog.agents.set(agentId, agent);
  };
  const scaleUpOf = (jobId: string) =>
    until('the scale-up has its agent', async () =>
      (await db.pool.maybeOne(sql.unsafe`SELECT id::text AS id, scaler, agent_id, state, reason, gate FROM scale_ups WHERE job_id = ${jobId} AND agent_id IS NOT NULL`)) as
        | { id: string; scaler: string; agent_id: string; state: string; reason: string | null; gate: string[] }
        | undefined ?? undefined);

  await t.test('the event: on the bus with the full gate as mandatoryLabels; the agent with that gate takes the job', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'train', runsOn: ['gpu'] }] });
    const jobId = run.jobs['train']!.id;
    const row = await scaleUpOf(jobId);
    const event = (await db.pool.one(sql.unsafe`
      SELECT name, source, org_id, run_id::text AS run_id, job_id::text AS job_id, payload FROM internal_events WHERE name = ${SCALE_UP_EVENT} AND job_id = ${jobId}`)) as {
      name: string;
      source: string;
      org_id: string;
      run_id: string;
      job_id: string;
      payload: Record<string, unknown>;
    };
    t.match(event, { source: 'orchestrator', org_id: 'org-1', run_id: run.runId, job_id: jobId });
    t.same(event.payload, {
      scaler: 'gpu-pool',
      plugin: 'test-agent-scaler',
      scaleUpId: row.id,
      agentId: row.agent_id,
      count: 1,
      mandatoryLabels: gateOf(['gpu']),
      labels: ['gpu'],
      jobId,
      runId: run.runId,
      nodeId: orch.ctx.nodeId,
      reason: `job ${jobId}`,
    });
    t.same(scalerLog.requests.find((r) => r.agentId === row.agent_id)?.mandatoryLabels, ['gpu'], 'the plugin is asked for the custom labels (it cannot set svc: ones)');
    const agent = await TestAgent.online({ url: orch.url, agentId: row.agent_id, labels: ['gpu'], ephemeral: true });
    opened.push(agent);
    const d = await agent.waitFor('job.dispatch', (m) => m.jobId === jobId);
    t.equal(d.jobId, jobId, 'registered with its gate: accepted, and it took the job');
    agent.jobStatus(jobId, 'completed');
  });

  await t.test('an agent registering without a mandatory label is refused, naming it', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'infer', runsOn: ['tpu'] }] });
    const jobId = run.jobs['infer']!.id;
    const row = await scaleUpOf(jobId);
    const agent = await TestAgent.connect({ url: orch.url, agentId: row.agent_id, labels: [], ephemeral: true });
    opened.push(agent);
    const error = await agent.waitFor('protocol.error');
    t.equal(error.error.code, 'SVC_ERR_DISPATCH_MANDATORY_LABELS_MISSING');
    t.match(error.error.message, `agent ${row.agent_id} was started by scaler tpu-pool and must register with ${gateOf(['tpu']).join(', ')}; it registered without tpu`);
    const closed = await agent.closed;
    t.equal(closed.code, WS_CLOSE_REFUSED);
    const recorded = (await db.pool.maybeOne(sql.unsafe`SELECT connected FROM agents WHERE id = ${row.agent_id}`)) as { connected: boolean } | null;
    t.equal(recorded, null, 'not recorded as an agent');
    t.match(await db.pool.oneFirst(sql.unsafe`SELECT reason FROM scale_ups WHERE id = ${row.id}::uuid`), 'refused at registration: registered without tpu');
    t.equal((await jobRow(db.pool, jobId)).status, 'queued', 'the job was not given to it');
  });

  await t.test('one that registered before the scaler answered is stopped once its id is known', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'race', runsOn: ['racer'] }] });
    const jobId = run.jobs['race']!.id;
    const ended = await until('the scale-up ended', async () =>
      ((await db.pool.maybeOne(sql.unsafe`SELECT agent_id, state, reason FROM scale_ups WHERE job_id = ${jobId} AND state = 'reaped'`)) as
        | { agent_id: string; state: string; reason: string }
        | null) ?? undefined);
    t.equal(ended.reason, 'refused: registered without its mandatory labels racer');
    t.ok(scalerLog.scaledDown.includes(ended.agent_id), 'the scaler was told to stop it');
    await until('its socket closed', () => (scalerLog.agents.get(ended.agent_id)?.closeInfo === undefined ? undefined : true));
  });

  await t.test('routing.avoid picks between two scalers that serve the job', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'batch', runsOn: ['shared'], lock: { routing: { prefer: [], avoid: ['spot'] } } }] });
    const row = await scaleUpOf(run.jobs['batch']!.id);
    t.equal(row.scaler, 'on-demand', 'spot-pool comes first in the config but its agents carry an avoided label');
    const plain = await insertRun(db.pool, { jobs: [{ name: 'batch', runsOn: ['shared'] }] });
    t.equal((await scaleUpOf(plain.jobs['batch']!.id)).scaler, 'spot-pool', 'without routing: config order');
  });
});
