// Job reports, needs progression, skip propagation, run status, log chunks, cancel.
import t from 'tap';
import { cancelJob, cancelRun } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, jobRow, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { startNode } from './harness.ts';

const status = async (pool: Parameters<typeof jobRow>[0], id: string) => (await jobRow(pool, id)).status;
const waitStatus = (pool: Parameters<typeof jobRow>[0], id: string, want: string) =>
  until(`job ${id} ${want}`, async () => ((await status(pool, id)) === want ? true : undefined));

t.test('status, steps, logs, context, outputs to needs, run completion', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const agent = await TestAgent.online({ url: node.url, agentId: 'w1', labels: ['linux'] });
    const { runId, jobs } = await insertRun(db.pool, {
      jobs: [{ name: 'build', runsOn: ['linux'] }, { name: 'test', runsOn: ['linux'], needs: ['build'] }],
    });
    const build = jobs['build']!.id;
    const test = jobs['test']!.id;
    t.equal(await status(db.pool, test), 'waiting');
    await agent.waitFor('job.dispatch', (m) => m.jobId === build);

    agent.sendRaw({ type: 'job.context', jobId: build, nodeVersion: 'v24.1.0', os: 'linux', arch: 'x64', sandbox: 'bare-metal' });
    agent.jobStatus(build, 'running');
    agent.sendRaw({ type: 'step.status', jobId: build, index: 0, name: 'compile', status: 'running', at: new Date().toISOString() });
    const lines = [{ at: new Date().toISOString(), step: 'compile', stream: 'stdout', text: 'hello' }];
    agent.sendRaw({ type: 'log.chunk', jobId: build, seq: 0, lines });
    agent.sendRaw({ type: 'log.chunk', jobId: build, seq: 0, lines: [{ ...lines[0], text: 'resent' }] });
    agent.sendRaw({ type: 'log.chunk', jobId: build, seq: 1, lines });
    agent.sendRaw({ type: 'step.status', jobId: build, index: 0, name: 'compile', status: 'completed', at: new Date().toISOString() });
    await waitStatus(db.pool, build, 'running');
    // The step row may not exist yet when the first check runs: maybeOneFirst, not oneFirst.
    await until('steps', async () => (((await db.pool.maybeOneFirst(sql.unsafe`SELECT status FROM job_steps WHERE job_id = ${build} AND index = 0`)) as string | null) === 'completed' ? true : undefined));
    const logs = (await db.pool.any(sql.unsafe`SELECT seq, lines FROM job_logs WHERE job_id = ${build} ORDER BY seq`)) as readonly { seq: number; lines: Array<{ text: string }> }[];
    t.same(logs.map((l) => [l.seq, l.lines[0]!.text]), [[0, 'hello'], [1, 'hello']], 'log chunks stored once per seq');
    t.same((await jobRow(db.pool, build)).context, { nodeVersion: 'v24.1.0', os: 'linux', arch: 'x64', sandbox: 'bare-metal' });

    agent.jobStatus(build, 'completed', { outputs: { version: '1.2.3' }, steps: [{ name: 'compile', status: 'completed' }, { name: 'pack', status: 'completed' }] });
    const next = await agent.waitFor('job.dispatch', (m) => m.jobId === test);
    t.same(next.jobConfig.needs, { build: { version: '1.2.3' } }, 'outputs of needed jobs travel with the dispatch');
    t.same(((await db.pool.any(sql.unsafe`SELECT name FROM job_steps WHERE job_id = ${build} ORDER BY index`)) as readonly { name: string }[]).map((r) => r.name), ['compile', 'pack']);
    t.same((await jobRow(db.pool, build)).outputs, { version: '1.2.3' });
    // A repeated terminal report changes nothing.
    agent.jobStatus(build, 'failed');
    agent.jobStatus(test, 'completed');
    await until('run completed', async () => ((await runRow(db.pool, runId)).status === 'completed' ? true : undefined));
    t.equal(await status(db.pool, build), 'completed', 'a late, different terminal report is ignored');
    t.ok((await runRow(db.pool, runId)).finished_at, 'finished_at set');
    const events = (await db.pool.any(sql.unsafe`SELECT kind, status FROM run_events WHERE run_id = ${runId} ORDER BY id`)) as readonly { kind: string; status: string }[];
    t.same(events, [{ kind: 'job_complete', status: 'completed' }, { kind: 'job_complete', status: 'completed' }, { kind: 'workflow_complete', status: 'completed' }]);
    await agent.close();
  });
});

t.test('failure skips dependents transitively; matrix needs wait for every instance', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const agents = [await TestAgent.online({ url: node.url, agentId: 'w1' }), await TestAgent.online({ url: node.url, agentId: 'w2' })];
    const { runId, all } = await insertRun(db.pool, {
      jobs: [
        { name: 'unit', matrix: { n: 1 } },
        { name: 'unit', matrix: { n: 2 } },
        { name: 'deploy', needs: ['unit'] },
        { name: 'notify', needs: ['deploy'] },
        { name: 'lint' },
      ],
    });
    const [unit1, unit2, deploy, notify, lint] = all.map((j) => j.id) as [string, string, string, string, string];
    const d1 = await agents[0]!.waitFor('job.dispatch');
    const d2 = await agents[1]!.waitFor('job.dispatch');
    const byJob = new Map([[d1.jobId, agents[0]!], [d2.jobId, agents[1]!]]);
    t.same([...byJob.keys()].sort(), [unit1, unit2].sort(), 'matrix instances dispatched first (in queue order)');
    byJob.get(unit1)!.jobStatus(unit1, 'completed');
    await waitStatus(db.pool, unit1, 'completed');
    t.equal(await status(db.pool, deploy), 'waiting', 'one instance done is not enough');
    byJob.get(unit2)!.jobStatus(unit2, 'failed', { reason: 'tests failed' });
    await waitStatus(db.pool, notify, 'skipped');
    t.match(await jobRow(db.pool, deploy), { status: 'skipped', reason: 'needs unit which failed' });
    t.match(await jobRow(db.pool, notify), { status: 'skipped', reason: 'needs deploy which skipped' });
    t.equal((await runRow(db.pool, runId)).status, 'running', 'lint still to run');
    const lintAgent = await Promise.race(agents.map((a) => a.waitFor('job.dispatch', (m) => m.jobId === lint).then(() => a)));
    lintAgent.jobStatus(lint, 'completed');
    await until('run failed', async () => ((await runRow(db.pool, runId)).status === 'failed' ? true : undefined));
    t.match(await runRow(db.pool, runId), { reason: 'job failed: unit' });
    for (const a of agents) await a.close();
  });
});

t.test('cancel', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const ctx = node.orch.ctx;
    // A run no job of which started: cancelled at once.
    const idle = await insertRun(db.pool, { jobs: [{ name: 'a', runsOn: ['nobody'] }, { name: 'b', needs: ['a'] }] });
    t.same(await cancelRun(ctx, idle.runId, 'alice'), { cancelledJobs: 2 });
    t.match(await runRow(db.pool, idle.runId), { status: 'cancelled' });
    t.match(await jobRow(db.pool, idle.jobs['a']!.id), { status: 'cancelled', reason: 'Cancelled by alice' });
    t.same(await cancelRun(ctx, idle.runId, 'alice'), { cancelledJobs: 0 }, 'cancelling twice changes nothing');

    // A running job: the agent is told and reports cancelled.
    const agent = await TestAgent.online({ url: node.url, agentId: 'w1' });
    const busy = await insertRun(db.pool, { jobs: [{ name: 'long' }, { name: 'after', needs: ['long'] }] });
    const long = busy.jobs['long']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === long);
    agent.jobStatus(long, 'running');
    await waitStatus(db.pool, long, 'running');
    t.same(await cancelRun(ctx, busy.runId, 'bob'), { cancelledJobs: 2 });
    const cancel = await agent.waitFor('job.cancel');
    t.match(cancel, { jobId: long, reason: 'Cancelled by bob' });
    t.equal(await status(db.pool, long), 'running', 'still running until the agent reports');
    agent.jobStatus(long, 'cancelled');
    await until('run cancelled', async () => ((await runRow(db.pool, busy.runId)).status === 'cancelled' ? true : undefined));

    // cancelJob: one job; its dependents are skipped.
    const one = await insertRun(db.pool, { jobs: [{ name: 'x', runsOn: ['nobody'] }, { name: 'y', needs: ['x'] }, { name: 'z', runsOn: ['nobody'] }] });
    t.same(await cancelJob(ctx, one.jobs['x']!.id, 'carol'), { cancelledJobs: 1 });
    t.match(await jobRow(db.pool, one.jobs['y']!.id), { status: 'skipped', reason: 'needs x which cancelled' });
    t.match(await jobRow(db.pool, one.jobs['z']!.id), { status: 'queued' });

    // Bad input: clear errors, nothing changed.
    await t.rejects(cancelRun(ctx, 'not-a-uuid', 'x'), { code: 'SVC_ERR_DISPATCH_ID_INVALID' });
    await t.rejects(cancelRun(ctx, '00000000-0000-4000-8000-000000000000', 'x'), { code: 'SVC_ERR_DISPATCH_RUN_NOT_FOUND' });
    await t.rejects(cancelRun(ctx, one.runId, ''), { code: 'SVC_ERR_DISPATCH_CANCELLED_BY' });
    await t.rejects(cancelJob(ctx, '00000000-0000-4000-8000-000000000000', 'x'), { code: 'SVC_ERR_DISPATCH_JOB_NOT_FOUND' });
    t.match(await jobRow(db.pool, one.jobs['z']!.id), { status: 'queued' });
    await agent.close();
  });
});

t.test('exit codes (protocol 5): stored with a failure, on the job and its failed step; ignored otherwise; out of range refused', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const agent = await TestAgent.online({ url: node.url, agentId: 'w1', labels: ['linux'] });
    const { jobs } = await insertRun(db.pool, { jobs: [{ name: 'fails', runsOn: ['linux'] }, { name: 'passes', runsOn: ['linux'] }] });
    const codes = async (jobId: string) =>
      (await db.pool.one(sql.unsafe`
        SELECT j.exit_code AS job, (SELECT s.exit_code FROM job_steps s WHERE s.job_id = j.id AND s.index = 0) AS step FROM jobs j WHERE j.id = ${jobId}`)) as { job: number | null; step: number | null };
    const at = () => new Date().toISOString();

    const fails = jobs['fails']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === fails);
    agent.jobStatus(fails, 'running');
    agent.sendRaw({ type: 'step.status', jobId: fails, index: 0, name: 'test', status: 'failed', at: at(), reason: 'exit 3', exitCode: 3 });
    await until('step failed', async () => ((await codes(fails)).step === 3 ? true : undefined));
    // The final report's step entry without a code (an agent that lost it) keeps the recorded one.
    agent.jobStatus(fails, 'failed', { reason: 'step "test" failed: exit 3', exitCode: 3, steps: [{ name: 'test', status: 'failed', reason: 'exit 3' }] });
    await waitStatus(db.pool, fails, 'failed');
    t.same(await codes(fails), { job: 3, step: 3 }, 'the job and its failed step keep the exit code');

    const passes = jobs['passes']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === passes);
    agent.jobStatus(passes, 'running');
    agent.sendRaw({ type: 'step.status', jobId: passes, index: 0, name: 'test', status: 'completed', at: at(), exitCode: 4 });
    agent.jobStatus(passes, 'completed', { exitCode: 4, steps: [{ name: 'test', status: 'completed', exitCode: 4 }] });
    await waitStatus(db.pool, passes, 'completed');
    t.same(await codes(passes), { job: null, step: null }, 'an exit code means something only with a failure');

    agent.sendRaw({ type: 'step.status', jobId: passes, index: 1, name: 'x', status: 'failed', at: at(), exitCode: 0 });
    const refused = await agent.waitFor('protocol.error');
    t.match(refused.error, { code: 'SVC_ERR_PROTOCOL_INVALID', message: /exitCode/ }, 'exit code 0 is no failure: the frame is refused, naming the field');
    await agent.close();
  });
});
