// A container job whose labels online agents carry, none of which offers the container sandbox,
// fails at once naming the sandbox, the agents and what each reported (docs/sandboxes.md: "a
// container job fails ..., naming the runtime"), not after the queue timeout or the grace window.
// The first agent is the real one (agent/agent.ts) with the real container sandbox plugin told to
// use docker: this machine has a docker client and no engine, the case of issue 38. Real
// PostgreSQL, the in-process orchestrator with its dispatch subsystem, real WebSockets.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../../../kernel/services/db/index.ts';
import { createContainerSandbox } from '../../../../plugins/sandboxes/container/index.ts';
import { createProcessSandbox } from '../../../../plugins/sandboxes/process/index.ts';
import { launchAgent } from '../../../agent/fixtures/agent-harness.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, jobRow, moveStatus, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { startNode } from './harness.ts';

const CODE = 'SVC_ERR_DISPATCH_SANDBOX_UNAVAILABLE';

await eachDatabase(t, async (t, db) => {
  // Grace and queue timeout far beyond the test: a failure seen here is the at-once one.
  const node = await startNode(t, db.url, { SVC_QUEUE_TIMEOUT_MS: '3600000' }, { containerGraceMs: 3_600_000 });
  const workDir = await mkdtemp(join(tmpdir(), 'svc-sandbox-gap-'));
  t.teardown(() => rm(workDir, { recursive: true, force: true }));
  const real = await launchAgent({
    url: node.url,
    workDir,
    labels: 'linux-ci',
    sandboxes: new Map([
      ['process', createProcessSandbox({ bwrap: 'never', network: true })],
      ['container', createContainerSandbox({ runtime: 'docker', network: true })],
    ]),
  });
  t.teardown(() => real.stop());
  await until('the real agent registered', async () =>
    ((await db.pool.maybeOne(sql.unsafe`SELECT 1 AS one FROM agents WHERE id = ${real.agentId} AND connected`)) === null ? undefined : true));
  const row = (await db.pool.one(sql.unsafe`SELECT sandboxes, unavailable_sandboxes FROM agents WHERE id = ${real.agentId}`)) as {
    sandboxes: string[];
    unavailable_sandboxes: Array<{ sandbox: string; missing: string; message: string }>;
  };
  t.same(row.sandboxes, ['bare-metal'], 'docker without an engine: the container sandbox is not offered');
  t.match(row.unavailable_sandboxes, [{ sandbox: 'container', missing: 'docker', message: /docker is installed but its engine is not reachable/ }], 'and the agent said why');

  // Carries the labels, no container sandbox, reports nothing (an agent of an older release).
  const quiet = await TestAgent.online({ url: node.url, agentId: 'quiet-1', labels: ['linux-ci'], sandboxes: ['bare-metal'] });
  // Offers containers, lacks the labels: not named.
  const elsewhere = await TestAgent.online({ url: node.url, agentId: 'mac-1', labels: ['macos'], sandboxes: ['container'] });
  t.teardown(async () => {
    await quiet.close();
    await elsewhere.close();
  });

  await t.test('a container job fails at once, naming the sandbox, the agents and why', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'in-image', runsOn: ['linux-ci'], lock: { container: { image: 'node:24' } } }] });
    const id = run.jobs['in-image']!.id;
    const failed = await until('the job failed', async () => {
      const job = await jobRow(db.pool, id);
      return job.status === 'failed' ? job : undefined;
    });
    const reason = failed.reason ?? '';
    t.match(reason, new RegExp(`^${CODE}: No agent can run this job: it needs the container \\(svc:sandbox:container\\) sandbox`));
    t.match(reason, `agent ${real.agentId} (container sandbox cannot run: no container runtime: docker is installed but its engine is not reachable)`, 'the real agent and its runtime, by name');
    t.match(reason, 'agent quiet-1 (container sandbox not installed (no reason reported))');
    t.notMatch(reason, 'mac-1', 'an agent without the labels is not named');
    t.equal(failed.agent_id, null, 'never dispatched');
    const event = (await db.pool.one(sql.unsafe`SELECT payload FROM run_events WHERE job_id = ${id} AND kind = 'job_complete'`)) as { payload: { code: string } };
    t.equal(event.payload.code, CODE, 'the run event carries the code');
    const finished = await until('the run finished', async () => {
      const r = await runRow(db.pool, run.runId);
      return r.status === 'failed' ? r : undefined;
    });
    t.equal(finished.status, 'failed');
  });

  await t.test('runsOn naming the sandbox itself is the same case', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'boxed', runsOn: ['linux-ci', 'svc:sandbox:container'] }] });
    const failed = await until('the job failed', async () => {
      const job = await jobRow(db.pool, run.jobs['boxed']!.id);
      return job.status === 'failed' ? job : undefined;
    });
    t.match(failed.reason, new RegExp(`^${CODE}: `));
  });

  await t.test('no online agent carries the labels: it waits (an agent may come)', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'gpu-box', runsOn: ['gpu'], lock: { container: { image: 'node:24' } } }] });
    const id = run.jobs['gpu-box']!.id;
    const marked = await until('marked', async () => {
      const job = await jobRow(db.pool, id);
      return job.reason?.startsWith('No jobs dispatched') ? job : undefined;
    });
    t.equal(marked.status, 'queued');
    t.equal(marked.reason, 'No jobs dispatched: no online or spawnable agent carries the labels gpu, svc:sandbox:container', 'the reason names the sandbox too');
  });

  await t.test('a scaler that can start an agent with the sandbox: it waits for that agent', async (t) => {
    const dispatcher = node.service.dispatcher;
    dispatcher.setSpawnable((matchers) => matchers.every((m) => m === 'linux-ci' || m === 'svc:sandbox:container'), () => 'container-scaler');
    t.teardown(() => dispatcher.setSpawnable(() => false));
    const run = await insertRun(db.pool, { jobs: [{ name: 'spawned', runsOn: ['linux-ci'], lock: { container: { image: 'node:24' } } }] });
    const id = run.jobs['spawned']!.id;
    await dispatcher.annotateUnroutable();
    await dispatcher.annotateUnroutable();
    const job = await jobRow(db.pool, id);
    t.equal(job.status, 'queued', 'not failed');
    t.equal(job.reason, null, 'not marked either');
    await moveStatus(db.pool, 'jobs', id, 'cancelled');
  });

  await t.test('an agent offering the sandbox takes such a job', async (t) => {
    const boxer = await TestAgent.online({ url: node.url, agentId: 'boxer-1', labels: ['linux-ci'], sandboxes: ['bare-metal', 'container'] });
    t.teardown(() => boxer.close());
    const run = await insertRun(db.pool, { jobs: [{ name: 'ok', runsOn: ['linux-ci'], lock: { container: { image: 'node:24' } } }] });
    const d = await boxer.waitFor('job.dispatch', (m) => m.jobId === run.jobs['ok']!.id);
    t.equal(d.jobId, run.jobs['ok']!.id);
    boxer.jobStatus(d.jobId, 'completed');
  });
});
