// Approve and reject a held run through a real relay to a real orchestrator (startOrchestrator with
// the kernel subsystems) over the real WebSocket link, on real PostgreSQL: runs are pushed through
// the relay for a workflow that needs alice's approval and start `held`. Covers approval by an
// approver (the run leaves `held`), a decision by someone else (200, not counted, with why), a
// reject (the run ends `cancelled` with the reason), the dashboard and the /v1 (CLI) forms, another
// org's token (403), bad bodies (400), unknown runs (404), and the orchestrator-side answer.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { holdsOfRun } from '../../../../kernel/orchestrator/run-control/approvals.ts';
import { answerDashboardRequest, type RunsApiDeps } from '../../../../kernel/orchestrator/runs/api/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { SHA_A } from '../../../fixtures/github-payloads.ts';
import { heldWorkflow, pushHeldRun } from '../../../fixtures/held-runs.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { insertRun, until } from '../../../fixtures/runs.ts';


interface Answer {
  status: number;
  body: any;
}

async function post(url: string, headers: Record<string, string>, body?: unknown, contentType = 'application/json'): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: body === undefined ? headers : { ...headers, 'content-type': contentType },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  stack.forge.putLock(SHA_A, [heldWorkflow()]);
  const base = stack.relayUrl;
  const alice = stack.auth(await stack.pat('alice'));
  const bob = stack.auth(await stack.pat('bob'));
  const mallory = stack.auth(await stack.pat('mallory', OTHER_ORG));
  const runStatus = async (runId: string) => (await db.pool.one(sql.unsafe`select status, reason from runs where id = ${runId}`)) as { status: string; reason: string | null };
  const votes = async (runId: string) =>
    (await db.pool.any(sql.unsafe`select actor, decision, via, comment, counted, ignored_reason from approval_votes where run_id = ${runId} order by created_at, id`)) as Array<{
      actor: string;
      decision: string;
      via: string;
      comment: string;
      counted: boolean;
      ignored_reason: string | null;
    }>;

  await t.test('dashboard: someone else is told why and the run stays held; the approver releases it', async (t) => {
    const { runId } = await pushHeldRun(stack);
    const url = `${base}/orgs/${ORG}/runs/${runId}/approve`;

    const ignored = await post(url, bob, {});
    t.equal(ignored.status, 200, 'a decision the hold does not count is not an error');
    t.equal(ignored.body.runId, runId);
    t.equal(ignored.body.runStatus, 'held');
    t.equal(ignored.body.decisions.length, 1);
    t.match(ignored.body.decisions[0], { level: 'workflow', job: null, status: 'pending', counted: false });
    t.match(ignored.body.decisions[0].ignoredReason, /bob may not decide this workflow hold: it needs 1 of users alice/);
    t.match(ignored.body.message, /bob may not decide/);
    t.equal((await runStatus(runId)).status, 'held');

    const approved = await post(url, alice, { comment: 'looks good' });
    t.equal(approved.status, 200, JSON.stringify(approved.body));
    t.match(approved.body.decisions, [{ level: 'workflow', status: 'approved', counted: true }]);
    t.match(approved.body.message, /the run: approved/);
    t.not(approved.body.runStatus, 'held');
    const after = await until('the run to leave held', async () => {
      const row = await runStatus(runId);
      return row.status === 'held' ? undefined : row;
    }, 30_000, 50);
    t.ok(['queued', 'running'].includes(after.status), `run is ${after.status}`);
    t.match(await votes(runId), [
      { actor: 'bob', decision: 'approve', via: 'dashboard', counted: false },
      { actor: 'alice', decision: 'approve', via: 'dashboard', comment: 'looks good', counted: true, ignored_reason: null },
    ]);
    const [hold] = await holdsOfRun(db.pool, runId);
    t.match(hold, { status: 'approved', outcome: 'approved by alice' });

    const again = await post(url, alice);
    t.equal(again.status, 200, 'no body at all is an empty decision');
    t.match(again.body.decisions, [{ counted: false, status: 'approved' }]);
    t.match(again.body.message, /nothing on run .* awaits approval: its workflow hold is approved/);
  });

  await t.test('CLI form (/v1): reject ends the run cancelled with the reason; recorded via cli', async (t) => {
    const { runId } = await pushHeldRun(stack);
    const res = await post(`${base}/v1/orgs/${ORG}/runs/${runId}/reject`, alice, { comment: 'not this week' });
    t.equal(res.status, 200, JSON.stringify(res.body));
    t.match(res.body, { runId, runStatus: 'cancelled', decisions: [{ level: 'workflow', status: 'rejected', counted: true }] });
    t.match(res.body.message, /the run: rejected/);
    const row = await until('the run to be cancelled', async () => {
      const r = await runStatus(runId);
      return r.status === 'cancelled' ? r : undefined;
    }, 30_000, 50);
    t.match(row.reason, /rejected by alice: not this week/);
    t.match(await votes(runId), [{ actor: 'alice', decision: 'reject', via: 'cli', comment: 'not this week', counted: true }]);
    const jobs = (await db.pool.any(sql.unsafe`select status from jobs where run_id = ${runId}`)) as Array<{ status: string }>;
    t.ok(jobs.every((j) => ['cancelled', 'skipped'].includes(j.status)), `no job left to run: ${jobs.map((j) => j.status).join(', ')}`);

    const late = await post(`${base}/v1/orgs/${ORG}/runs/${runId}/approve`, alice, {});
    t.equal(late.status, 200);
    t.match(late.body.decisions, [{ counted: false, status: 'rejected' }], 'an approval after a rejection starts nothing');
    t.equal((await runStatus(runId)).status, 'cancelled');
  });

  await t.test('auth: another org\'s token is refused (403), no token 401; nothing is recorded', async (t) => {
    const { runId } = await pushHeldRun(stack);
    for (const path of [`/orgs/${ORG}/runs/${runId}/approve`, `/orgs/${ORG}/runs/${runId}/reject`, `/v1/orgs/${ORG}/runs/${runId}/approve`, `/v1/orgs/${ORG}/runs/${runId}/reject`]) {
      const refused = await post(`${base}${path}`, mallory, {});
      t.equal(refused.status, 403, path);
      t.equal(refused.body.error.code, 'SVC_ERR_RELAY_AUTH_WRONG_ORG');
      t.equal((await post(`${base}${path}`, stack.auth(stack.otherOrgToken), {})).status, 403, `${path}: another org's platform token`);
      t.equal((await post(`${base}${path}`, {}, {})).status, 401, `${path}: no token`);
    }
    t.same(await votes(runId), [], 'no vote recorded');
    t.equal((await runStatus(runId)).status, 'held');
  });

  await t.test('bad input: unknown field, comment too long, empty job, not an object (400); unknown run and other org\'s run (404)', async (t) => {
    const { runId } = await pushHeldRun(stack);
    const url = `${base}/v1/orgs/${ORG}/runs/${runId}/approve`;
    const extra = await post(url, alice, { comment: 'ok', actor: 'alice' });
    t.equal(extra.status, 400);
    t.equal(extra.body.error.code, 'SVC_ERR_HTTP_INVALID_BODY');
    t.match(extra.body.error.message, /actor: unknown field/);
    const long = await post(url, alice, { comment: 'x'.repeat(2001) });
    t.equal(long.status, 400);
    t.match(long.body.error.message, /comment/);
    t.equal((await post(url, alice, { job: '' })).status, 400, 'empty job name');
    t.equal((await post(url, alice, { comment: 7 })).status, 400, 'comment of the wrong type');
    // Text PostgreSQL cannot store was an internal error from the orchestrator (found by the fuzz test).
    for (const comment of ['a\u0000b', 'half \ud800 pair']) {
      const unstorable = await post(url, alice, { comment });
      t.equal(unstorable.status, 400, `comment ${JSON.stringify(comment)}: 400`);
      t.equal(unstorable.body.error.code, 'SVC_ERR_HTTP_INVALID_BODY');
      t.match(unstorable.body.error.message, /comment must not contain NUL characters or unpaired surrogates/);
    }
    t.equal((await post(url, alice, [])).status, 400, 'an array');
    t.equal((await post(url, alice, 'approve please', 'text/plain')).status, 400, 'text');
    const badId = await post(`${base}/orgs/${ORG}/runs/nope/approve`, alice, {});
    t.equal(badId.status, 400);
    t.equal(badId.body.error.code, 'SVC_ERR_RELAY_RUN_ID_INVALID');
    const unknown = await post(`${base}/orgs/${ORG}/runs/${randomUUID()}/approve`, alice, {});
    t.equal(unknown.status, 404);
    t.equal(unknown.body.error.code, 'SVC_ERR_RUNS_NOT_FOUND');
    const foreign = await insertRun(db.pool, { orgId: OTHER_ORG, status: 'held', jobs: [{ name: 'build', status: 'waiting' }] });
    const hidden = await post(`${base}/orgs/${ORG}/runs/${foreign.runId}/approve`, alice, {});
    t.equal(hidden.status, 404, 'a run of another org is not decided through this org');
    t.same(await votes(runId), [], 'refused bodies record nothing');
    t.equal((await runStatus(runId)).status, 'held');
    const maxComment = await post(url, alice, { comment: 'y'.repeat(2000), job: 'build' });
    t.equal(maxComment.status, 200, '2000 characters are accepted');
    t.match(maxComment.body.decisions, [{ counted: false }], 'the run has no hold for job build: nothing counted');
    t.equal((await runStatus(runId)).status, 'held', '--job does not decide the workflow hold');
  });

  await t.test('no orchestrator connected for the org: 503, as for cancel', async (t) => {
    const bobOther = stack.auth(await stack.pat('bob', OTHER_ORG));
    for (const path of [`/orgs/${OTHER_ORG}/runs/${randomUUID()}/approve`, `/v1/orgs/${OTHER_ORG}/runs/${randomUUID()}/reject`]) {
      const res = await post(`${base}${path}`, bobOther, {});
      t.equal(res.status, 503, path);
      t.equal(res.body.error.code, 'SVC_ERR_RELAY_NO_ORCHESTRATOR');
    }
  });

  await t.test('orchestrator side: errors of decideRun become answers with their status', async (t) => {
    const deps: RunsApiDeps = {
      pool: db.pool,
      logger: testLogger,
      storage: () => undefined,
      rerun: {
        sourceById: async () => null,
        providerFor: () => undefined,
        checkCaches: async () => ({ sourceHit: null, depsHit: null, buildKey: null }),
        notifyJobsQueued: async () => undefined,
      },
      cancel: async () => ({ cancelledJobs: 0 }),
    };
    const { runId } = await pushHeldRun(stack);
    const requestId = randomUUID();
    const request = { type: 'run.approve.request', requestId, orgId: ORG, runId, actor: 'alice', decision: 'approve', via: 'cli' } as const;
    const blank = await answerDashboardRequest(deps, { ...request, actor: ' ' });
    t.match(blank, { type: 'run.approve.response', requestId, error: { status: 400, code: 'SVC_ERR_APPROVAL_ACTOR_INVALID' } });
    const other = await answerDashboardRequest(deps, { ...request, orgId: OTHER_ORG });
    t.match(other, { type: 'run.approve.response', error: { status: 404, code: 'SVC_ERR_RUNS_NOT_FOUND' } });
    t.equal((await runStatus(runId)).status, 'held', 'refusals decide nothing');
    const ok = await answerDashboardRequest(deps, request);
    t.match(ok, { type: 'run.approve.response', requestId, result: { runId, decisions: [{ status: 'approved', counted: true }] } });
    t.notOk('error' in ok);
  });
});
