// Orchestrator-side answers to relayed dashboard requests, on real PostgreSQL: log pages and
// their cursor (ordering across jobs, byte-budget paging inside a chunk, bad cursors refused),
// run detail and org isolation, error answers (statuses), and the response size guard.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../../kernel/orchestrator/app.ts';
import { answerDashboardRequest, decodeCursor, encodeCursor, encodeResponse, loadRunView, readLogPage, type RunsApiDeps } from '../../../../../kernel/orchestrator/runs/api/index.ts';
import { migrate, sql } from '../../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../../fixtures/db.ts';
import { insertRun } from '../../../../fixtures/runs.ts';

t.test('cursor text round-trips; malformed cursors are refused', async (t) => {
  t.same([...decodeCursor(undefined)], []);
  t.same([...decodeCursor('')], []);
  const entries = new Map([['0123456789ab', { seq: 3, offset: 0 }], ['ba9876543210', { seq: 7, offset: 12 }]]);
  const text = encodeCursor(entries);
  t.equal(text, 'c1_0123456789ab-3.ba9876543210-7-12');
  t.same([...decodeCursor(text)], [...entries]);
  for (const bad of ['x', 'c1_zz', 'c1_0123456789ab', 'c1_0123456789ab-1.0123456789ab-2', 'c1_0123456789ab--1', `c1_${'a'.repeat(20_001)}`]) {
    t.throws(() => decodeCursor(bad), { code: 'SVC_ERR_RUNS_LOG_CURSOR_INVALID' }, bad.slice(0, 40));
  }
});

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const run = await insertRun(db.pool, { orgId: 'acme', jobs: [{ name: 'build' }, { name: 'test' }] });
  const [build, test] = [run.jobs['build']!.id, run.jobs['test']!.id];
  const line = (step: string, text: string) => ({ at: '2025-01-01T00:00:00.000Z', step, stream: 'stdout', text });
  // Chunks written out of job order: pages still walk jobs in order, chunks by seq.
  await db.pool.query(sql.unsafe`insert into job_logs (job_id, seq, lines) values
    (${test}, 0, ${sql.jsonb([line('(setup)', 't0'), line('run', 't1')])}),
    (${build}, 1, ${sql.jsonb([line('compile', 'b2'), line('compile', 'b3'), line('compile', 'b4')])}),
    (${build}, 0, ${sql.jsonb([line('(setup)', 'b0'), line('(setup)', 'b1')])})`);

  // Jobs in the run's stable order (creation, then id), as `runs show` lists them.
  const order = (await loadRunView(db.pool, 'acme', run.runId)).jobs.map((j) => j.name);
  const byJob: Record<string, string[]> = { build: ['b0', 'b1', 'b2', 'b3', 'b4'], test: ['t0', 't1'] };
  const expected = order.flatMap((name) => byJob[name]!);

  await t.test('one page holds everything in job then seq order', async (t) => {
    const page = await readLogPage(db.pool, 'acme', run.runId);
    t.same(page.lines.map((l) => l.text), expected);
    t.same(page.lines.map((l) => l.job), order.flatMap((name) => byJob[name]!.map(() => name)));
    t.equal(page.more, false);
    t.equal(page.terminal, false);
    t.equal(page.status, 'queued');
    const again = await readLogPage(db.pool, 'acme', run.runId, page.cursor);
    t.same(again.lines, []);
    t.equal(again.cursor, page.cursor);
  });

  await t.test('a small byte budget pages inside chunks without losing or repeating a line', async (t) => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 50; i++) {
      const page = await readLogPage(db.pool, 'acme', run.runId, cursor, { pageBytes: 1 });
      seen.push(...page.lines.map((l) => l.text));
      t.ok(page.lines.length <= 1, 'one line per page at a 1-byte budget');
      cursor = page.cursor;
      if (!page.more) break;
    }
    t.same(seen, expected);
  });

  await t.test('terminal run; cursors of another run and other orgs are refused', async (t) => {
    const done = await insertRun(db.pool, { orgId: 'acme', status: 'completed', jobs: [{ name: 'only', status: 'completed' }] });
    const page = await readLogPage(db.pool, 'acme', done.runId);
    t.equal(page.terminal, true);
    const first = await readLogPage(db.pool, 'acme', run.runId);
    await t.rejects(readLogPage(db.pool, 'acme', done.runId, first.cursor), { code: 'SVC_ERR_RUNS_LOG_CURSOR_INVALID' });
    await t.rejects(readLogPage(db.pool, 'other-org', run.runId), { code: 'SVC_ERR_RUNS_NOT_FOUND' });
    await t.rejects(readLogPage(db.pool, 'acme', 'nope'), { code: 'SVC_ERR_RUNS_ID_INVALID' });
    await t.rejects(loadRunView(db.pool, 'other-org', run.runId), { code: 'SVC_ERR_RUNS_NOT_FOUND' });
    const view = await loadRunView(db.pool, 'acme', run.runId);
    t.equal(view.jobs.length, 2);
    t.equal(view.originalRunId, null);
  });

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
    cancel: async () => {
      throw new Error('boom: internal detail');
    },
  };

  await t.test('error answers carry the HTTP status; internal errors hide their detail', async (t) => {
    const requestId = randomUUID();
    const noOrg = await answerDashboardRequest(deps, { type: 'run.show.request', requestId, runId: run.runId } as never);
    t.match(noOrg, { type: 'run.show.response', requestId, error: { status: 400, code: 'SVC_ERR_RUNS_ORG_MISSING' } });
    const noSource = await answerDashboardRequest(deps, { type: 'run.rerun.request', requestId, orgId: 'acme', runId: run.runId, triggeredBy: 'alice' });
    t.match(noSource, { error: { status: 409, code: 'SVC_ERR_RUNS_RERUN_NO_SOURCE' } });
    // A `svc run remote` run ran a sealed overlay: re-running the commit's own lock would run something else.
    const origin = ((await db.pool.one(sql.unsafe`select source_origin from runs where id = ${run.runId}`)) as { source_origin: string }).source_origin;
    await db.pool.query(sql.unsafe`update runs set source_origin = 'run-remote' where id = ${run.runId}`);
    const remote = await answerDashboardRequest(deps, { type: 'run.rerun.request', requestId, orgId: 'acme', runId: run.runId, triggeredBy: 'alice' });
    t.match(remote, { error: { status: 409, code: 'SVC_ERR_RUNS_RERUN_REMOTE' } });
    await db.pool.query(sql.unsafe`update runs set source_origin = ${origin} where id = ${run.runId}`);
    const noBy = await answerDashboardRequest(deps, { type: 'run.rerun.request', requestId, orgId: 'acme', runId: run.runId, triggeredBy: ' ' });
    t.match(noBy, { error: { status: 400, code: 'SVC_ERR_RUNS_TRIGGERED_BY' } });
    const internal = await answerDashboardRequest(deps, { type: 'run.cancel.request', requestId, orgId: 'acme', runId: run.runId, cancelledBy: 'x' });
    t.match(internal, { type: 'run.cancel.response', error: { status: 500, code: 'SVC_ERR_INTERNAL' } });
    t.notMatch(JSON.stringify(internal), /boom/);
    const noPayload = await answerDashboardRequest(deps, { type: 'dashboard.payload', requestId, orgId: 'acme', runId: run.runId });
    t.match(noPayload, { type: 'dashboard.payload.response', error: { status: 404, code: 'SVC_ERR_RUNS_PAYLOAD_NONE' } });
    t.equal(((await db.pool.one(sql.unsafe`select count(*)::int as n from runs`)) as { n: number }).n, 2, 'refusals created no run');
  });

  t.test('a response too large for a relay frame becomes a 413 error', async (t) => {
    const big = encodeResponse({ type: 'dashboard.payload.response', requestId: 'r1', payload: 'x'.repeat(4 * 1024 * 1024) });
    t.match(big, { type: 'dashboard.payload.response', requestId: 'r1', error: { status: 413, code: 'SVC_ERR_RUNS_RESPONSE_TOO_LARGE' } });
    t.notOk('payload' in big);
    const small = { type: 'dashboard.payload.response' as const, requestId: 'r2', payload: { a: 1 } };
    t.equal(encodeResponse(small), small);
  });
});
