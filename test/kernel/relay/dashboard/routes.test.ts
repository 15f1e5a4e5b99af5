// Dashboard actions and CLI run routes through a real relay to a real orchestrator (startOrchestrator
// with the kernel subsystems) over the real WebSocket link, on real PostgreSQL: auth (PAT or org
// token; 401/403), run show/logs, re-run with lineage and the 5 s cooldown (429), cancel, payload,
// and 503 when the org has no orchestrator connected.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { claimsFor, loadRunJob } from '../../../../kernel/orchestrator/identity/claims.ts';
import { revokePat } from '../../../../kernel/relay/pats/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { insertRun, until } from '../../../fixtures/runs.ts';


interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function call(method: 'GET' | 'POST', url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, { method, headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const base = stack.relayUrl;
  const alice = await stack.pat('alice');
  const mallory = await stack.pat('mallory', OTHER_ORG);
  const H = stack.auth(alice);

  const run = await insertRun(db.pool, { orgId: ORG, jobs: [{ name: 'build', status: 'running' }, { name: 'test', needs: ['build'] }] });
  const buildId = run.jobs['build']!.id;
  await db.pool.query(sql.unsafe`update jobs set agent_id = 'agent-1', started_at = now() - interval '3 seconds' where id = ${buildId}`);
  await db.pool.query(sql.unsafe`insert into job_steps (job_id, index, name, status, started_at, finished_at) values
    (${buildId}, 0, 'compile', 'completed', now() - interval '2 seconds', now() - interval '1 second'), (${buildId}, 1, 'unit', 'running', now(), null)`);
  const line = (step: string, text: string) => ({ at: new Date().toISOString(), step, stream: 'stdout', text });
  await db.pool.query(sql.unsafe`insert into job_logs (job_id, seq, lines) values
    (${buildId}, 0, ${sql.jsonb([line('(setup)', 'restoring source'), line('(setup)', 'installing deps')])}),
    (${buildId}, 1, ${sql.jsonb([line('compile', 'tsc ok'), line('unit', '3 passed ***')])})`);
  const otherRun = await insertRun(db.pool, { orgId: OTHER_ORG, jobs: [{ name: 'build' }] });

  await t.test('auth: no token 401, bad token 401, revoked PAT 401, another org 403, malformed org 403', async (t) => {
    const url = `${base}/v1/orgs/${ORG}/runs/${run.runId}`;
    const none = await call('GET', url);
    t.equal(none.status, 401);
    t.equal(none.body.error.code, 'SVC_ERR_RELAY_AUTH_MISSING');
    t.equal((await call('GET', url, stack.auth('svcpat_nope'))).status, 401);
    t.equal((await call('GET', url, stack.auth('svcp_not-a-token'))).status, 401);
    t.equal((await call('GET', url, { authorization: 'Basic abc' })).status, 401);
    const wrong = await call('GET', url, stack.auth(mallory));
    t.equal(wrong.status, 403);
    t.equal(wrong.body.error.code, 'SVC_ERR_RELAY_AUTH_WRONG_ORG');
    t.equal((await call('GET', url, stack.auth(stack.otherOrgToken))).status, 403, 'another org platform token');
    t.equal((await call('GET', `${base}/v1/orgs/..%2F${ORG}/runs/${run.runId}`, H)).status, 403);
    t.equal((await call('POST', `${base}/orgs/${ORG}/runs/${run.runId}/cancel`, stack.auth(mallory))).status, 403, 'cancel refused for another org');
    const temp = await stack.pat('temp');
    t.equal((await call('GET', url, stack.auth(temp))).status, 200);
    const [row] = (await stack.relayDb.any(sql.unsafe`select id::text as id, last_used_at from relay_pats where user_name = 'temp'`)) as Array<{ id: string; last_used_at: number | null }>;
    t.ok(row!.last_used_at !== null, 'last used recorded');
    await revokePat(stack.relayDb, row!.id);
    t.equal((await call('GET', url, stack.auth(temp))).status, 401, 'revoked at once');
    const who = await call('GET', `${base}/v1/whoami`, H);
    t.same(who.body, { orgId: ORG, kind: 'pat', user: 'alice' });
  });

  await t.test('bad input: run id, query; unknown run and a run of another org are 404', async (t) => {
    const bad = await call('GET', `${base}/v1/orgs/${ORG}/runs/not-a-uuid`, H);
    t.equal(bad.status, 400);
    t.equal(bad.body.error.code, 'SVC_ERR_RELAY_RUN_ID_INVALID');
    t.equal((await call('GET', `${base}/v1/orgs/${ORG}/runs/${run.runId}/logs?after=x&foo=1`, H)).status, 400);
    const cursor = await call('GET', `${base}/v1/orgs/${ORG}/runs/${run.runId}/logs?after=garbage`, H);
    t.equal(cursor.status, 400);
    t.equal(cursor.body.error.code, 'SVC_ERR_RUNS_LOG_CURSOR_INVALID');
    t.equal((await call('GET', `${base}/v1/orgs/${ORG}/runs/${randomUUID()}`, H)).status, 404);
    const hidden = await call('GET', `${base}/v1/orgs/${ORG}/runs/${otherRun.runId}`, H);
    t.equal(hidden.status, 404, 'a run of another org is not visible through this org');
    t.equal(hidden.body.error.code, 'SVC_ERR_RUNS_NOT_FOUND');
  });

  await t.test('run show: status, lineage, jobs with agent and steps', async (t) => {
    const res = await call('GET', `${base}/v1/orgs/${ORG}/runs/${run.runId}`, H);
    t.equal(res.status, 200);
    const view = res.body.run;
    t.equal(view.runId, run.runId);
    t.equal(view.workflow, 'ci');
    t.equal(view.repository, 'acme/widgets');
    t.equal(view.parentRunId, null);
    t.equal(view.jobs.length, 2);
    const build = view.jobs.find((j: any) => j.name === 'build');
    t.equal(build.agentId, 'agent-1');
    t.same(build.steps.map((s: any) => [s.index, s.name, s.status]), [[0, 'compile', 'completed'], [1, 'unit', 'running']]);
    t.ok(build.steps[0].finishedAt);
  });

  await t.test('run logs: lines in order with setup step, cursor continues after them', async (t) => {
    const first = await call('GET', `${base}/v1/orgs/${ORG}/runs/${run.runId}/logs`, H);
    t.equal(first.status, 200);
    t.same(first.body.lines.map((l: any) => [l.job, l.step, l.text]), [
      ['build', '(setup)', 'restoring source'],
      ['build', '(setup)', 'installing deps'],
      ['build', 'compile', 'tsc ok'],
      ['build', 'unit', '3 passed ***'],
    ]);
    t.equal(first.body.terminal, false);
    t.equal(first.body.more, false);
    const again = await call('GET', `${base}/v1/orgs/${ORG}/runs/${run.runId}/logs?after=${encodeURIComponent(first.body.cursor)}`, H);
    t.same(again.body.lines, [], 'nothing new');
    await db.pool.query(sql.unsafe`insert into job_logs (job_id, seq, lines) values (${buildId}, 2, ${sql.jsonb([line('unit', 'done')])})`);
    const next = await call('GET', `${base}/v1/orgs/${ORG}/runs/${run.runId}/logs?after=${encodeURIComponent(again.body.cursor)}`, H);
    t.same(next.body.lines.map((l: any) => l.text), ['done']);
  });

  await t.test('cancel: { cancelledJobs }, recorded as cancelled by the PAT user', async (t) => {
    const res = await call('POST', `${base}/orgs/${ORG}/runs/${run.runId}/cancel`, H);
    t.equal(res.status, 200);
    t.same(res.body, { cancelledJobs: 2 }, 'the waiting job now, the running one through its agent');
    const row = (await db.pool.one(sql.unsafe`select cancelled_by from runs where id = ${run.runId}`)) as { cancelled_by: string };
    t.equal(row.cancelled_by, 'alice');
    const bad = await call('POST', `${base}/orgs/${ORG}/runs/${randomUUID()}/cancel`, H);
    t.equal(bad.status, 404);
  });

  await t.test('re-run through the relay: new run with lineage, claims say rerun, 429 inside the cooldown; payload', async (t) => {
    const pushed = await stack.pushRun();
    const original = (await db.pool.one(sql.unsafe`select event_name, subject_kind, sha, workflow_sha, lock_entry from runs where id = ${pushed.runId}`)) as Record<string, unknown>;
    const fetchesBefore = stack.forge.lockFetches;
    const res = await call('POST', `${base}/orgs/${ORG}/runs/${pushed.runId}/rerun`, H);
    t.equal(res.status, 200, JSON.stringify(res.body));
    const newRunId = res.body.newRunId as string;
    t.not(newRunId, pushed.runId);
    t.ok(stack.forge.lockFetches > fetchesBefore, 'the lock was fetched again');
    const rerun = (await db.pool.one(sql.unsafe`
      select parent_run_id::text as parent, original_run_id::text as original, triggered_by, event_name, subject_kind, sha, workflow_sha, delivery_id, lock_entry
      from runs where id = ${newRunId}`)) as Record<string, unknown>;
    t.equal(rerun['parent'], pushed.runId);
    t.equal(rerun['original'], pushed.runId);
    t.equal(rerun['triggered_by'], 'alice');
    t.equal(rerun['event_name'], original['event_name'], 'the row keeps the event name');
    t.equal(rerun['subject_kind'], original['subject_kind']);
    t.equal(rerun['sha'], original['sha']);
    t.equal(rerun['workflow_sha'], original['workflow_sha']);
    t.equal(rerun['delivery_id'], pushed.deliveryId);
    t.same(rerun['lock_entry'], original['lock_entry']);
    const jobs = (await db.pool.any(sql.unsafe`select id::text as id, name from jobs where run_id = ${newRunId} order by name`)) as Array<{ id: string; name: string }>;
    t.ok(jobs.some((j) => j.name === 'build') && jobs.some((j) => j.name === 'test'), 'jobs of the workflow');
    const jobRow = await loadRunJob(db.pool, jobs.find((j) => j.name === 'build')!.id);
    const claims = claimsFor(jobRow!, { issuer: 'https://i', audience: 'a', orchestratorId: 'o', origin: 'orchestrator' as never, statementHash: null, nowSeconds: 1, lifetimeSeconds: 60, jti: 'j' });
    t.equal(claims.event_name, 'rerun', 'identity claims name the re-run');

    const soon = await call('POST', `${base}/orgs/${ORG}/runs/${pushed.runId}/rerun`, H);
    t.equal(soon.status, 429);
    t.equal(soon.body.error.code, 'SVC_ERR_RUNS_RERUN_COOLDOWN');
    t.ok(Number(soon.headers.get('retry-after')) >= 1);
    const chained = await call('POST', `${base}/orgs/${ORG}/runs/${newRunId}/rerun`, H);
    t.equal(chained.status, 429, 'the cooldown is per original run: re-running the re-run is refused too');
    t.equal(((await db.pool.one(sql.unsafe`select count(*)::int as n from runs where original_run_id = ${pushed.runId}`)) as { n: number }).n, 1, 'nothing created by refusals');

    // The event log's payload object is written after the delivery's ack (docs/ingest.md): wait
    // for it rather than race it.
    const payload = await until('the payload object written', async () => {
      const answer = await call('GET', `${base}/orgs/${ORG}/runs/${pushed.runId}/payload`, H);
      return answer.status === 404 ? undefined : answer;
    }, 60_000, 50);
    t.equal(payload.status, 200);
    t.same(payload.body, { payload: pushed.body }, 'the original webhook body');
    const ofRerun = await call('GET', `${base}/orgs/${ORG}/runs/${newRunId}/payload`, H);
    t.same(ofRerun.body, { payload: pushed.body }, 'a re-run answers with its original payload');
    const noPayload = await call('GET', `${base}/orgs/${ORG}/runs/${run.runId}/payload`, H);
    t.equal(noPayload.status, 404, 'a run no webhook started has no payload');

    const shown = await call('GET', `${base}/v1/orgs/${ORG}/runs/${newRunId}`, stack.auth(stack.orgToken));
    t.equal(shown.body.run.parentRunId, pushed.runId);
    t.equal(shown.body.run.triggeredBy, 'alice');
  });

  await t.test('no orchestrator connected for the org: 503 with a clear message', async (t) => {
    const tokenOther = await stack.pat('bob', OTHER_ORG);
    for (const [method, path] of [
      ['GET', `/v1/orgs/${OTHER_ORG}/runs/${otherRun.runId}`],
      ['GET', `/v1/orgs/${OTHER_ORG}/runs/${otherRun.runId}/logs`],
      ['POST', `/orgs/${OTHER_ORG}/runs/${otherRun.runId}/rerun`],
      ['POST', `/orgs/${OTHER_ORG}/runs/${otherRun.runId}/cancel`],
      ['GET', `/orgs/${OTHER_ORG}/runs/${otherRun.runId}/payload`],
    ] as const) {
      const res = await call(method, `${base}${path}`, stack.auth(tokenOther));
      t.equal(res.status, 503, `${method} ${path}`);
      t.equal(res.body.error.code, 'SVC_ERR_RELAY_NO_ORCHESTRATOR');
      t.match(res.body.error.message, /no orchestrator of org umbrella is connected/);
    }
  });
});
