// Step-level approval holds on a real PostgreSQL: which steps a dispatch holds (`when`), the
// agent's request opening the hold (only the job's agent, only a held step), deciders (a
// non-approver ignored with a reason, released once), the decision pushed to the agent through
// NOTIFY, rejection, expiry, cancel of the run, and a job that ends while its step waits.
import t from 'tap';
import { answerStepHold } from '../../../../kernel/orchestrator/run-control/step-holds.ts';
import { heldSteps } from '../../../../kernel/orchestrator/run-control/gates-plan.ts';
import { decideRun, holdsOfRun } from '../../../../kernel/orchestrator/run-control/approvals.ts';
import { applyCommentCommand } from '../../../../kernel/orchestrator/run-control/comments.ts';
import { cancelRunIn } from '../../../../kernel/orchestrator/dispatch/cancel.ts';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import { AGENT_COMMANDS_CHANNEL } from '../../../../kernel/orchestrator/dispatch/notify.ts';
import { buildJobDispatch, loadDispatchRow } from '../../../../kernel/orchestrator/dispatch/message.ts';
import { progressRun, recordJobComplete } from '../../../../kernel/orchestrator/dispatch/progression.ts';
import { createListener, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import type { LockApproval, LockStep } from '../../../../schemas/lock.ts';
import type { RunPlan } from '../../../../kernel/orchestrator/runs/create.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { moveStatus, until } from '../../../fixtures/runs.ts';
import { isBarrier, notifyBarrier } from '../../../fixtures/notify-barrier.ts';
import { ALICE_ONLY, job, jobStates, lockWorkflow, migrated, newRun, pass } from './harness.ts';


const AGENT = 'agent-step-1';

function steps(approval: LockApproval): LockStep[] {
  return [
    { name: 'build', hasOutputs: false },
    { name: 'deploy', hasOutputs: false, approval },
    { name: 'notify', hasOutputs: false },
  ];
}

/** A run of one job `ship` whose step 2 (`deploy`) is held, dispatched to AGENT and running. */
async function runningJob(pool: DatabasePool, approval: LockApproval, overrides: Partial<RunPlan> = {}): Promise<{ runId: string; jobId: string }> {
  const runId = await newRun(pool, lockWorkflow([job('ship', { steps: steps(approval) })]), overrides);
  const jobId = (await jobStates(pool, runId))['ship']!.id;
  await pool.transaction(async (tx) => {
    await moveStatus(tx, 'jobs', jobId, 'dispatched');
    await tx.query(sql.unsafe`UPDATE jobs SET agent_id = ${AGENT}, attempts = 1 WHERE id = ${jobId}`);
    await moveStatus(tx, 'jobs', jobId, 'running');
  });
  return { runId, jobId };
}

const ask = (pool: DatabasePool, jobId: string, index = 1, name = 'deploy', agent = AGENT) =>
  answerStepHold(pool, agent, { type: 'approval.step.request', jobId, requestId: `req-${Math.random()}`, index, name });

interface Pushed {
  agentId: string;
  message?: { type: string; jobId: string; index: number; status: string; reason: string };
  jobId?: string;
  reason?: string;
}

t.test('heldSteps: the steps whose approval applies to the run, by index and name', async (t) => {
  const untrusted = steps({ ...ALICE_ONLY, when: 'untrusted' });
  t.same(heldSteps({ steps: steps(ALICE_ONLY) }, { trustTier: 'trusted', isFork: 'false' }), [{ index: 1, name: 'deploy' }]);
  t.same(heldSteps({ steps: untrusted }, { trustTier: 'trusted', isFork: 'false' }), [], 'untrusted-only gate: a trusted run is not held');
  t.same(heldSteps({ steps: untrusted }, { trustTier: 'unknown', isFork: 'false' }), [{ index: 1, name: 'deploy' }]);
  t.same(heldSteps({ steps: steps({ ...ALICE_ONLY, when: 'fork' }) }, { trustTier: 'trusted', isFork: 'unresolved' }), [{ index: 1, name: 'deploy' }], 'unresolved fork status holds');
  t.same(heldSteps(undefined, { trustTier: 'trusted', isFork: 'false' }), []);
});

t.test('step holds', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrated(db.pool);
    const pushed: Pushed[] = [];
    const listener = await createListener({ url: db.url, logger: testLogger });
    t.teardown(() => listener.close());
    await listener.listen(AGENT_COMMANDS_CHANNEL, (payload) => pushed.push(JSON.parse(payload) as Pushed));
    const decisionsFor = (jobId: string) => pushed.filter((p) => p.message?.type === 'approval.step.decision' && p.message.jobId === jobId);
    const decide = (runId: string, actor: string, decision: 'approve' | 'reject' = 'approve', comment?: string) =>
      decideRun(db.pool, { orgId: 'org-1', runId, actor, decision, via: 'comment', ...(comment !== undefined ? { comment } : {}) });

    await t.test('the dispatch lists the held steps (when applied); the runner pauses before them', async (t) => {
      const { jobId } = await runningJob(db.pool, { ...ALICE_ONLY, reason: 'production' });
      const row = await loadDispatchRow(db.pool, jobId);
      const dispatch = await buildJobDispatch(row!, { pool: db.pool, storage: undefined, sourceAuth: undefined, logger: testLogger, agentOs: 'linux', agentArch: 'x64' });
      t.same(dispatch.jobConfig.approvalSteps, [{ index: 1, name: 'deploy' }]);
      const trusted = await runningJob(db.pool, { ...ALICE_ONLY, when: 'untrusted' }, { trustTier: 'trusted' });
      const plain = await buildJobDispatch((await loadDispatchRow(db.pool, trusted.jobId))!, { pool: db.pool, storage: undefined, sourceAuth: undefined, logger: testLogger, agentOs: 'linux', agentArch: 'x64' });
      t.equal(plain.jobConfig.approvalSteps, undefined, 'a gate whose `when` does not apply holds nothing');
    });

    await t.test('the job waits running; a non-approver is ignored with a reason; two approvals release it once and the agent is told', async (t) => {
      const { runId, jobId } = await runningJob(db.pool, { ...ALICE_ONLY, reason: 'production deploy', timeoutSeconds: 3600 });
      const first = await ask(db.pool, jobId);
      t.match(first, { type: 'approval.step.response', status: 'pending', reason: 'Awaiting approval (step deploy): production deploy' });
      const again = await ask(db.pool, jobId);
      t.equal(again.status, 'pending', 'asking again finds the same hold');
      const holds = await holdsOfRun(db.pool, runId);
      t.equal(holds.length, 1, 'one hold, however often the agent asks');
      t.match(holds[0], { level: 'step', job_id: jobId, step_index: 1, step_name: 'deploy', status: 'pending', reason: 'production deploy', timeout_seconds: 3600 });
      t.match((await jobStates(db.pool, runId))['ship'], { status: 'running', reason: 'Awaiting approval (step deploy): production deploy' }, 'the job keeps its agent and says what it waits for');

      const ignored = await decide(runId, 'mallory');
      t.equal(ignored.decisions[0]?.counted, false);
      t.match(ignored.decisions[0], { level: 'step', step: 'deploy', job: 'ship' });
      t.match(ignored.decisions[0]?.ignoredReason, /mallory may not decide this step hold: it needs 1 of users alice/);
      t.equal((await ask(db.pool, jobId)).status, 'pending', 'still held');

      const both = await Promise.all([decide(runId, 'alice'), decide(runId, 'ALICE')]);
      const counted = both.filter((r) => r.decisions[0]?.counted === true);
      t.equal(counted.length, 1, 'exactly one decision counted');
      t.equal(counted[0]?.decisions[0]?.status, 'approved');
      t.match(counted[0]?.message, /^step deploy of job ship: approved$/);
      t.match(both.find((r) => r.decisions[0]?.counted !== true)?.decisions[0]?.ignoredReason, /its step hold is approved/);
      const told = await until('the decision is pushed to the agent', () => (decisionsFor(jobId).length > 0 ? decisionsFor(jobId) : undefined));
      t.match(told[0], { agentId: AGENT, message: { jobId, index: 1, status: 'approved', reason: /^Approval approved by (alice|ALICE)$/ } });
      // Both decisions committed: a second push would arrive before a NOTIFY sent now.
      await notifyBarrier(db.pool, AGENT_COMMANDS_CHANNEL, (id) => pushed.some((p) => isBarrier(p, id)));
      t.equal(decisionsFor(jobId).length, 1, 'released once: one push');
      t.match(await ask(db.pool, jobId), { status: 'approved', reason: /^Approval approved by (alice|ALICE)$/ }, 'a later ask (reconnect, redispatch) gets the decision');
      t.match((await jobStates(db.pool, runId))['ship'], { status: 'running', reason: null }, 'the waiting reason is cleared');
    });

    await t.test('rejection: the agent is told the reason (it fails the step); a later approval starts nothing', async (t) => {
      const { runId, jobId } = await runningJob(db.pool, ALICE_ONLY);
      await ask(db.pool, jobId);
      const r = await decide(runId, 'alice', 'reject', 'not today');
      t.equal(r.decisions[0]?.status, 'rejected');
      const told = await until('the rejection is pushed', () => decisionsFor(jobId)[0]);
      t.match(told.message, { status: 'rejected', reason: 'Approval rejected by alice: not today' });
      t.match(await ask(db.pool, jobId), { status: 'rejected', reason: 'Approval rejected by alice: not today' });
      const late = await decide(runId, 'alice');
      t.match(late.decisions[0]?.ignoredReason, /its step hold is rejected \(rejected by alice: not today\)/);
      t.equal((await jobStates(db.pool, runId))['ship']!.status, 'running', 'the agent ends the job (the step fails, later steps skipped)');
    });

    await t.test('expiry: no decision within timeoutSeconds ends the hold with its reason', async (t) => {
      const { runId, jobId } = await runningJob(db.pool, { ...ALICE_ONLY, timeoutSeconds: 60 });
      await ask(db.pool, jobId);
      await pass(db.pool);
      t.equal((await holdsOfRun(db.pool, runId))[0]?.status, 'pending', 'not before its time');
      // Its minute passes: the hold is moved an hour back whole (its timeout stays 60 s).
      await db.pool.query(sql.unsafe`UPDATE approval_holds SET created_at = created_at - interval '1 hour', expires_at = expires_at - interval '1 hour' WHERE run_id = ${runId}`);
      t.ok((await pass(db.pool)).expired >= 1);
      const told = await until('the expiry is pushed', () => decisionsFor(jobId)[0]);
      t.match(told.message, { status: 'expired', reason: /^Approval expired: no decision within 60 s/ });
      t.match((await holdsOfRun(db.pool, runId))[0], { status: 'expired', outcome: /^expired: no decision within 60 s/ });
    });

    await t.test('cancelling the run while the step waits: the hold is cancelled, the agent told to cancel, a later approval starts nothing', async (t) => {
      const { runId, jobId } = await runningJob(db.pool, ALICE_ONLY);
      await ask(db.pool, jobId);
      await cancelRunIn(db.pool, runId, 'bob');
      await until('job.cancel is sent to the agent', () => pushed.find((p) => p.jobId === jobId && p.message === undefined));
      t.match((await holdsOfRun(db.pool, runId))[0], { status: 'cancelled', outcome: 'cancelled: Cancelled by bob' });
      const late = await decide(runId, 'alice');
      t.equal(late.decisions[0]?.counted, false);
      t.match(late.decisions[0]?.ignoredReason, /its step hold is cancelled/);
      t.equal(decisionsFor(jobId).length, 0, 'no approval reaches the agent');
      t.match(await ask(db.pool, jobId), { status: 'cancelled' }, 'the agent asking again learns it is cancelled');
    });

    await t.test('a job that ends while its step waits ends the hold with it', async (t) => {
      const { runId, jobId } = await runningJob(db.pool, ALICE_ONLY);
      await ask(db.pool, jobId);
      await db.pool.transaction(async (tx) => {
        await moveStatus(tx, 'jobs', jobId, 'failed');
        await recordJobComplete(tx, runId, jobId, 'failed', { reason: 'job timed out after 1000 ms' });
        await progressRun(tx, runId);
      });
      t.match((await holdsOfRun(db.pool, runId))[0], { status: 'cancelled', outcome: 'cancelled: the job ended failed' });
      t.match((await decide(runId, 'alice')).decisions[0]?.ignoredReason, /its step hold is cancelled/);
    });

    await t.test('/svc approve in a pull-request comment decides a step hold: a non-approver ignored with the reason, the approver releases it', async (t) => {
      const event = { provider: 'github', eventName: 'pull_request', pullRequest: { number: 41 }, repository: { fullName: 'acme/widgets' } } as unknown as NormalizedEvent;
      const { runId, jobId } = await runningJob(db.pool, ALICE_ONLY, { event, subjectKind: 'pull_request' });
      await ask(db.pool, jobId);
      let n = 0;
      const comment = async (author: string) => {
        const deliveryId = `step-comment-${(n += 1)}`;
        await db.pool.query(sql.unsafe`
          INSERT INTO approval_commands (id, org_id, delivery_id, repository, pull_request, command, argument, author)
          VALUES (gen_random_uuid(), 'org-1', ${deliveryId}, 'acme/widgets', 41, 'approve', '', ${author})`);
        return applyCommentCommand(db.pool, { orgId: 'org-1', deliveryId, repository: 'acme/widgets', pullRequest: 41, author, command: 'approve', argument: '' });
      };
      t.match(await comment('mallory'), /ignored: mallory may not decide this step hold: it needs 1 of users alice/);
      t.equal((await holdsOfRun(db.pool, runId))[0]?.status, 'pending');
      t.equal(decisionsFor(jobId).length, 0, 'nothing pushed for an ignored command');
      t.match(await comment('alice'), /step deploy of job ship: approved/);
      t.match(await until('the approval is pushed', () => decisionsFor(jobId)[0]), { message: { status: 'approved', reason: 'Approval approved by alice' } });
      t.match((await holdsOfRun(db.pool, runId))[0]?.votes, [{ actor: 'mallory', via: 'comment', counted: false }, { actor: 'alice', via: 'comment', counted: true }]);
    });

    await t.test('refused requests change nothing: another agent, a step the lock does not hold, a step it does not have', async (t) => {
      const { runId, jobId } = await runningJob(db.pool, ALICE_ONLY);
      await t.rejects(ask(db.pool, jobId, 1, 'deploy', 'agent-other'), { code: 'SVC_ERR_APPROVAL_STEP_NOT_OWNER', message: /agent agent-other is not running job/ });
      await t.rejects(ask(db.pool, jobId, 0, 'build'), { code: 'SVC_ERR_APPROVAL_STEP_NOT_HELD', message: /step build of job ship has no approval/ });
      await t.rejects(ask(db.pool, jobId, 1, 'renamed'), { code: 'SVC_ERR_APPROVAL_STEP_UNKNOWN', message: /job ship has no step "renamed" at index 1/ });
      await t.rejects(ask(db.pool, jobId, 9, 'deploy'), { code: 'SVC_ERR_APPROVAL_STEP_UNKNOWN' });
      await t.rejects(ask(db.pool, '00000000-0000-4000-8000-000000000000'), { code: 'SVC_ERR_APPROVAL_STEP_JOB_NOT_FOUND' });
      t.equal((await holdsOfRun(db.pool, runId)).length, 0, 'no hold was opened');
      t.equal((await jobStates(db.pool, runId))['ship']!.reason, null);
    });
  });
});
