// A queued job scaled up through the `kubernetes` plugin, on real PostgreSQL with the real
// composition (plugins/builtin.ts picks the plugin from the scaler config's `plugin: kubernetes`)
// against the stand-in API server. The test plays the kubelet: when a pod appears it connects an
// agent with exactly the pod's environment (orchestrator URL, id, labels, ephemeral), runs the
// job, then reports the pod Succeeded; the plugin must delete it. Every request body the client
// sent must pass the Kubernetes OpenAPI schema.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { createRunControlSubsystem } from '../../../../kernel/orchestrator/run-control/subsystem.ts';
import { createScalingSubsystem } from '../../../../kernel/orchestrator/scaling/subsystem.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { startKubeApiServer, type PodObject } from '../../../fixtures/kube-api-server.ts';
import { insertRun, jobRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';


const NAMESPACE = 'ci-agents';
const envOf = (pod: PodObject): Record<string, string> =>
  Object.fromEntries((pod.spec.containers[0].env as Array<{ name: string; value?: string }>).filter((e) => e.value !== undefined).map((e) => [e.name, e.value!]));

t.test('a queued job gets a pod; an agent with the pod env runs it; the Succeeded pod is deleted', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const server = await startKubeApiServer();
    t.teardown(() => server.close());
    const dir = await mkdtemp(join(tmpdir(), 'svc-k8s-scaling-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const scalerFile = join(dir, 'scalers.json');
    await writeFile(
      scalerFile,
      JSON.stringify({
        scalers: [{ name: 'k8s-pool', plugin: 'kubernetes', labels: ['k8s'], os: 'linux', arch: 'x64', maxAgents: 2, startsPerMinute: 100, idleTimeoutMs: 300_000 }],
        plugins: {
          kubernetes: {
            kubeconfig: await server.writeKubeconfig(dir),
            namespace: NAMESPACE,
            image: 'registry.example/svc-agent:0.9.0',
            tokenSecret: { name: 'svc-agent-token' },
            instanceId: 'node-a',
            cleanupIntervalMs: 200,
          },
        },
      }),
    );
    const orch = await startOrchestrator({
      env: {
        SVC_DATABASE_URL: db.url,
        SVC_SERVER_PORT: '0',
        SVC_SERVER_HOST: '127.0.0.1',
        SVC_DATA_DIR: dir,
        SVC_SECRET_KEY: 'a'.repeat(64),
        SVC_AGENT_AUTH: 'none',
        SVC_INSTANCE_ID: 'node-a',
        SVC_SCALER_CONFIG_PATH: scalerFile,
      },
      cwd: dir,
      logger: testLogger,
      plugins: (env) => orchestratorPlugins(env),
      subsystems: [
        createDispatchSubsystem({ tickMs: 150, heartbeatMs: 1_000, registerTimeoutMs: 3_000, containerGraceMs: 60_000 }),
        createRunControlSubsystem(),
        createScalingSubsystem({ tickMs: 150 }),
      ],
    });
    t.teardown(() => orch.stop());

    const { all } = await insertRun(db.pool, { trustTier: 'unknown', jobs: [{ name: 'build', runsOn: ['k8s', 'svc:os:linux'] }] });
    const jobId = all[0]!.id;

    const pod = await until('an agent pod is created', async () => server.pods(NAMESPACE)[0]);
    const env = envOf(pod);
    const agentId = pod.metadata.labels?.['svc.dev/agent-id'];
    t.equal(env['SVC_AGENT_ID'], agentId, 'the pod is labelled with its agent id');
    t.equal(env['SVC_AGENT_LABELS'], 'k8s', 'SVC_AGENT_LABELS = the scaler entry labels (mandatoryLabels)');
    t.equal(env['SVC_AGENT_EPHEMERAL'], '1');
    t.equal(pod.metadata.labels?.['svc.dev/instance'], 'node-a');
    t.match(pod.metadata.annotations?.['svc.dev/reason'], new RegExp(`job ${jobId}`));

    // The kubelet's part: the container starts svc-agent with the pod's environment.
    const agent = await TestAgent.online({ url: env['SVC_ORCHESTRATOR_URL']!, agentId: agentId!, labels: env['SVC_AGENT_LABELS']!.split(','), ephemeral: env['SVC_AGENT_EPHEMERAL'] === '1', os: 'linux', arch: 'x64' });
    const dispatch = await agent.waitFor('job.dispatch', () => true, 120_000);
    t.equal(dispatch.jobId, jobId, 'the job went to the agent in the pod');
    agent.jobStatus(jobId, 'running');
    agent.jobStatus(jobId, 'completed');
    await until('the job completed', async () => ((await jobRow(db.pool, jobId)).status === 'completed' ? true : undefined));
    await agent.close();
    // The container exits after its job: Succeeded, unless the orchestrator's reaper (which
    // scales down agents that ended) already deleted the pod; either way it must go.
    if (server.pod(NAMESPACE, pod.metadata.name) !== undefined) server.setPhase(NAMESPACE, pod.metadata.name, 'Succeeded');

    await until('the finished pod is deleted', async () => (server.pods(NAMESPACE).length === 0 ? true : undefined));
    const row = await until('the scale-up ended', async () => {
      const r = (await db.pool.maybeOne(sql.unsafe`SELECT agent_id, state, plugin, reason FROM scale_ups WHERE job_id = ${jobId}`)) as { agent_id: string; state: string; plugin: string; reason: string } | null;
      return r !== null && ['exited', 'failed', 'reaped'].includes(r.state) ? r : undefined;
    });
    t.equal(row.plugin, 'kubernetes');
    t.equal(row.agent_id, agentId);
    t.equal(row.state, 'exited');
    t.equal(row.reason, 'ended after its job');
    t.equal((await jobRow(db.pool, jobId)).agent_id, agentId);
    t.equal(server.pods().length, 0, 'no pod left anywhere');
    t.same(server.violations, [], 'every request body was valid against the OpenAPI schema');
  });
});
