// Coalesced builds end to end in the database: two runs of two deliveries share one build job
// (one `contentHash:lockfileHash` key). The build's terminal report through dispatch's real
// `applyJobStatus` releases the other run's waiting jobs (queued, in need order) on success, or
// skips them with reason `build failed` and finishes that run as failed.
import t from 'tap';
import { applyJobStatus } from '../../../../kernel/orchestrator/dispatch/status.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../../../fixtures/locks.ts';
import { count, delivery, jobsOfRun, makeHarness, type Harness } from './harness.ts';

const AGENT = 'agent-build-1';

async function twoRunsOneBuild(h: Harness, secret: string, sha: string, lockfileHash: string, name = `wf-${sha.slice(0, 4)}`) {
  h.forge.putLock(sha, [workflow(name, [trig.push()], [job('lint'), { ...job('test'), needs: ['lint'] }])], { lockfileHash });
  const [a, b] = await Promise.all([
    h.pipeline.ingestDelivery(delivery(pushPayload({ after: sha, ref: 'refs/heads/one' }), { secret })),
    h.newPipeline({ nodeId: 'node-b' }).ingestDelivery(delivery(pushPayload({ after: sha, ref: 'refs/heads/two' }), { secret })),
  ]);
  const runA = a.runIds[0]!;
  const runB = b.runIds[0]!;
  const build = (await h.db.pool.one(sql.unsafe`
    select id::text as id, run_id::text as run_id from jobs where kind = 'build' and run_id in (${runA}, ${runB})`)) as { id: string; run_id: string };
  const owner = build.run_id;
  const other = owner === runA ? runB : runA;
  // What a claim by an agent does to the build job.
  await h.db.pool.query(sql.unsafe`update jobs set status = 'dispatched', agent_id = ${AGENT} where id = ${build.id}`);
  await h.db.pool.query(sql.unsafe`update jobs set status = 'running', started_at = now() where id = ${build.id}`);
  return { owner, other, buildId: build.id };
}

const statusOf = async (h: Harness, runId: string) => ((await h.db.pool.one(sql.unsafe`select status, reason from runs where id = ${runId}`)) as { status: string; reason: string | null });

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { secret } = await h.addSource();

  await t.test('build completed: the other run is released in need order', async (t) => {
    const { owner, other, buildId } = await twoRunsOneBuild(h, secret, '6'.repeat(40), `npm:${'1'.repeat(64)}`);
    t.same((await jobsOfRun(db, other)).map((j) => [j.name, j.status]), [['lint', 'waiting'], ['test', 'waiting']], 'the other run waits for the build');
    const outcome = await applyJobStatus(db.pool, AGENT, { type: 'job.status', jobId: buildId, status: 'completed', steps: [] });
    t.ok(outcome.terminal);
    t.same((await jobsOfRun(db, owner)).filter((j) => j.kind === 'job').map((j) => [j.name, j.status]), [['lint', 'queued'], ['test', 'waiting']], 'owner run: needs on svc:build met');
    t.same((await jobsOfRun(db, other)).map((j) => [j.name, j.status]), [['lint', 'queued'], ['test', 'waiting']], 'other run: released, test still needs lint');
    t.equal((await statusOf(h, other)).status, 'queued');
    // A repeated report changes nothing.
    const again = await applyJobStatus(db.pool, AGENT, { type: 'job.status', jobId: buildId, status: 'completed', steps: [] });
    t.ok(again.duplicate);
  });

  await t.test('build failed: the other run is skipped with "build failed" and finished', async (t) => {
    const { owner, other, buildId } = await twoRunsOneBuild(h, secret, '7'.repeat(40), `npm:${'2'.repeat(64)}`, 'shared');
    await applyJobStatus(db.pool, AGENT, { type: 'job.status', jobId: buildId, status: 'failed', steps: [], reason: 'tsc exited 2' });
    const jobs = await db.pool.any(sql.unsafe`select name, status, reason from jobs where run_id = ${other} order by name`);
    t.same(jobs, [{ name: 'lint', status: 'skipped', reason: 'build failed' }, { name: 'test', status: 'skipped', reason: 'build failed' }]);
    t.same(await statusOf(h, other), { status: 'failed', reason: 'build failed' }, 'the other run is finished');
    t.equal((await statusOf(h, owner)).status, 'failed', 'the owner run fails with its build job');
    const events = (await db.pool.any(sql.unsafe`select kind, status from run_events where run_id = ${other} order by id`)) as Array<{ kind: string; status: string }>;
    t.same(events.filter((e) => e.kind === 'workflow_complete'), [{ kind: 'workflow_complete', status: 'failed' }]);
    t.equal(events.filter((e) => e.kind === 'job_complete').length, 2);
  });

  await t.test('a later build for the same key after a failure coalesces anew; the old failure does not touch it', async (t) => {
    const { other, buildId } = await twoRunsOneBuild(h, secret, '8'.repeat(40), `npm:${'2'.repeat(64)}`, 'shared');
    t.equal(await count(db, 'jobs', sql.fragment`kind = 'build' and build_key like ${'%:npm:' + '2'.repeat(64) + '@%'}`), 2, 'a second build job for the key');
    t.ok((await jobsOfRun(db, other)).every((j) => j.status === 'waiting'), 'new waiters for the new build job');
    await applyJobStatus(db.pool, AGENT, { type: 'job.status', jobId: buildId, status: 'completed', steps: [] });
    t.equal((await jobsOfRun(db, other)).find((j) => j.name === 'lint')?.status, 'queued');
  });
});
