// Queue and claims: label routing, "No jobs dispatched", the dispatch message, two nodes on one
// database never dispatching a job twice.
import t from 'tap';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, jobRow, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { afterDispatchPass, startNode } from './harness.ts';

t.test('routing by labels, and the No jobs dispatched outcome', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const plain = await TestAgent.online({ url: node.url, agentId: 'plain', labels: ['team-a'] });
    const { runId, jobs } = await insertRun(db.pool, {
      trustTier: 'unknown',
      jobs: [{ name: 'gpu-job', runsOn: ['gpu', '!windows'], matrix: { node: 24 }, lock: { timeout: 60_000, gracePeriod: 5 } }],
    });
    const gpuJob = jobs['gpu-job']!.id;

    const reason = await until('No jobs dispatched reason', async () => {
      const row = await jobRow(db.pool, gpuJob);
      return row.reason?.startsWith('No jobs dispatched') ? row : undefined;
    });
    t.equal(reason.status, 'queued', 'stays queued');
    t.equal(reason.reason, 'No jobs dispatched: no online or spawnable agent carries the labels gpu, !windows');
    t.equal(plain.all('job.dispatch').length, 0, 'not sent to a non-matching agent');

    const winGpu = await TestAgent.online({ url: node.url, agentId: 'win-gpu', os: 'windows', labels: ['gpu', 'windows'] });
    const gpu = await TestAgent.online({ url: node.url, agentId: 'gpu-1', labels: ['gpu'] });
    const dispatch = await gpu.waitFor('job.dispatch');
    t.equal(dispatch.jobId, gpuJob);
    t.equal(dispatch.runId, runId);
    t.equal(dispatch.attempt, 1);
    t.match(dispatch.jobConfig, { workflow: 'ci', job: 'gpu-job', matrix: { node: 24 }, repository: 'acme/widgets', timeoutMs: 60_000, gracePeriodSeconds: 5, isTestRun: false, needs: {} });
    t.same(dispatch.sourceAuth, { cloneUrl: 'https://git.example.test/acme/widgets.git' }, 'clone URL from the event repository');
    t.equal(dispatch.workflowAuth, null);
    t.equal(dispatch.sourceTarUrl, null, 'no storage: no cache URLs');
    t.equal(dispatch.cacheRefScope, `iso/${runId}`, 'untrusted run: isolated cache scope');
    t.equal(winGpu.all('job.dispatch').length, 0, 'negation keeps it off the windows agent');
    const row = await jobRow(db.pool, gpuJob);
    t.match(row, { status: 'dispatched', agent_id: 'gpu-1', attempts: 1, reason: null });
    t.equal((await runRow(db.pool, runId)).status, 'running', 'run is running once a job is dispatched');

    // Prefix matcher; trusted run → shared scope; one job per agent at a time.
    const second = await insertRun(db.pool, { jobs: [{ name: 'a', runsOn: ['team-*'] }, { name: 'b', runsOn: ['team-*'] }] });
    const first = await plain.waitFor('job.dispatch');
    t.equal(first.cacheRefScope, 'shared');
    await afterDispatchPass(node, plain);
    t.equal(plain.all('job.dispatch').length, 1, 'a busy agent gets no second job');
    plain.jobStatus(first.jobId, 'completed');
    const next = await plain.waitFor('job.dispatch', (m) => m.jobId !== first.jobId);
    t.ok([second.jobs['a']!.id, second.jobs['b']!.id].includes(next.jobId), 'freed capacity takes the next job');
    for (const a of [plain, winGpu, gpu]) await a.close();
  });
});

t.test('two orchestrator nodes on one database never dispatch a job twice', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const nodes = [await startNode(t, db.url, { SVC_INSTANCE_ID: 'node-a' }), await startNode(t, db.url, { SVC_INSTANCE_ID: 'node-b' })];
    const agents: TestAgent[] = [];
    for (let i = 0; i < 6; i += 1) {
      const agent = await TestAgent.online({ url: nodes[i % 2]!.url, agentId: `w${i}`, labels: ['pool'] });
      agents.push(agent);
    }
    // Every agent completes each job the moment it arrives.
    const seen = new Map<string, string[]>();
    for (const agent of agents) {
      let handled = 0;
      const loop = setInterval(() => {
        const dispatches = agent.all('job.dispatch');
        for (; handled < dispatches.length; handled += 1) {
          const d = dispatches[handled]!;
          seen.set(d.jobId, [...(seen.get(d.jobId) ?? []), agent.options.agentId]);
          agent.jobStatus(d.jobId, 'completed');
        }
      }, 5);
      t.teardown(() => clearInterval(loop));
    }
    const total = 60;
    const runs = [];
    for (let r = 0; r < 6; r += 1) runs.push(await insertRun(db.pool, { jobs: Array.from({ length: total / 6 }, (_, i) => ({ name: `j${i}`, runsOn: ['pool'] })) }));
    await until('all jobs completed', async () => {
      const n = (await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM jobs WHERE status = 'completed'`)) as number;
      return n === total ? n : undefined;
    }, 30_000);
    t.equal(seen.size, total, 'every job dispatched');
    t.same([...seen.values()].filter((v) => v.length > 1), [], 'no job dispatched twice');
    t.equal((await db.pool.oneFirst(sql.unsafe`SELECT max(attempts)::int FROM jobs`)) as number, 1, 'one attempt each');
    const perNode = (await db.pool.any(sql.unsafe`SELECT DISTINCT a.node_id FROM jobs j JOIN agents a ON a.id = j.agent_id`)) as readonly { node_id: string }[];
    t.equal(perNode.length, 2, 'both nodes dispatched');
    for (const run of runs) await until('run completed', async () => ((await runRow(db.pool, run.runId)).status === 'completed' ? true : undefined));
    for (const agent of agents) await agent.close();
  });
});
