// Step-level approval holds end to end with REAL processes (test/fixtures/jobs-stack.ts):
// svc-relay, svc-orchestrator, one svc-agent running the job's steps in its process sandbox, real
// PostgreSQL, a bare repository with the post-receive hook. The job `ship` has three steps; step 2
// (`deploy`) is held for alice. Each step prints a marker line, so the job's log shows which
// steps ran. Checked:
//   - step 1 runs, the job pauses before step 2 (still `running`, its reason says what it waits
//     for, one pending step hold, step 2's marker absent for several seconds);
//   - `svc approve` by mallory (through the relay) exits 1 with the reason and changes nothing;
//   - alice's approval through the relay route and `svc-admin approvals approve` at the same time:
//     one counted, step 2 runs once, step 3 runs, the run completes;
//   - `svc reject` by alice: step 2 fails with the reason, step 3 is skipped, the run fails;
//   - an unanswered hold expires: step 2 fails with the expiry, the run fails;
//   - cancelling the run while step 2 waits: the hold is cancelled, the job cancelled, alice's
//     later approval is ignored with the reason and runs nothing.
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase, type Test } from '../fixtures/db.ts';
import { ORG, startJobsStack, type JobsStack } from '../fixtures/jobs-stack.ts';
import { REPO_ROOT, runProgram } from '../fixtures/programs.ts';
import { until } from '../fixtures/runs.ts';

t.setTimeout(1_800_000);

const EXPIRY_S = 6;

const workflow = (name: string, timeoutSeconds: number) => `import { job, push, step, workflow } from 'svc/sdk';
export default workflow('${name}', {
  on: push({ branches: ['${name}'] }),
  jobs: {
    ship: job({
      runsOn: 'e2e',
      steps: [
        step('build', async () => { console.log('marker: build ran'); }),
        step('deploy', async () => { console.log('marker: deploy ran'); }, {
          approval: { clauses: [{ users: ['alice'] }], reason: 'production deploy', timeoutSeconds: ${timeoutSeconds} },
        }),
        step('notify', async () => { console.log('marker: notify ran'); }),
      ],
    }),
  },
});
`;

interface Job {
  id: string;
  status: string;
  reason: string | null;
}
interface Hold {
  level: string;
  step_index: number | null;
  step_name: string | null;
  status: string;
  outcome: string | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function shipOf(stack: JobsStack, runId: string): Promise<Job | null> {
  return (await stack.pool.maybeOne(sql.unsafe`select id::text as id, status, reason from jobs where run_id = ${runId} and name = 'ship'`)) as Job | null;
}

async function holdsOf(stack: JobsStack, runId: string): Promise<Hold[]> {
  return (await stack.pool.any(sql.unsafe`
    select level, step_index, step_name, status, outcome from approval_holds where run_id = ${runId} order by created_at`)) as unknown as Hold[];
}

async function logText(stack: JobsStack, jobId: string): Promise<string> {
  const rows = (await stack.pool.any(sql.unsafe`select lines from job_logs where job_id = ${jobId} order by seq`)) as unknown as Array<{ lines: Array<{ text: string }> }>;
  return rows.flatMap((r) => r.lines.map((l) => l.text)).join('\n');
}

async function stepsOf(stack: JobsStack, jobId: string): Promise<Array<{ name: string; status: string; reason: string | null }>> {
  return (await stack.pool.any(sql.unsafe`select name, status, reason from job_steps where job_id = ${jobId} order by index`)) as unknown as Array<{ name: string; status: string; reason: string | null }>;
}

const count = (text: string, marker: string) => text.split('\n').filter((l) => l.includes(marker)).length;

/** A commit pushed to `branch` (its workflow runs there only); the hook must have delivered it. */
async function pushTo(stack: JobsStack, branch: string, note: string): Promise<string> {
  const sha = await stack.remote.commit({ 'notes.txt': `${branch} ${note}\n` }, `${branch}: ${note}`);
  const pushed = await stack.remote.push(`HEAD:refs/heads/${branch}`);
  if (/NOT delivered/.test(pushed.stderr)) throw new Error(`the hook did not deliver the push to ${branch}: ${pushed.stderr}`);
  return sha;
}

async function runFor(stack: JobsStack, sha: string, name: string): Promise<string> {
  return until(`the ${name} run of ${sha.slice(0, 8)}`, async () => {
    const id = (await stack.pool.maybeOneFirst(sql.unsafe`select id::text from runs where sha = ${sha} and workflow = ${name} and parent_run_id is null`)) as string | null;
    return id ?? undefined;
  }, 180_000, 100);
}

async function terminalRun(stack: JobsStack, runId: string): Promise<{ status: string; reason: string | null }> {
  return until(`run ${runId} to end`, async () => {
    const run = (await stack.pool.one(sql.unsafe`select status, reason from runs where id = ${runId}`)) as { status: string; reason: string | null };
    return ['completed', 'failed', 'cancelled', 'skipped'].includes(run.status) ? run : undefined;
  }, 240_000, 200);
}

/** The run's `ship` job once it waits before step 2 (step 1 done, one pending step hold). */
async function pausedAtDeploy(t: Test, stack: JobsStack, runId: string): Promise<Job> {
  const job = await until('ship to pause before deploy', async () => {
    const ship = await shipOf(stack, runId);
    if (ship !== null && ['completed', 'failed', 'cancelled', 'skipped'].includes(ship.status)) throw new Error(`ship ended ${ship.status} (${ship.reason ?? ''}) without pausing`);
    const holds = await holdsOf(stack, runId);
    return ship !== null && holds.some((h) => h.status === 'pending') ? ship : undefined;
  }, 240_000, 100);
  t.match(await holdsOf(stack, runId), [{ level: 'step', step_index: 1, step_name: 'deploy', status: 'pending' }], 'one pending hold on step 2');
  const ship = (await shipOf(stack, runId))!;
  t.match(ship, { status: 'running', reason: 'Awaiting approval (step deploy): production deploy' }, 'the job keeps running on its agent and says what it waits for');
  const log = await until('step 1 output in the log', async () => {
    const text = await logText(stack, job.id);
    return text.includes('marker: build ran') && text.includes('waiting for an approval before this step runs') ? text : undefined;
  }, 60_000, 200);
  t.equal(count(log, 'marker: deploy ran'), 0, 'step 2 has not run');
  return ship;
}

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
  await stack.pushWorkflow({ '.svc/workflows/gate.ts': workflow('gate', 3600), '.svc/workflows/expiring.ts': workflow('expiring', EXPIRY_S) }, 'add workflows');
  await stack.startAgent({ SVC_AGENT_ID: 'step-approvals-agent' });

  await t.test('step 1 runs, step 2 waits; a non-approver is ignored with the reason; two approvals resume it once', async (t) => {
    const runId = await runFor(stack, await pushTo(stack, 'gate', 'approve'), 'gate');
    const ship = await pausedAtDeploy(t, stack, runId);

    const mallory = await svcAs('mallory', ['approve', runId]);
    t.equal(mallory.code, 1, 'svc approve by a non-approver exits 1');
    t.match(mallory.stderr, /not counted: mallory may not decide this step hold: it needs 1 of users alice/);
    t.match(await votesOf(runId), [{ actor: 'mallory', decision: 'approve', via: 'cli', counted: false, ignored_reason: /mallory may not decide this step hold/ }]);
    // Still waiting: a wait far longer than the push of a decision takes.
    await sleep(5_000);
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
    await sleep(3_000);
    t.equal(count(await logText(stack, ship.id), 'marker: deploy ran'), 0, 'step 2 never ran');
    t.equal((await stack.pool.oneFirst(sql.unsafe`select status from runs where id = ${runId}`)) as string, 'cancelled', 'the run stays cancelled');
  });
});
