// Step-level approval holds end to end with REAL processes (test/fixtures/jobs-stack.ts):
// svc-relay, svc-orchestrator, one svc-agent running the job's steps in its process sandbox, real
// PostgreSQL, a bare repository with the post-receive hook. The job `ship` has three steps; step 2
// (`deploy`) is held for alice (test/fixtures/step-holds.ts). Each step prints a marker line, so
// the job's log shows which steps ran. Checked:
//   - step 1 runs, the job pauses before step 2 (still `running`, its reason says what it waits
//     for, one pending step hold, step 2's marker absent until alice decides);
//   - `svc approve` by mallory (through the relay) exits 1 with the reason and changes nothing;
//   - alice's approval through the relay route and `svc-admin approvals approve` at the same time:
//     one counted, step 2 runs once, step 3 runs, the run completes;
//   - `svc reject` by alice: step 2 fails with the reason, step 3 is skipped, the run fails;
//   - an unanswered hold expires (still pending after two run-control passes, then its time moved
//     in the database, not waited out): step 2 fails with the expiry, the run fails;
//   - cancelling the run while step 2 waits: the hold is cancelled, the job cancelled, alice's
//     later approval is ignored with the reason and runs nothing.
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { ORG, startJobsStack } from '../fixtures/jobs-stack.ts';
import { morePasses, RUN_CONTROL_PASSES } from '../fixtures/passes.ts';
import { REPO_ROOT, runProgram } from '../fixtures/programs.ts';
import { count, holdsOf, logText, pausedAtDeploy, pushTo, runFor, shipOf, stepHeldWorkflow, stepsOf, terminalRun } from '../fixtures/step-holds.ts';

t.setTimeout(1_800_000);

const EXPIRY_S = 60;

await eachDatabase(t, async (t, db) => {
  const stack = await startJobsStack(t, db);
  const pat = async (user: string): Promise<string> => {
    const out = await stack.relayAdmin(['relay', 'pat', 'create', ORG, '--user', user, '--json']);
    if (out.code !== 0) throw new Error(`svc-admin relay pat create: ${out.stderr}`);
    return (JSON.parse(out.stdout) as { token: string }).token;
  };
  const tokens = { alice: await pat('alice'), mallory: await pat('mallory'), carol: await pat('carol') };
  const svcAs = (user: keyof typeof tokens, args: string[]) =>
    runProgram(join(REPO_ROOT, 'bin/svc.ts'), args, {
      env: { PATH: process.env['PATH'], HOME: stack.root, XDG_CONFIG_HOME: join(stack.root, `svc-${user}`), SVC_PLATFORM_URL: stack.relayUrl, SVC_TOKEN: tokens[user], SVC_ORG: ORG },
      timeoutMs: 60_000,
    });
  const relayPost = (user: keyof typeof tokens, path: string, body?: unknown) =>
    fetch(`${stack.relayUrl}/orgs/${ORG}/runs/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens[user]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const votesOf = async (runId: string) =>
    (await stack.pool.any(sql.unsafe`select actor, decision, via, counted, ignored_reason from approval_votes where run_id = ${runId} order by created_at, id`)) as unknown as Array<{
      actor: string;
      decision: string;
      via: string;
      counted: boolean;
      ignored_reason: string | null;
    }>;

  await stack.remote.commit({ 'README.md': 'step approvals e2e\n' }, 'init');
  for (const branch of ['main', 'gate', 'expiring']) await stack.remote.push(`HEAD:refs/heads/${branch}`);
  await stack.pushWorkflow({ '.svc/workflows/gate.ts': stepHeldWorkflow('gate', 3600), '.svc/workflows/expiring.ts': stepHeldWorkflow('expiring', EXPIRY_S) }, 'add workflows');
  await stack.startAgent({ SVC_AGENT_ID: 'step-approvals-agent' });

  await t.test('step 1 runs, step 2 waits; a non-approver is ignored with the reason; two approvals resume it once', async (t) => {
    const runId = await runFor(stack, await pushTo(stack, 'gate', 'approve'), 'gate');
    const ship = await pausedAtDeploy(t, stack, runId);

    const mallory = await svcAs('mallory', ['approve', runId]);
    t.equal(mallory.code, 1, 'svc approve by a non-approver exits 1');
    t.match(mallory.stderr, /not counted: mallory may not decide this step hold: it needs 1 of users alice/);
    t.match(await votesOf(runId), [{ actor: 'mallory', decision: 'approve', via: 'cli', counted: false, ignored_reason: /mallory may not decide this step hold/ }]);
    // Still waiting. A decision reaches the step only as a push (sent at its commit, in order) or
    // when the agent asks again; so anything mallory's vote had let through would reach the step
    // before alice's approval below, and the step would go on with it: the log's one decision
    // line, alice's, shows nothing did (no wait needed).
    t.match(await shipOf(stack, runId), { status: 'running', reason: /^Awaiting approval \(step deploy\)/ });
    t.equal(count(await logText(stack, ship.id), 'marker: deploy ran'), 0, 'step 2 still has not run');

    const [viaRoute, viaAdmin] = await Promise.all([
      relayPost('alice', `${runId}/approve`, { comment: 'ship it' }).then(async (res) => ({ status: res.status, body: JSON.parse(await res.text()) as { decisions: Array<{ counted: boolean; status: string; level: string; step?: string }>; message: string } })),
      stack.admin(['approvals', 'approve', runId, '--actor', 'alice', '--job', 'ship']),
    ]);
    t.equal(viaRoute.status, 200, JSON.stringify(viaRoute.body));
    const votes = (await votesOf(runId)).filter((v) => v.actor === 'alice');
    t.equal(votes.length, 2, 'both approvals are recorded');
    t.equal(votes.filter((v) => v.counted).length, 1, 'one of them counted');
    const routeCounted = viaRoute.body.decisions[0]?.counted === true;
    if (routeCounted) t.match(viaRoute.body, { decisions: [{ level: 'step', step: 'deploy', status: 'approved' }], message: 'step deploy of job ship: approved' });
    else t.equal(viaAdmin.code, 0, `svc-admin approvals approve counted: ${viaAdmin.stderr}`);

    const run = await terminalRun(stack, runId);
    t.equal(run.status, 'completed', `the run completes (${run.reason ?? ''})`);
    const log = await logText(stack, ship.id);
    t.equal(count(log, 'marker: deploy ran'), 1, 'step 2 ran once');
    t.equal(count(log, 'marker: notify ran'), 1, 'step 3 ran');
    t.match(log, /Approval approved by alice/);
    t.equal(count(log, 'Approval '), 1, "the step went on with one decision, alice's");
    t.match(await stepsOf(stack, ship.id), [{ name: 'build', status: 'completed' }, { name: 'deploy', status: 'completed' }, { name: 'notify', status: 'completed' }]);
    t.match(await holdsOf(stack, runId), [{ status: 'approved', outcome: 'approved by alice' }]);
  });

  await t.test('svc reject: step 2 fails with the reason, step 3 is skipped, the run fails', async (t) => {
    const runId = await runFor(stack, await pushTo(stack, 'gate', 'reject'), 'gate');
    const ship = await pausedAtDeploy(t, stack, runId);
    const rejected = await svcAs('alice', ['reject', runId, '--comment', 'not today']);
    t.equal(rejected.code, 0, rejected.stderr);
    const run = await terminalRun(stack, runId);
    t.equal(run.status, 'failed');
    t.match((await shipOf(stack, runId))!, { status: 'failed', reason: /step "deploy" failed: Approval rejected by alice: not today/ });
    t.match(await stepsOf(stack, ship.id), [
      { name: 'build', status: 'completed' },
      { name: 'deploy', status: 'failed', reason: 'Approval rejected by alice: not today' },
      { name: 'notify', status: 'skipped', reason: 'an earlier step failed' },
    ]);
    const log = await logText(stack, ship.id);
    t.equal(count(log, 'marker: deploy ran'), 0, 'step 2 never ran');
    t.equal(count(log, 'marker: notify ran'), 0, 'step 3 never ran');
    t.match(await holdsOf(stack, runId), [{ status: 'rejected', outcome: 'rejected by alice: not today' }]);
  });

  await t.test(`an unanswered hold expires after ${EXPIRY_S} s: step 2 fails with the expiry`, async (t) => {
    const runId = await runFor(stack, await pushTo(stack, 'expiring', 'expire'), 'expiring');
    const ship = await pausedAtDeploy(t, stack, runId);
    // Not before its time: two whole run-control passes (the worker that expires holds) leave it pending.
    await morePasses(stack.orchUrl, RUN_CONTROL_PASSES);
    t.match(await holdsOf(stack, runId), [{ status: 'pending' }], 'not before its time');
    t.match(await shipOf(stack, runId), { status: 'running', reason: /^Awaiting approval \(step deploy\)/ });
    // Its minute passes: the hold is moved an hour back whole (its timeout stays 60 s).
    await stack.pool.query(sql.unsafe`UPDATE approval_holds SET created_at = created_at - interval '1 hour', expires_at = expires_at - interval '1 hour' WHERE run_id = ${runId}`);
    const run = await terminalRun(stack, runId);
    t.equal(run.status, 'failed');
    t.match((await shipOf(stack, runId))!, { status: 'failed', reason: new RegExp(`step "deploy" failed: Approval expired: no decision within ${EXPIRY_S} s`) });
    t.match(await stepsOf(stack, ship.id), [{ name: 'build', status: 'completed' }, { name: 'deploy', status: 'failed' }, { name: 'notify', status: 'skipped' }]);
    t.match(await holdsOf(stack, runId), [{ status: 'expired', outcome: new RegExp(`^expired: no decision within ${EXPIRY_S} s`) }]);
    t.equal(count(await logText(stack, ship.id), 'marker: deploy ran'), 0, 'step 2 never ran');
  });

  await t.test('cancelling the run while step 2 waits: hold cancelled, job cancelled, a later approval runs nothing', async (t) => {
    const runId = await runFor(stack, await pushTo(stack, 'gate', 'cancel'), 'gate');
    const ship = await pausedAtDeploy(t, stack, runId);
    const cancelled = await relayPost('carol', `${runId}/cancel`);
    t.equal(cancelled.status, 200, await cancelled.text());
    const run = await terminalRun(stack, runId);
    t.equal(run.status, 'cancelled');
    t.equal((await shipOf(stack, runId))!.status, 'cancelled');
    t.match(await holdsOf(stack, runId), [{ status: 'cancelled' }]);
    const late = await svcAs('alice', ['approve', runId]);
    t.equal(late.code, 1, 'the late approval is not counted');
    t.match(late.stderr, /its step hold is cancelled/);
    // The agent reported the job ended (ship cancelled above) before this approval: nothing of it
    // can run any more. The run-control worker gets two whole passes to change the run.
    await morePasses(stack.orchUrl, RUN_CONTROL_PASSES);
    t.equal(count(await logText(stack, ship.id), 'marker: deploy ran'), 0, 'step 2 never ran');
    t.equal((await stack.pool.oneFirst(sql.unsafe`select status from runs where id = ${runId}`)) as string, 'cancelled', 'the run stays cancelled');
  });
});
