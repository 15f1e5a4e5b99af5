// The relay's run index over a real relay and real sockets: full `execution.status` /
// `job.status.forward` records (older and resent updates change nothing, lineage and
// `last_rerun_at`, `cancelled_by` kept from the dashboard until the orchestrator names someone),
// a message naming another org refused, and `GET /v1/orgs/:orgId/runs` (auth, filters, paging,
// 400 on bad parameters) answered with no orchestrator connected.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { Type } from 'typebox';
import { createPat } from '../../../kernel/relay/pats/index.ts';
import { recordStatusBatch } from '../../../kernel/relay/run-index.ts';
import { sql, sqlTyped } from '../../../kernel/services/db/index.ts';
import type { ExecutionStatus, JobStatusForward } from '../../../schemas/wire/relay.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { fakeOrchestrator, newOrg, startTestRelay, until } from './harness.ts';

const at = (second: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString();

function runStatus(runId: string, status: string, updatedSecond: number, extra: Partial<ExecutionStatus> = {}): ExecutionStatus {
  return {
    type: 'execution.status',
    runId,
    workflow: 'ci',
    repository: 'acme/app',
    status,
    updatedAt: at(updatedSecond),
    orgId: 'acme',
    reason: null,
    eventName: 'push',
    ref: 'refs/heads/main',
    sha: 'c'.repeat(40),
    actor: 'octocat',
    createdAt: at(0),
    startedAt: null,
    finishedAt: null,
    parentRunId: null,
    originalRunId: null,
    triggeredBy: null,
    cancelledBy: null,
    ...extra,
  };
}

function jobStatus(runId: string, jobId: string, status: string, updatedSecond: number): JobStatusForward {
  return { type: 'job.status.forward', runId, jobId, job: 'build', status, updatedAt: at(updatedSecond), orgId: 'acme', kind: 'job', reason: null, startedAt: null, finishedAt: null };
}

const RunRow = Type.Object({
  status: Type.String(),
  sha: Type.Union([Type.String(), Type.Null()]),
  actor: Type.Union([Type.String(), Type.Null()]),
  event_name: Type.Union([Type.String(), Type.Null()]),
  cancelled_by: Type.Union([Type.String(), Type.Null()]),
  last_rerun_at: Type.Union([Type.Number(), Type.Null()]),
  parent_run_id: Type.Union([Type.String(), Type.Null()]),
  triggered_by: Type.Union([Type.String(), Type.Null()]),
});

async function call(url: string, token?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
}

await eachDatabase(t, async (t, db) => {
  const token = await newOrg(db.pool, 'acme');
  await newOrg(db.pool, 'umbrella');
  const alice = (await createPat(db.pool, 'acme', 'alice')).token;
  const mallory = (await createPat(db.pool, 'umbrella', 'mallory')).token;
  const row = (runId: string) => db.pool.maybeOne(sqlTyped(RunRow)`
    select status, sha, actor, event_name, cancelled_by, last_rerun_at, parent_run_id, triggered_by from relay_runs where org_id = 'acme' and run_id = ${runId}`);

  const r = await startTestRelay(t, db.url);
  const o = await fakeOrchestrator(t, r.url, token);
  const runA = randomUUID();
  const runB = randomUUID();

  await t.test('full records; older updates and resends change nothing', async (t) => {
    o.link.send(runStatus(runA, 'running', 2, { startedAt: at(1) }));
    o.link.send(runStatus(runA, 'queued', 1));
    o.link.send(jobStatus(runA, 'job-a1', 'running', 2));
    o.link.send(jobStatus(runA, 'job-a1', 'queued', 1));
    await until(async () => (await db.pool.maybeOneFirst(sql.unsafe`select status from relay_jobs where job_id = 'job-a1'`)) !== null, 20_000, 'job row');
    await until(async () => (await row(runA))?.status === 'running', 20_000, 'run row');
    t.match(await row(runA), { status: 'running', sha: 'c'.repeat(40), actor: 'octocat', event_name: 'push' });
    t.equal(await db.pool.oneFirst(sql.unsafe`select status from relay_jobs where job_id = 'job-a1'`), 'running', 'an older job update does not overwrite');
    o.link.send(runStatus(runA, 'running', 2, { startedAt: at(1) }));
    o.link.send(runStatus(runA, 'completed', 3, { startedAt: at(1), finishedAt: at(3) }));
    await until(async () => (await row(runA))?.status === 'completed', 20_000, 'completed');
  });

  await t.test('cancelled_by: the dashboard entry stays until the orchestrator names someone; a re-run sets last_rerun_at', async (t) => {
    o.link.send(runStatus(runB, 'running', 1));
    await until(async () => (await row(runB)) !== null, 20_000, 'run B');
    await db.pool.query(sql.unsafe`update relay_runs set cancelled_by = 'dash-alice' where run_id = ${runB}`);
    o.link.send(runStatus(runB, 'running', 2));
    await until(async () => (await db.pool.oneFirst(sql.unsafe`select updated_at from relay_runs where run_id = ${runB}`)) === Date.parse(at(2)), 20_000, 'update 2');
    t.equal((await row(runB))?.cancelled_by, 'dash-alice', 'kept while the orchestrator has no value');
    o.link.send(runStatus(runB, 'cancelled', 3, { cancelledBy: 'alice' }));
    await until(async () => (await row(runB))?.status === 'cancelled', 20_000, 'cancelled');
    t.equal((await row(runB))?.cancelled_by, 'alice', "the orchestrator's record wins");

    const child = randomUUID();
    o.link.send(runStatus(child, 'queued', 10, { createdAt: at(10), parentRunId: runB, originalRunId: runB, triggeredBy: 'alice' }));
    await until(async () => (await row(runB))?.last_rerun_at === Date.parse(at(10)), 20_000, 'last_rerun_at');
    t.match(await row(child), { parent_run_id: runB, triggered_by: 'alice' });
    o.link.send(runStatus(randomUUID(), 'queued', 5, { createdAt: at(5), parentRunId: runB }));
    o.link.send(runStatus(child, 'running', 11, { createdAt: at(10), parentRunId: runB }));
    await until(async () => (await row(child))?.status === 'running', 20_000, 'child running');
    t.equal((await row(runB))?.last_rerun_at, Date.parse(at(10)), 'the latest re-run stays');
  });

  await t.test('one batch (messages that arrived together): the newest per run and job counts, as applied one by one', async (t) => {
    const [run, parent, legacy] = [randomUUID(), randomUUID(), randomUUID()];
    const strip = <T extends { type: string }>(m: T): Omit<T, 'type'> => {
      const { type: _type, ...rest } = m;
      return rest;
    };
    await db.pool.query(sql.unsafe`insert into relay_runs (org_id, run_id, workflow, repository, status, updated_at, created_at) values ('acme', ${parent}, 'ci', 'acme/app', 'completed', ${at(1)}::timestamptz, ${at(0)}::timestamptz)`);
    const older = { ...strip(runStatus(legacy, 'queued', 1)) } as Record<string, unknown>;
    delete older['createdAt'];
    await recordStatusBatch(db.pool, 'acme', {
      runs: [
        strip(runStatus(run, 'running', 2, { cancelledBy: null })),
        strip(runStatus(run, 'cancelled', 4, { cancelledBy: 'bob' })),
        strip(runStatus(run, 'queued', 1)),
        // Same time as the one before it: the later message wins, and keeps who cancelled.
        strip(runStatus(run, 'failed', 4, { cancelledBy: null, reason: 'later' })),
        strip(runStatus(randomUUID(), 'queued', 7, { createdAt: at(7), parentRunId: parent })),
        strip(runStatus(randomUUID(), 'queued', 9, { createdAt: at(9), parentRunId: parent })),
        older as never,
      ],
      jobs: [
        strip(jobStatus(run, 'batch-j1', 'running', 3)),
        strip(jobStatus(run, 'batch-j1', 'queued', 1)),
        strip(jobStatus(run, 'batch-j2', 'queued', 1)),
        { runId: run, jobId: 'batch-j3', job: 'old', status: 'queued', updatedAt: at(1) },
      ],
    });
    t.match(await row(run), { status: 'failed', cancelled_by: 'bob' });
    t.equal(await db.pool.oneFirst(sql.unsafe`select reason from relay_runs where run_id = ${run}`), 'later');
    t.equal((await row(parent))?.last_rerun_at, Date.parse(at(9)), "the parent's latest re-run of the batch");
    t.match(await row(legacy), { status: 'queued', sha: null }, "an older orchestrator's message in the same batch");
    const jobs = await db.pool.any(sql.unsafe`select job_id, status from relay_jobs where run_id = ${run} order by job_id`);
    t.same(jobs, [{ job_id: 'batch-j1', status: 'running' }, { job_id: 'batch-j2', status: 'queued' }, { job_id: 'batch-j3', status: 'queued' }]);
    // A batch older than what is stored changes nothing.
    await recordStatusBatch(db.pool, 'acme', { runs: [strip(runStatus(run, 'running', 3))], jobs: [strip(jobStatus(run, 'batch-j1', 'queued', 2))] });
    t.equal((await row(run))?.status, 'failed');
    t.equal(await db.pool.oneFirst(sql.unsafe`select status from relay_jobs where job_id = 'batch-j1'`), 'running');
    await recordStatusBatch(db.pool, 'acme', { runs: [], jobs: [] });
  });

  await t.test('a message naming another org is refused', async (t) => {
    const foreign = randomUUID();
    o.link.send(runStatus(foreign, 'queued', 1, { orgId: 'umbrella' }));
    const marker = randomUUID();
    o.link.send(runStatus(marker, 'queued', 1));
    await until(async () => (await row(marker)) !== null, 20_000, 'marker');
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_runs where run_id = ${foreign}`), 0, 'not stored under either org');
    t.ok(o.link.connected, 'one refusal does not close the link');
  });

  await t.test('GET /v1/orgs/:orgId/runs: auth, filters, paging, bad parameters; no orchestrator needed', async (t) => {
    await o.close();
    const base = `${r.url}/v1/orgs/acme/runs`;
    t.equal((await call(base)).status, 401);
    t.equal((await call(base, 'svcpat_nope')).status, 401);
    const wrong = await call(base, mallory);
    t.equal(wrong.status, 403);
    t.equal(wrong.body.error.code, 'SVC_ERR_RELAY_AUTH_WRONG_ORG');
    t.equal((await call(`${r.url}/v1/orgs/umbrella/runs`, alice)).status, 403, 'a PAT of acme for umbrella');
    t.equal((await call(`${r.url}/v1/orgs/umbrella/runs?limit=nope`, alice)).status, 403, 'the org is checked before the query');

    const all = await call(base, alice);
    t.equal(all.status, 200, 'listed');
    const ids = all.body.runs.map((x: { runId: string }) => x.runId);
    t.ok(ids.includes(runA) && ids.includes(runB), 'both runs listed');
    const a = all.body.runs.find((x: { runId: string }) => x.runId === runA);
    t.match(a, { status: 'completed', workflow: 'ci', repository: 'acme/app', ref: 'refs/heads/main', eventName: 'push', actor: 'octocat', createdAt: at(0), finishedAt: at(3), jobs: { running: 1 } });
    t.equal((await call(base, token)).status, 200, 'the org platform token works too');

    const failed = await call(`${base}?status=cancelled`, alice);
    t.same(failed.body.runs.map((x: { runId: string }) => x.runId), [runB]);
    t.same((await call(`${base}?repository=acme%2Fother`, alice)).body, { runs: [], nextBefore: null });

    const page1 = await call(`${base}?limit=2`, alice);
    t.equal(page1.body.runs.length, 2);
    t.type(page1.body.nextBefore, 'string');
    const seen = new Set(page1.body.runs.map((x: { runId: string }) => x.runId));
    let cursor: string | null = page1.body.nextBefore;
    while (cursor !== null) {
      const page = await call(`${base}?limit=2&before=${encodeURIComponent(cursor)}`, alice);
      t.equal(page.status, 200);
      for (const x of page.body.runs) {
        t.notOk(seen.has(x.runId), 'no run on two pages');
        seen.add(x.runId);
      }
      cursor = page.body.nextBefore;
    }
    t.equal(seen.size, all.body.runs.length, 'paging visits every run once (same creation times included)');
    const byTime = await call(`${base}?before=${encodeURIComponent(at(5))}`, alice);
    t.ok(byTime.body.runs.every((x: { createdAt: string }) => x.createdAt < at(5)), 'an ISO time as before');

    for (const [query, code] of [
      ['limit=0', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['limit=abc', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['limit=1000', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['status=bogus', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['colour=red', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['before=yesterday', 'SVC_ERR_RELAY_RUN_LIST_CURSOR_INVALID'],
      [`before=${encodeURIComponent(`${at(1)},not-a-uuid`)}`, 'SVC_ERR_RELAY_RUN_LIST_CURSOR_INVALID'],
    ] as const) {
      const bad = await call(`${base}?${query}`, alice);
      t.equal(bad.status, 400, query);
      t.equal(bad.body.error.code, code, query);
      t.ok(bad.body.error.message.length > 10, `${query}: ${bad.body.error.message}`);
    }
    const badStatus = await call(`${base}?status=bogus`, alice);
    t.match(badStatus.body.error.message, /status/, 'the message names the parameter');
  });
});
