// Version skew: an agent speaking wire protocol 3 still connects (the floor), but a job whose
// dispatch carries a field protocol 3 drops or refuses (checkout.submodules, checkout.lfs,
// container.options, install) is never sent to it; another agent takes it, and when every agent
// carrying the job's labels is that old (and no scaler starts one) the job fails at once naming
// them and the field. Real PostgreSQL, the in-process orchestrator, agents over real WebSockets.
import t from 'tap';
import { packageVersion } from '../../../../core/package-info.ts';
import { protocolFloor, wireFeatures } from '../../../../kernel/orchestrator/dispatch/protocol-gap.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { PROTOCOL_VERSION } from '../../../../schemas/wire/relay.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, jobRow, moveStatus, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { afterDispatchPass, startNode } from './harness.ts';

const CODE = 'SVC_ERR_DISPATCH_AGENT_PROTOCOL_TOO_OLD';
const SUBMODULES = { checkout: { enabled: true, depth: 1, submodules: true } };

t.test('which fields need protocol 4 (what message.ts sends) or 5 (retry on exit codes)', async (t) => {
  const none = { kind: 'job', checkout: undefined, container: undefined, registries: undefined, install_env: undefined, retry: undefined };
  t.same(wireFeatures(none), []);
  t.same(wireFeatures({ ...none, checkout: { enabled: true, depth: 1, submodules: true, lfs: true } }), ['checkout.submodules', 'checkout.lfs']);
  t.same(wireFeatures({ ...none, checkout: { enabled: true, submodules: false } }), [], 'false is what protocol 3 does anyway');
  t.same(wireFeatures({ ...none, kind: 'build', checkout: { enabled: true, submodules: true } }), [], 'a build job is sent no checkout');
  t.same(wireFeatures({ ...none, container: { image: 'node:24', options: ['--shm-size=1g'] } }), ['container.options']);
  t.same(wireFeatures({ ...none, container: { image: 'node:24', options: [] } }), []);
  t.same(wireFeatures({ ...none, registries: [{ url: 'https://npm.example.test/', alwaysAuth: false, tokenSecret: 'npm:TOKEN' }] }), ['install']);
  t.same(wireFeatures({ ...none, install_env: ['npm:TOKEN'] }), ['install']);
  t.same(wireFeatures({ ...none, kind: 'build', install_env: ['npm:TOKEN'] }), [], 'a build job installs nothing with secrets');
  const retry = (exitCodes: number[]) => ({ maxAttempts: 2, agentLost: false, failedTests: false, exitCodes, backoff: { delaySeconds: 0, factor: 1, maxDelaySeconds: 0 } });
  t.same(wireFeatures({ ...none, retry: retry([3]) }), ['retry.exitCodes'], 'a retry on exit codes needs an agent that reports them');
  t.same(protocolFloor(wireFeatures({ ...none, retry: retry([3]) })), 5);
  t.same(wireFeatures({ ...none, retry: retry([]) }), [], 'agent-lost and failed-tests need nothing of the agent');
  t.same(wireFeatures({ ...none, kind: 'filter', retry: retry([3]) }), [], 'only workflow jobs are retried');
});

await eachDatabase(t, async (t, db) => {
  // Queue timeout far beyond the test: a failure seen here is the at-once one.
  const node = await startNode(t, db.url, { SVC_QUEUE_TIMEOUT_MS: '3600000' }, { containerGraceMs: 3_600_000 });
  // Registered first, so with equal standing it would be picked first: a protocol 3 agent of an
  // earlier release. `legacy` is a label only it carries.
  const old = await TestAgent.online({ url: node.url, agentId: 'old-1', labels: ['linux-ci', 'legacy'], protocolVersion: 3 });
  const current = await TestAgent.online({ url: node.url, agentId: 'new-1', labels: ['linux-ci'] });
  t.teardown(async () => {
    await old.close();
    await current.close();
  });
  const versions = (await db.pool.any(sql.unsafe`SELECT id, protocol_version FROM agents ORDER BY id`)) as readonly { id: string; protocol_version: number }[];
  t.same(versions, [{ id: 'new-1', protocol_version: PROTOCOL_VERSION }, { id: 'old-1', protocol_version: 3 }], 'each agent\'s protocol is recorded');

  await t.test('a submodules job goes to the protocol 4 agent, never the protocol 3 one', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'with-subs', runsOn: ['linux-ci'], lock: SUBMODULES }] });
    const id = run.jobs['with-subs']!.id;
    const d = await current.waitFor('job.dispatch', (m) => m.jobId === id);
    t.match(d.jobConfig.checkout, { enabled: true, submodules: true }, 'sent with its submodules');
    await afterDispatchPass(node, old, current);
    t.notOk(old.received.some((m) => m.type === 'job.dispatch'), 'the protocol 3 agent got nothing');
    current.jobStatus(id, 'completed');
    await until('completed', async () => ((await jobRow(db.pool, id)).status === 'completed' ? true : undefined));
  });

  await t.test('only protocol 3 agents carry the labels: it fails at once, naming the agent and the field', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'legacy-subs', runsOn: ['legacy'], lock: SUBMODULES }] });
    const id = run.jobs['legacy-subs']!.id;
    const failed = await until('the job failed', async () => {
      const job = await jobRow(db.pool, id);
      return job.status === 'failed' ? job : undefined;
    });
    const reason = failed.reason ?? '';
    t.match(reason, new RegExp(`^${CODE}: No agent can run this job: it uses checkout\\.submodules \\(wire protocol 4\\)`));
    t.match(reason, 'agent old-1 speaks protocol 3, which does not carry checkout.submodules', 'the agent and the field, by name');
    t.match(reason, `Upgrade it to svc ${packageVersion()} (this orchestrator's release) or later`, 'and the release to upgrade to');
    t.notMatch(reason, 'new-1', 'an agent without the labels is not named');
    t.equal(failed.agent_id, null, 'never dispatched');
    const event = (await db.pool.one(sql.unsafe`SELECT payload FROM run_events WHERE job_id = ${id} AND kind = 'job_complete'`)) as { payload: { code: string } };
    t.equal(event.payload.code, CODE, 'the run event carries the code');
  });

  await t.test('a scaler that can start an agent for it: it waits for that agent', async (t) => {
    const dispatcher = node.service.dispatcher;
    dispatcher.setSpawnable((matchers) => matchers.every((m) => m === 'legacy'), () => 'legacy-scaler');
    t.teardown(() => dispatcher.setSpawnable(() => false));
    const run = await insertRun(db.pool, { jobs: [{ name: 'spawned', runsOn: ['legacy'], lock: { checkout: { enabled: true, depth: 1, lfs: true } } }] });
    const id = run.jobs['spawned']!.id;
    await dispatcher.annotateUnroutable();
    await afterDispatchPass(node, old);
    const job = await jobRow(db.pool, id);
    t.equal(job.status, 'queued', 'neither failed nor given to the protocol 3 agent');
    await moveStatus(db.pool, 'jobs', id, 'cancelled');
  });

  await t.test('a plain job still goes to the protocol 3 agent', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'plain', runsOn: ['legacy'], lock: { checkout: { enabled: true, depth: 1 } } }] });
    const id = run.jobs['plain']!.id;
    const d = await old.waitFor('job.dispatch', (m) => m.jobId === id);
    t.equal(d.jobId, id);
    old.jobStatus(id, 'completed');
  });
});
