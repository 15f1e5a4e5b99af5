// job.dispatch contents that depend on storage (cache pointers → pre-signed URLs) and on the
// run (workflowAuth for org-wide workflows, build jobs), and the container-unroutable rule.
import { Readable } from 'node:stream';
import t from 'tap';
import { sql } from '../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { claimDispatchRow, loadDispatchRow } from '../../../../kernel/orchestrator/dispatch/message.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, jobRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { startNode } from './harness.ts';

t.test('cache pointers become pre-signed URLs; misses are null', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_STORAGE_TYPE: 'filesystem' }, {}, orchestratorPlugins);
    const storage = node.orch.ctx.host.select('storage', 'filesystem');
    const contentHash = 'c'.repeat(64);
    const lockfileHash = `npm:${'d'.repeat(64)}`;
    await storage.put(`source/v2/org-1/${contentHash}.hash`, Buffer.from('sha256-src\n'));
    await storage.put('source/v2/org-1/sha256-src.tar.gz', Buffer.from('source tarball'));
    await storage.put(`deps/linux-arm64/${lockfileHash}.hash`, Readable.from([Buffer.from('deps-123')]));
    await storage.put('deps/linux-arm64/deps-123.tar.gz', Buffer.from('deps tarball'));

    const agent = await TestAgent.online({ url: node.url, agentId: 'arm', arch: 'arm64' });
    const hit = await insertRun(db.pool, { contentHash, lockfileHash, jobs: [{ name: 'build', kind: 'build' }] });
    const d = await agent.waitFor('job.dispatch', (m) => m.jobId === hit.jobs['build']!.id);
    t.equal(d.sourceTarDigest, 'sha256-src');
    t.equal(d.depsHash, 'deps-123');
    t.equal(d.jobConfig.build, true, 'build job kind');
    t.equal(await (await fetch(d.sourceTarUrl!)).text(), 'source tarball', 'source URL is a working pre-signed GET');
    t.equal(await (await fetch(d.depsUrl!)).text(), 'deps tarball', 'deps URL keyed by the agent platform-arch');
    agent.jobStatus(d.jobId, 'completed');

    const miss = await insertRun(db.pool, { contentHash: 'e'.repeat(64), lockfileHash, jobs: [{ name: 'job' }] });
    const m = await agent.waitFor('job.dispatch', (x) => x.jobId === miss.jobs['job']!.id);
    t.match(m, { sourceTarUrl: null, sourceTarDigest: null, depsHash: 'deps-123' });
    await agent.close();
  });
});

t.test('org-wide workflow gets workflowAuth; container job unroutable after the grace window', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, {}, { containerGraceMs: 600 });
    const agent = await TestAgent.online({ url: node.url, agentId: 'bare', sandboxes: ['bare-metal'] });
    // Held back by an unmatched label until the run names its workflow repository.
    const org = await insertRun(db.pool, { repository: 'acme/app', jobs: [{ name: 'job', runsOn: ['nobody-yet'] }] });
    await db.pool.query(sql.unsafe`UPDATE runs SET workflow_repository = 'acme/.svc-org' WHERE id = ${org.runId}`);
    await db.pool.query(sql.unsafe`UPDATE jobs SET runs_on = '{}' WHERE id = ${org.jobs['job']!.id}`);
    const d = await agent.waitFor('job.dispatch', (m) => m.jobId === org.jobs['job']!.id);
    t.same(d.workflowAuth, { cloneUrl: 'https://github.com/acme/.svc-org.git' });
    agent.jobStatus(d.jobId, 'completed');

    // No online agent carries `gpu`: one may come, so the job waits out the grace window.
    const container = await insertRun(db.pool, { jobs: [{ name: 'in-docker', runsOn: ['gpu'], lock: { container: { image: 'node:24', options: [] } } }] });
    const id = container.jobs['in-docker']!.id;
    const queued = await until('no-jobs reason', async () => {
      const row = await jobRow(db.pool, id);
      return row.reason?.startsWith('No jobs dispatched') ? row : undefined;
    });
    t.equal(queued.status, 'queued', 'no agent carries its labels: it waits');
    const failed = await until('unroutable', async () => {
      const row = await jobRow(db.pool, id);
      return row.status === 'failed' ? row : undefined;
    });
    t.match(failed.reason, /^Unroutable: no agent can start containers for this job/);
    t.equal(agent.all('job.dispatch').length, 1);
    await agent.close();
  });
});

t.test('a pointer whose tarball is gone is a miss; the claim returns the row a load reads after it', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_STORAGE_TYPE: 'filesystem' }, {}, orchestratorPlugins);
    const storage = node.orch.ctx.host.select('storage', 'filesystem');
    const contentHash = 'f'.repeat(64);
    // The pointer names a tarball that was never written (or was evicted).
    await storage.put(`source/v2/org-1/${contentHash}.hash`, Buffer.from('sha256-gone\n'));
    const agent = await TestAgent.online({ url: node.url, agentId: 'one' });
    const run = await insertRun(db.pool, { contentHash, jobs: [{ name: 'job' }] });
    const d = await agent.waitFor('job.dispatch', (m) => m.jobId === run.jobs['job']!.id);
    t.match(d, { sourceTarUrl: null, sourceTarDigest: null }, 'no URL for a tarball that is not there');
    t.equal(d.attempt, 1, 'the claim counted the attempt');
    const runRow = await db.pool.one(sql.unsafe`SELECT status, started_at IS NOT NULL AS started FROM runs WHERE id = ${run.runId}`);
    t.match(runRow, { status: 'running', started: true }, 'the run started before its first job was sent');
    agent.jobStatus(d.jobId, 'completed');
    await agent.close();

    // The claim statement directly: its row is the row loadDispatchRow reads once it committed.
    // Labels no agent has: the node's own dispatcher leaves it alone.
    const other = await insertRun(db.pool, { contentHash, jobs: [{ name: 'solo', runsOn: ['nobody'] }] });
    const jobId = other.jobs['solo']!.id;
    const claimed = await claimDispatchRow(db.pool, jobId, 'agent-x');
    t.ok(claimed, 'a queued job is claimed');
    t.same(claimed, await loadDispatchRow(db.pool, jobId), 'same row as a load after the claim');
    t.match(await jobRow(db.pool, jobId), { status: 'dispatched', agent_id: 'agent-x', attempts: 1 });
    t.equal(await claimDispatchRow(db.pool, jobId, 'agent-y'), null, 'a job already dispatched is not claimed again');
  });
});
