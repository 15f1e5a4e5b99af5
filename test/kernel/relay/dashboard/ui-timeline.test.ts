// The run page's timeline and needs graph, and the runs list's queue time, through a real relay
// and orchestrator (startPlatformStack). Time is moved, not waited for: the jobs' timestamps are
// set in the orchestrator's database at chosen millisecond offsets from the run's creation, and
// the agent's set-up phases and steps go through the real store path (applyJobStatus, as an
// agent's `job.status` does). The API answer (GET /v1/orgs/:org/runs/:run/timeline) gives every
// row to the millisecond; the page shows them as "812 ms"; the runs list shows the queue time.
import t from 'tap';
import { applyJobStatus } from '../../../../kernel/orchestrator/dispatch/status.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import type { RunTimeline } from '../../../../schemas/wire/relay.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { moveStatus, until } from '../../../fixtures/runs.ts';

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const alice = stack.auth(await stack.pat('alice'));
  const { runId } = await stack.pushRun();
  const created = Number(await db.pool.oneFirst(sql.unsafe`select (extract(epoch from created_at) * 1000)::float8 from runs where id = ${runId}`));
  const at = (offset: number) => new Date(created + offset);
  const iso = (offset: number) => at(offset).toISOString();
  const ts = (offset: number) => sql.timestamp(at(offset));
  const idOf = async (name: string) => String(await db.pool.oneFirst(sql.unsafe`select id::text from jobs where run_id = ${runId} and name = ${name}`));
  const build = await idOf('build');
  const test = await idOf('test');

  // build: queued at creation, dispatched at +1,234 ms, reported running at +1,300 ms; its agent
  // set up in phases and ran one step, all with millisecond offsets. test needs build.
  await db.pool.query(sql.unsafe`update jobs set needs = '{build}', status = 'waiting', queued_at = null where id = ${test}`);
  await db.pool.query(sql.unsafe`update jobs set agent_id = 'agent-tl', created_at = ${ts(0)}, queued_at = ${ts(0)}, dispatched_at = ${ts(1234)}, started_at = ${ts(1300)} where id = ${build}`);
  await db.pool.query(sql.unsafe`update runs set started_at = ${ts(1234)} where id = ${runId}`);
  await moveStatus(db.pool, 'runs', runId, 'running');
  await moveStatus(db.pool, 'jobs', build, 'running');
  const phases = [
    { name: 'source_restore', startedAt: iso(1310), finishedAt: iso(1322) },
    { name: 'checkout', startedAt: iso(1310), finishedAt: iso(2122) },
    { name: 'checkout.fetch', startedAt: iso(1311), finishedAt: iso(2123) },
    { name: 'deps', startedAt: iso(2123), finishedAt: iso(2190) },
  ];
  await applyJobStatus(db.pool, 'agent-tl', { type: 'job.status', jobId: build, status: 'running', steps: [], phases: phases.slice(0, 2) });
  await applyJobStatus(db.pool, 'agent-tl', {
    type: 'job.status',
    jobId: build,
    status: 'completed',
    startedAt: iso(1300),
    finishedAt: iso(4000),
    steps: [{ name: 'compile', status: 'completed', startedAt: iso(2200), finishedAt: iso(4012) }],
    phases,
  });
  // Progression queued test just now: place it at +4,001 ms (it waited for build until then).
  await db.pool.query(sql.unsafe`update jobs set created_at = ${ts(0)}, queued_at = ${ts(4001)} where id = ${test}`);
  await moveStatus(db.pool, 'jobs', test, 'queued');

  const answer = async (token: Record<string, string>) => fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs/${runId}/timeline`, { headers: token });

  await t.test('the API answer: each row to the millisecond', async (t) => {
    const res = await answer(alice);
    t.equal(res.status, 200);
    const { timeline } = (await res.json()) as { timeline: RunTimeline };
    t.match(timeline, { runId, queueMs: 1234, startedAt: iso(1234), finishedAt: null });
    const b = timeline.jobs.find((j) => j.displayName === 'build');
    const c = timeline.jobs.find((j) => j.displayName === 'test');
    const order = timeline.jobs.map((j) => j.displayName);
    t.ok(order.indexOf('build') < order.indexOf('test'), `jobs in the order they started, else were queued (${order.join(', ')})`);
    t.match(b, { displayName: 'build', status: 'completed', queuedAt: iso(0), dispatchedAt: iso(1234), startedAt: iso(1300), finishedAt: iso(4000) });
    t.same(
      b!.rows.map((r) => [r.kind, r.name, r.startedAt, r.finishedAt, r.durationMs]),
      [
        ['queued', 'queued', iso(0), iso(1234), 1234],
        ['dispatched', 'dispatched', iso(1234), iso(1300), 66],
        ['phase', 'source_restore', iso(1310), iso(1322), 12],
        ['phase', 'checkout', iso(1310), iso(2122), 812],
        ['phase', 'checkout.fetch', iso(1311), iso(2123), 812],
        ['phase', 'deps', iso(2123), iso(2190), 67],
        ['step', 'compile', iso(2200), iso(4012), 1812],
      ],
      'queued, dispatched, the set-up phases (the last report wins, once each) and the step, by start, then end',
    );
    t.equal(b!.rows.find((r) => r.kind === 'step')!.status, 'completed');
    t.match(c, { displayName: 'test', status: 'queued', needs: ['build'], dispatchedAt: null });
    t.same(c!.rows.map((r) => [r.kind, r.name, r.durationMs]).slice(0, 1), [['waiting', 'needs build', 4001]], 'test waited 4,001 ms for build');
    t.match(c!.rows[1], { kind: 'queued', startedAt: iso(4001), finishedAt: null }, 'and is queued still (to now)');
  });

  await t.test('another org reads it as not found; no credentials: 401', async (t) => {
    t.equal((await answer(stack.auth(await stack.pat('mallory', OTHER_ORG)))).status, 403);
    t.equal((await answer({})).status, 401);
  });

  await t.test('the run page: the needs graph and the timeline in ms', async (t) => {
    const res = await fetch(`${stack.relayUrl}/ui/orgs/${ORG}/runs/${runId}`, { headers: alice });
    t.equal(res.status, 200);
    const page = await res.text();
    t.match(page, /<path class="dag-edge" data-from="build" data-to="test"/, 'the edge build → test');
    for (const name of ['build', 'test']) t.match(page, new RegExp(`<a href="#job-[^"]+" class="dag-node" data-job="${name}"`), `a node for ${name}`);
    const table = new RegExp(`<table class="timeline" data-job="${build}"[^>]*>(.*?)</table>`, 's').exec(page)?.[1] ?? '';
    t.match(table, /<tr data-kind="phase" data-name="checkout\.fetch" class="tl-sub"><th scope="row">checkout: fetch<\/th><td class="num">\+1,311 ms<\/td><td class="num tl-ms">812 ms<\/td>/);
    t.match(table, /<th scope="row">step compile <span class="status s-completed">completed<\/span><\/th><td class="num">\+2,200 ms<\/td><td class="num tl-ms">1,812 ms<\/td>/);
    t.match(table, /<title>queued, waiting for an agent: 1,234 ms, from \+0 ms<\/title>/, 'the bar tooltip');
    t.match(page, /Queued <strong class="tl-ms" data-queue-ms="1234">1,234 ms<\/strong>/);
    t.notMatch(page, /style="/, 'no inline style (the CSP forbids it)');
  });

  await t.test('the runs list shows the queue time beside the duration', async (t) => {
    // The relay's own run index learns the start from the orchestrator's status feed.
    await until('the run index to show the start', async () => {
      const res = await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs`, { headers: alice });
      const { runs } = (await res.json()) as { runs: Array<{ runId: string; startedAt: string | null }> };
      return runs.find((r) => r.runId === runId && r.startedAt !== null);
    });
    const page = await (await fetch(`${stack.relayUrl}/ui/orgs/${ORG}/runs`, { headers: alice })).text();
    t.match(page, /<th scope="col">Duration<\/th><th scope="col">Queued<\/th>/);
    const row = new RegExp(`<tr data-run="${runId}">(.*?)</tr>`, 's').exec(page)?.[1] ?? '';
    t.match(row, /<td class="queued">1\.2s<\/td>/, 'created until its first dispatch: 1,234 ms');
  });
});
