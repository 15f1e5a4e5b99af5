// A step-level approval decided while the agent is away is not lost, with REAL processes
// (test/fixtures/jobs-stack.ts, test/fixtures/step-holds.ts): a static agent runs the job up to
// its held step 2 and is killed (SIGKILL); the job goes `recovering`; alice approves while no
// agent holds the job (the pushed decision reaches nobody); the agent is restarted with the same
// id and work dir inside the recovery window, resumes the job it held after its last finished
// step (docs/agent.md "When an agent restarts mid-job": step 1 is not run again), reaches step 2,
// asks, finds the hold already approved and runs the step: one hold, the run completes, steps 1
// and 2 ran once.
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { startJobsStack } from '../fixtures/jobs-stack.ts';
import { until } from '../fixtures/runs.ts';
import { count, holdsOf, logText, pausedAtDeploy, pushTo, runFor, shipOf, stepHeldWorkflow, stepsOf, terminalRun } from '../fixtures/step-holds.ts';

t.setTimeout(1_800_000);

await eachDatabase(t, async (t, db) => {
  const stack = await startJobsStack(t, db);
  const agentEnv = { SVC_AGENT_ID: 'step-hold-static', SVC_AGENT_WORK_DIR: join(stack.root, 'static-agent') };
  await stack.remote.commit({ 'README.md': 'step approval disconnect e2e\n' }, 'init');
  for (const branch of ['main', 'gate']) await stack.remote.push(`HEAD:refs/heads/${branch}`);
  await stack.pushWorkflow({ '.svc/workflows/gate.ts': stepHeldWorkflow('gate', 3600) }, 'add workflow');

  await t.test('approved while the agent is away: after it comes back the step runs, once', async (t) => {
    let agent = await stack.startAgent(agentEnv);
    const runId = await runFor(stack, await pushTo(stack, 'gate', 'disconnect'), 'gate');
    const ship = await pausedAtDeploy(t, stack, runId);

    agent.child.kill('SIGKILL');
    await agent.stop();
    const recovering = await until('the job to be recovering', async () => {
      const job = await shipOf(stack, runId);
      return job?.status === 'recovering' ? job : undefined;
    }, 60_000, 50);
    t.equal(recovering.agent_id, agentEnv.SVC_AGENT_ID, 'still owned by the agent');

    const approved = await stack.admin(['approvals', 'approve', runId, '--actor', 'alice', '--job', 'ship']);
    t.equal(approved.code, 0, `alice approves while the agent is away: ${approved.stderr}`);
    t.match(await holdsOf(stack, runId), [{ status: 'approved', outcome: 'approved by alice' }]);
    t.equal(count(await logText(stack, ship.id), 'marker: deploy ran'), 0, 'nothing ran it meanwhile');

    agent = await stack.startAgent(agentEnv);
    const run = await terminalRun(stack, runId);
    const job = (await shipOf(stack, runId))!;
    t.equal(run.status, 'completed', `the run completes (${run.reason ?? ''}; ship ${job.status} ${job.reason ?? ''})`);
    t.equal(job.attempts, 1, 'the same dispatch: nothing re-dispatched');
    const log = await logText(stack, ship.id);
    t.equal(count(log, 'marker: build ran'), 1, 'step 1 finished before the kill: not run again');
    t.equal(count(log, 'marker: deploy ran'), 1, 'step 2 ran once');
    t.equal(count(log, 'marker: notify ran'), 1, 'step 3 ran');
    t.match(log, /Approval approved by alice/, 'the resumed runner was answered with the decision');
    t.match(await stepsOf(stack, ship.id), [{ name: 'build', status: 'completed' }, { name: 'deploy', status: 'completed' }, { name: 'notify', status: 'completed' }]);
    t.equal((await holdsOf(stack, runId)).length, 1, 'asking again found the same hold');
    const votes = (await stack.pool.oneFirst(sql.unsafe`select count(*)::int from approval_votes where run_id = ${runId}`)) as number;
    t.equal(votes, 1, 'one decision');
    await agent.stop();
  });
});
