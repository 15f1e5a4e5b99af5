// Spec "Queued job when its agent disconnects": every row.
import t from 'tap';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, jobRow, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { afterDispatchPass, startNode } from './harness.ts';

type Pool = Parameters<typeof jobRow>[0];
const waitStatus = (pool: Pool, id: string, want: string, timeoutMs = 60_000) =>
  until(`job ${id} ${want}`, async () => {
    const row = await jobRow(pool, id);
    return row.status === want ? row : undefined;
  }, timeoutMs);

t.test('static agent: reconnect within the window reattaches; nothing re-dispatched', async (t) => {
  await eachDatabase(t, async (t, db) => {
    // A window of 2 x 150 s: the reconnect below lands in it however busy the machine is.
    const node = await startNode(t, db.url, { SVC_AGENT_MAX_RECONNECT_DELAY_MS: '150000' });
    const agent = await TestAgent.online({ url: node.url, agentId: 's1', labels: ['x'] });
    const { runId, jobs } = await insertRun(db.pool, { jobs: [{ name: 'long', runsOn: ['x'] }, { name: 'queued-one', runsOn: ['x'] }] });
    const dispatch = await agent.waitFor('job.dispatch');
    const jobId = dispatch.jobId;
    agent.jobStatus(jobId, 'running');
    await waitStatus(db.pool, jobId, 'running');
    const before = Date.now();
    await agent.drop();
    const recovering = await waitStatus(db.pool, jobId, 'recovering');
    t.equal(recovering.agent_id, 's1', 'owning agent kept on the row');
    t.ok(recovering.recovery_deadline !== null && recovering.recovery_deadline >= before + 299_000 && recovering.recovery_deadline <= Date.now() + 300_500, 'deadline = now + 2 x max reconnect delay');

    // Another matching agent must not get the recovering job.
    const other = await TestAgent.online({ url: node.url, agentId: 'other', labels: ['x'] });
    const otherJob = await other.waitFor('job.dispatch');
    t.not(otherJob.jobId, jobId, 'the recovering job is not re-dispatched');

    const back = await TestAgent.online({ url: node.url, agentId: 's1', labels: ['x'], inFlightJobs: [{ jobId, status: 'running' }] });
    const row = await waitStatus(db.pool, jobId, 'running');
    t.equal(row.recovery_deadline, null, 'recovery timer cancelled');
    t.equal(row.attempts, 1, 'no second attempt');
    t.equal(back.all('job.dispatch').length, 0, 'nothing re-dispatched to the returning agent');
    back.jobStatus(jobId, 'completed');
    other.jobStatus(otherJob.jobId, 'completed');
    await until('run completed', async () => ((await runRow(db.pool, runId)).status === 'completed' ? true : undefined));
    t.ok(jobs['long'] && jobs['queued-one']);
    await back.close();
    await other.close();
  });
});

t.test('static agent: window expires → failed with the reason; never re-dispatched', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_AGENT_MAX_RECONNECT_DELAY_MS: '200' });
    const agent = await TestAgent.online({ url: node.url, agentId: 's2', labels: ['x'] });
    const { runId, jobs } = await insertRun(db.pool, { jobs: [{ name: 'job', runsOn: ['x'] }] });
    const jobId = jobs['job']!.id;
    await agent.waitFor('job.dispatch');
    await agent.drop();
    const failed = await waitStatus(db.pool, jobId, 'failed');
    t.equal(failed.reason, 'Agent s2 did not reconnect within the recovery window (0.4s)');
    t.equal((await runRow(db.pool, runId)).status, 'failed');
    const spare = await TestAgent.online({ url: node.url, agentId: 'spare', labels: ['x'] });
    // The late agent reports the job in flight: it is told to stop.
    const late = await TestAgent.online({ url: node.url, agentId: 's2', labels: ['x'], inFlightJobs: [{ jobId, status: 'running' }] });
    t.match(await late.waitFor('job.cancel'), { jobId, force: true });
    await afterDispatchPass(node, spare, late);
    t.equal(spare.all('job.dispatch').length + late.all('job.dispatch').length, 0, 'a permanently failed job is never re-dispatched');
    t.equal((await jobRow(db.pool, jobId)).status, 'failed');
    await spare.close();
    await late.close();
  });
});

t.test('ephemeral agents: started job fails at once, unstarted job requeued, attempts bounded', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_AGENT_MAX_RECONNECT_DELAY_MS: '60000', SVC_CLUSTER_MAX_DISPATCH_ATTEMPTS: '2' });
    // Started.
    const e1 = await TestAgent.online({ url: node.url, agentId: 'e1', ephemeral: true, labels: ['started'] });
    const started = await insertRun(db.pool, { jobs: [{ name: 'job', runsOn: ['started'] }] });
    await e1.waitFor('job.dispatch');
    e1.jobStatus(started.jobs['job']!.id, 'running');
    await waitStatus(db.pool, started.jobs['job']!.id, 'running');
    await e1.drop();
    const failed = await waitStatus(db.pool, started.jobs['job']!.id, 'failed');
    // A window (120 s here) would end in "did not reconnect within the recovery window".
    t.equal(failed.reason, 'Agent e1 (ephemeral) disconnected while the job was running', 'fails at once, no window');

    // Not started: requeued, then taken by another agent.
    const e2 = await TestAgent.online({ url: node.url, agentId: 'e2', ephemeral: true, labels: ['fresh'] });
    const fresh = await insertRun(db.pool, { jobs: [{ name: 'job', runsOn: ['fresh'] }] });
    const freshId = fresh.jobs['job']!.id;
    await e2.waitFor('job.dispatch');
    await e2.drop();
    const requeued = await waitStatus(db.pool, freshId, 'queued');
    t.match(requeued, { agent_id: null, attempts: 1 });
    // The dispatcher's next tick may already have replaced the requeue reason with its own (no
    // agent carries the label now): either way the job is back in the queue, unowned.
    t.match(requeued.reason, /Requeued: agent e2 \(ephemeral\) disconnected before starting the job|No jobs dispatched: no online or spawnable agent carries the labels fresh/);
    const e3 = await TestAgent.online({ url: node.url, agentId: 'e3', ephemeral: true, labels: ['fresh'] });
    t.match(await e3.waitFor('job.dispatch'), { jobId: freshId, attempt: 2 });
    // Second unstarted loss reaches the limit (2): failed, not requeued.
    await e3.drop();
    const exhausted = await waitStatus(db.pool, freshId, 'failed');
    t.match(exhausted.reason, /dispatch-attempt limit \(2\)/);
    t.equal(exhausted.attempts, 2);
    const e4 = await TestAgent.online({ url: node.url, agentId: 'e4', ephemeral: true, labels: ['fresh'] });
    await afterDispatchPass(node, e4);
    t.equal(e4.all('job.dispatch').length, 0, 'exhausted job is never re-dispatched');
    // An ephemeral agent takes one job in its life.
    const two = await insertRun(db.pool, { jobs: [{ name: 'a', runsOn: ['fresh'] }, { name: 'b', runsOn: ['fresh'] }] });
    const got = await e4.waitFor('job.dispatch');
    e4.jobStatus(got.jobId, 'completed');
    await waitStatus(db.pool, got.jobId, 'completed');
    await afterDispatchPass(node, e4);
    t.equal(e4.all('job.dispatch').length, 1, 'no second job for an ephemeral agent');
    t.ok(two.runId);
    await e4.close();
  });
});

t.test('ephemeral agent that reports its result and leaves at once: the result counts, not the disconnect', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_AGENT_MAX_RECONNECT_DELAY_MS: '60000' });
    for (const round of [1, 2, 3]) {
      const agent = await TestAgent.online({ url: node.url, agentId: `last-word-${round}`, ephemeral: true, labels: [`last-word-${round}`] });
      const { runId, jobs } = await insertRun(db.pool, { jobs: [{ name: 'job', runsOn: [`last-word-${round}`] }] });
      const jobId = jobs['job']!.id;
      await agent.waitFor('job.dispatch');
      // Both statuses and the close go out back to back, as svc-agent does after an ephemeral job:
      // the close reaches the orchestrator while it is still recording `running`.
      agent.jobStatus(jobId, 'running');
      agent.jobStatus(jobId, 'completed');
      await agent.close();
      await until(`run ${runId} to end`, async () => {
        const run = await runRow(db.pool, runId);
        return ['completed', 'failed', 'cancelled'].includes(run.status) ? run : undefined;
      });
      const row = await jobRow(db.pool, jobId);
      t.equal(row.status, 'completed', `round ${round}: ${row.reason ?? ''}`);
      t.equal((await runRow(db.pool, runId)).status, 'completed');
    }
  });
});
