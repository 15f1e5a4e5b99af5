// jobConfig.install at dispatch, on real PostgreSQL and a real orchestrator: the lock entry's
// registries and installEnv with their values from the secrets released to the job (the
// workflow's contexts, their rules passed); a missing key is sent without a value (the agent
// refuses, naming it); such a workflow never reads the shared dependency cache; build jobs get
// no install secrets. The agent side: test/agent/jobs/private-registry.test.ts.
import { Readable } from 'node:stream';
import t from 'tap';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { createContext, setSecret } from '../../../../kernel/orchestrator/secrets/index.ts';
import { installConfigOf } from '../../../../kernel/orchestrator/dispatch/install.ts';
import type { JobDispatch } from '../../../../schemas/wire/agent.ts';
import { parseMasterKey } from '../../../../kernel/services/crypto/sealing.ts';
import { sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { startNode } from './harness.ts';

const KEY_TEXT = 'a'.repeat(64);
const LOCKFILE = `npm:${'d'.repeat(64)}`;
const REGISTRY = { url: 'https://npm.example.test/acme/', scope: '@acme', tokenSecret: 'npm:NPM_TOKEN', alwaysAuth: true };

async function withEntry(pool: DatabasePool, runId: string, fields: Record<string, unknown>): Promise<void> {
  await pool.query(sql.unsafe`UPDATE runs SET lock_entry = lock_entry || ${sql.jsonb(fields)} WHERE id = ${runId}`);
}

t.test('installConfigOf: values by reference, remote context names mapped, absent values left out', async (t) => {
  t.equal(installConfigOf({ contexts: ['npm'] }, { 'npm:NPM_TOKEN': 'x' }), undefined, 'neither declared');
  t.same(installConfigOf({ registries: [REGISTRY], installEnv: ['npm:EXTRA'] }, { 'npm:NPM_TOKEN': 'tok-1234', NPM_TOKEN: 'tok-1234' }), {
    registries: [{ ...REGISTRY, token: 'tok-1234' }],
    env: [{ name: 'EXTRA', secret: 'npm:EXTRA' }],
  });
  t.same(installConfigOf({ installEnv: ['npm:EXTRA'] }, { 'orch-npm:EXTRA': 'v-5678' }, { npm: 'orch-npm' })?.env, [{ name: 'EXTRA', secret: 'npm:EXTRA', value: 'v-5678' }], 'svc run remote maps the context');
  t.same(installConfigOf({ registries: [{ url: 'x' }] }, {}), undefined, 'a malformed registry is not sent');
});

t.test('dispatch: install secrets released with the workflow context; no shared dependency cache', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_SECRET_KEY: KEY_TEXT, SVC_STORAGE_TYPE: 'filesystem' }, {}, orchestratorPlugins);
    const storage = node.orch.ctx.host.select('storage', 'filesystem');
    await storage.put(`deps/linux-x64/${LOCKFILE}.hash`, Readable.from([Buffer.from('deps-123')]));
    await storage.put('deps/linux-x64/deps-123.tar.gz', Buffer.from('deps tarball'));
    const key = parseMasterKey(KEY_TEXT);
    await createContext(db.pool, { name: 'npm', branches: ['main'], repositories: ['acme/*'] });
    await setSecret(db.pool, key, 'npm', 'NPM_TOKEN', 'npm-token-value-0001');
    await setSecret(db.pool, key, 'npm', 'EXTRA', 'extra-value-0002');
    // Every run is in place before the agent connects: a dispatch sees the finished lock entry.
    const run = await insertRun(db.pool, { lockfileHash: LOCKFILE, jobs: [{ name: 'test', runsOn: ['inst'] }] });
    await withEntry(db.pool, run.runId, { contexts: ['npm'], registries: [REGISTRY], installEnv: ['npm:EXTRA'] });
    const missing = await insertRun(db.pool, { lockfileHash: LOCKFILE, jobs: [{ name: 'test', runsOn: ['inst'] }] });
    await withEntry(db.pool, missing.runId, { contexts: ['npm'], registries: [{ ...REGISTRY, tokenSecret: 'npm:NOT_SET' }] });
    const build = await insertRun(db.pool, { lockfileHash: LOCKFILE, jobs: [{ name: 'build', kind: 'build', runsOn: ['inst'] }] });
    await withEntry(db.pool, build.runId, { contexts: ['npm'], registries: [REGISTRY] });
    const plain = await insertRun(db.pool, { lockfileHash: LOCKFILE, jobs: [{ name: 'test', runsOn: ['inst'] }] });
    const ids = [run.jobs['test']!.id, missing.jobs['test']!.id, build.jobs['build']!.id, plain.jobs['test']!.id];
    const agent = await TestAgent.online({ url: node.url, agentId: 'x64', arch: 'x64', labels: ['inst'] });
    t.teardown(() => agent.close());
    const got = new Map<string, JobDispatch>();
    while (got.size < ids.length) {
      const d = await agent.waitFor('job.dispatch', (m) => ids.includes(m.jobId) && !got.has(m.jobId));
      got.set(d.jobId, d);
      agent.jobStatus(d.jobId, 'completed');
    }
    const [d, m, b, p] = ids.map((id) => got.get(id)!);

    t.same(d!.jobConfig.install, { registries: [{ ...REGISTRY, token: 'npm-token-value-0001' }], env: [{ name: 'EXTRA', secret: 'npm:EXTRA', value: 'extra-value-0002' }] });
    t.equal(d!.depsUrl, null, 'the shared dependency cache is not read for a workflow installing with secrets');
    t.equal(d!.depsHash, null);

    t.same(m!.jobConfig.install?.registries, [{ ...REGISTRY, tokenSecret: 'npm:NOT_SET' }], 'a key the context lacks: sent without a token');

    t.equal(b!.jobConfig.install, undefined, 'a build job gets no install secrets (it installs nothing for this workflow)');
    t.equal(b!.jobConfig.secrets, undefined);
    t.equal(b!.depsUrl, null);

    t.equal(p!.jobConfig.install, undefined);
    t.equal(p!.depsHash, 'deps-123', 'a workflow without install secrets still reads the dependency cache');
  });
});
