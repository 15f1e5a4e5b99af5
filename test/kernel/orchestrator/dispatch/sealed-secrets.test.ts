// Sealed secrets during a master-key rotation (spec "Dispatch and run errors"), on real
// PostgreSQL with two master keys: a job whose secret is sealed under a key this node lacks is
// put back in the queue with `ready_at` ≈ now + the cluster's back-off (not failed, not sent),
// runs once a node holding the key takes it, and fails with the spec's message when no node
// opens it within the cluster's attempt limit. The back-off and the limit come from the cluster
// settings (seeded from config, changed through PATCH /api/v1/admin/cluster-settings).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { adminAuthSubsystem } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE, startOrchestrator, type Orchestrator } from '../../../../kernel/orchestrator/app.ts';
import { clusterSubsystem } from '../../../../kernel/orchestrator/cluster/subsystem.ts';
import { createDispatchSubsystem } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { SEALED_SECRETS_UNOPENABLE } from '../../../../kernel/orchestrator/dispatch/queue.ts';
import { createRunControlSubsystem } from '../../../../kernel/orchestrator/run-control/subsystem.ts';
import { createContext, setSecret } from '../../../../kernel/orchestrator/secrets/index.ts';
import { parseMasterKey } from '../../../../kernel/services/crypto/sealing.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger, type Test } from '../../../fixtures/db.ts';
import { insertRun, jobRow, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { dispatchServiceRef } from '../../../../kernel/orchestrator/service-refs.ts';
import { FAST, afterDispatchPass } from './harness.ts';


const KEY_OLD = 'a'.repeat(64);
const KEY_NEW = 'b'.repeat(64);
const KEY_LOST = 'c'.repeat(64);
const ADMIN = 'admin-token-sealed-0123456789';

async function startNode(t: Test, dbUrl: string, env: Record<string, string>): Promise<Orchestrator> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-sealed-'));
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl,
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_AGENT_AUTH: 'none',
      SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN,
      ...env,
    },
    cwd: dataDir,
    logger: testLogger,
    plugins: () => ({ builtIns: [], config: {}, selection: {} }),
    subsystems: [adminAuthSubsystem, clusterSubsystem, createDispatchSubsystem(FAST), createRunControlSubsystem()],
  });
  t.teardown(async () => {
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return orch;
}

/** Milliseconds from now to the job's ready_at (database clock). */
async function readyInMs(pool: DatabasePool, jobId: string): Promise<number | null> {
  const row = (await pool.one(sql.unsafe`SELECT (extract(epoch FROM (ready_at - now())) * 1000)::float8 AS ms FROM jobs WHERE id = ${jobId}`)) as { ms: number | null };
  return row.ms;
}

async function deployRun(pool: DatabasePool, label: string) {
  const run = await insertRun(pool, { jobs: [{ name: 'deploy', runsOn: [label], lock: { contexts: ['deploy'] } }] });
  return { runId: run.runId, jobId: run.jobs['deploy']!.id };
}

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  await createContext(db.pool, { name: 'deploy', branches: ['main'], repositories: ['acme/*'] });

  await t.test('put back after the back-off (seeded from config), then run by a node holding the key', async (t) => {
    // The first node seeds the cluster settings from its config: 7 minutes.
    const nodeA = await startNode(t, db.url, { SVC_INSTANCE_ID: 'node-a', SVC_SECRET_KEY: KEY_OLD, SVC_SEALED_SECRETS_RETRY_BACKOFF_MS: '420000' });
    // Another coordinator re-seals under the new key while this one runs (a node booting with a
    // value no key of its opens would stop: the boot check, sealed-stores/registry.test.ts).
    await setSecret(db.pool, parseMasterKey(KEY_NEW), 'deploy', 'TOKEN', 'token-sealed-under-new');
    const agentA = await TestAgent.online({ url: nodeA.url, agentId: 'agent-a', labels: ['rotate'] });
    t.teardown(() => agentA.close());
    const { runId, jobId } = await deployRun(db.pool, 'rotate');

    const putBack = await until('the job put back', async () => {
      const row = await jobRow(db.pool, jobId);
      return row.status === 'queued' && row.attempts === 1 ? row : undefined;
    }, 60_000);
    t.match(putBack.reason, /^Sealed secrets could not be opened on node node-a \(attempt 1 of 5\): secret deploy:TOKEN opens with no configured master key.*retried after 420 s$/);
    t.equal(putBack.agent_id, null);
    const inMs = await readyInMs(db.pool, jobId);
    t.ok(inMs !== null && inMs > 360_000 && inMs <= 420_000, `ready_at ≈ now + 420 s (got ${inMs} ms)`);
    t.equal((await runRow(db.pool, runId)).status, 'running', 'the run is not failed');
    t.equal(agentA.all('job.dispatch').length, 0, 'nothing was sent to the agent');

    // Inside the back-off the job is not claimed again: two dispatch passes after the put-back.
    const dispatchA = { service: nodeA.get(dispatchServiceRef) };
    await afterDispatchPass(dispatchA, agentA);
    await afterDispatchPass(dispatchA, agentA);
    const still = await jobRow(db.pool, jobId);
    t.match(still, { status: 'queued', attempts: 1 }, 'not retried inside the back-off');
    t.equal(agentA.all('job.dispatch').length, 0);

    // A node that has finished the rotation: the new key current, the old one as _OLD.
    await agentA.close();
    const nodeB = await startNode(t, db.url, { SVC_INSTANCE_ID: 'node-b', SVC_SECRET_KEY: KEY_NEW, SVC_SECRET_KEY_OLD: KEY_OLD });
    const agentB = await TestAgent.online({ url: nodeB.url, agentId: 'agent-b', labels: ['rotate'] });
    t.teardown(() => agentB.close());
    await afterDispatchPass({ service: nodeB.get(dispatchServiceRef) }, agentB);
    t.equal(agentB.all('job.dispatch').length, 0, 'the node with the key also waits for the back-off');
    // The back-off elapses (moved, not waited for: 7 minutes).
    await db.pool.query(sql.unsafe`UPDATE jobs SET ready_at = now() WHERE id = ${jobId}`);
    const dispatch = await agentB.waitFor('job.dispatch', (m) => m.jobId === jobId);
    t.equal(dispatch.attempt, 2);
    t.same(dispatch.jobConfig.secrets, { 'deploy:TOKEN': 'token-sealed-under-new', TOKEN: 'token-sealed-under-new' }, 'opened by the node holding the key');
    t.match(await jobRow(db.pool, jobId), { status: 'dispatched', agent_id: 'agent-b', reason: null });
    agentB.jobStatus(jobId, 'completed');
    await until('the run completed', async () => ((await runRow(db.pool, runId)).status === 'completed' ? true : undefined), 60_000);
  });

  await t.test('no node opens it: fails at the cluster attempt limit with the spec message; PATCHed back-off applies', async (t) => {
    // This node boots while every value opens with its key; then the secret is re-sealed under a
    // key no coordinator holds.
    await setSecret(db.pool, parseMasterKey(KEY_OLD), 'deploy', 'TOKEN', 'token-sealed-under-old');
    const node = await startNode(t, db.url, { SVC_INSTANCE_ID: 'node-c', SVC_SECRET_KEY: KEY_OLD });
    await setSecret(db.pool, parseMasterKey(KEY_LOST), 'deploy', 'TOKEN', 'token-sealed-under-a-lost-key');
    const patch = async (body: unknown) => {
      const res = await fetch(`${node.url}/api/v1/admin/cluster-settings`, { method: 'PATCH', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      t.equal(res.status, 200, JSON.stringify(body));
    };
    // The previous test's 7 minutes came from the first node's config; a PATCH changes it live.
    await patch({ sealedSecretsRetryBackoffMs: 900_000 });
    const agent = await TestAgent.online({ url: node.url, agentId: 'agent-c', labels: ['never'] });
    t.teardown(() => agent.close());
    const first = await deployRun(db.pool, 'never');
    await until('put back', async () => ((await jobRow(db.pool, first.jobId)).attempts === 1 && (await jobRow(db.pool, first.jobId)).status === 'queued' ? true : undefined), 60_000);
    const inMs = await readyInMs(db.pool, first.jobId);
    t.ok(inMs !== null && inMs > 840_000 && inMs <= 900_000, `ready_at ≈ now + 900 s, the PATCHed value (got ${inMs} ms)`);

    // Two attempts (not the config's 5), one second apart.
    await patch({ maxDispatchAttempts: 2, sealedSecretsRetryBackoffMs: 1_000 });
    const second = await deployRun(db.pool, 'never');
    const failed = await until('the job failed', async () => {
      const row = await jobRow(db.pool, second.jobId);
      return row.status === 'failed' ? row : undefined;
    }, 60_000);
    t.equal(failed.attempts, 2, 'the cluster attempt limit');
    t.ok(failed.reason?.startsWith(SEALED_SECRETS_UNOPENABLE), failed.reason ?? '');
    t.match(failed.reason, /finish the master-key rotation on every coordinator \(2 attempts, the last on node node-c: secret deploy:TOKEN opens with no configured master key/);
    await until('the run failed', async () => ((await runRow(db.pool, second.runId)).status === 'failed' ? true : undefined), 60_000);
    t.equal(agent.all('job.dispatch').length, 0, 'the agent never got the job');
  });
});
