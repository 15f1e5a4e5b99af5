// The reporter's side of the run status feed, on real PostgreSQL without a server: run-level
// changes become one delivery per target (the provider of the run's source when it reports run
// status; the run-status webhooks of its source and of the generic source that fanned it out),
// job-level rows are only marked done, and every claimed row gets `forge_done_at` in the same
// transaction. Provider deliveries a later change makes pointless are superseded; the deliveries
// of one run and target are leased one at a time in feed order; nodes draining at once never
// enqueue a change twice. Also: run statuses → forge states, and the back-off.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { reportedState, setStatusWebhook } from '../../../../kernel/orchestrator/forge-status/index.ts';
import { drainFeedBatch } from '../../../../kernel/orchestrator/forge-status/feed.ts';
import { backoffMs, failExhausted, finishDelivery, leaseDeliveries, pruneDeliveries } from '../../../../kernel/orchestrator/forge-status/store.ts';
import { createSource } from '../../../../kernel/orchestrator/sources/store.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { insertRun } from '../../../fixtures/runs.ts';
import { gitSource, MASTER_KEY } from './harness.ts';

const SECRET = 'status-hook-secret-0123456789';
const feed = (pool: DatabasePool) => ({ pool, reports: (kind: string) => kind === 'github' });

async function advance(pool: DatabasePool, runId: string, ...statuses: string[]): Promise<void> {
  for (const status of statuses) await pool.query(sql.unsafe`UPDATE runs SET status = ${status} WHERE id = ${runId}`);
}

interface Row {
  run_id: string;
  target: string;
  provider_kind: string;
  run_status: string;
  state: string;
  conclusion: string | null;
  status: string;
}

async function deliveries(pool: DatabasePool, runId: string): Promise<Row[]> {
  return [...((await pool.any(sql.unsafe`
    SELECT run_id::text AS run_id, target, provider_kind, run_status, state, conclusion, status FROM forge_status_deliveries
    WHERE run_id = ${runId} ORDER BY feed_seq, provider_kind`)) as readonly Row[])];
}

t.test('run status → forge state', async (t) => {
  const cases: Array<[string, boolean, string, string | null]> = [
    ['held', false, 'queued', null],
    ['queued', false, 'queued', null],
    ['running', false, 'in_progress', null],
    ['completed', true, 'completed', 'success'],
    ['failed', true, 'completed', 'failure'],
    ['cancelled', true, 'completed', 'cancelled'],
    ['skipped', true, 'completed', 'skipped'],
    ['timed_out', true, 'completed', 'timed_out'],
    // Statuses this version does not know: finished or not decides.
    ['paused', false, 'in_progress', null],
    ['deadline_exceeded', true, 'completed', 'timed_out'],
    ['crashed_with_error', true, 'completed', 'failure'],
    ['expired_timeout', true, 'completed', 'timed_out'],
    ['aborted', true, 'completed', 'cancelled'],
    ['archived', true, 'completed', 'neutral'],
  ];
  for (const [status, finished, state, conclusion] of cases) t.same(reportedState(status, finished), { state, conclusion }, `${status}${finished ? ' (finished)' : ''}`);
});

t.test('back-off: exponential, jittered, capped', async (t) => {
  t.equal(backoffMs(1, 1000, 60_000, () => 0), 500);
  t.equal(backoffMs(1, 1000, 60_000, () => 1), 1000);
  t.equal(backoffMs(4, 1000, 60_000, () => 1), 8000);
  t.equal(backoffMs(30, 1000, 60_000, () => 1), 60_000, 'capped');
  for (let i = 0; i < 50; i++) {
    const ms = backoffMs(3, 1000, 60_000);
    t.ok(ms >= 2000 && ms <= 4000, `${ms} within [2000, 4000]`);
  }
});

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const github = (await createSource(db.pool, MASTER_KEY, { orgId: 'org-1', providerKind: 'github', targetId: '77', settings: { appId: '77' } })).source.id;
  const git = await gitSource(db.pool);
  const generic = (await createSource(db.pool, MASTER_KEY, { orgId: 'org-1', providerKind: 'generic', sourceId: 'alerts' })).source.id;
  await setStatusWebhook(db.pool, MASTER_KEY, git, { url: 'https://hooks.example.com/git', secret: SECRET });
  await setStatusWebhook(db.pool, MASTER_KEY, generic, { url: 'https://hooks.example.com/generic', secret: SECRET });

  await t.test('targets per run; job rows only marked; every row done in the same transaction', async (t) => {
    const onGithub = await insertRun(db.pool, { sourceId: github, jobs: [{ name: 'build', runsOn: ['nobody'] }] });
    const onGit = await insertRun(db.pool, { sourceId: git, provider: 'git', jobs: [{ name: 'build', runsOn: ['nobody'] }] });
    // A run a generic delivery fanned out to a git registration: `<delivery id>:<registration id>`.
    const fannedOut = await insertRun(db.pool, { sourceId: git, provider: 'git', jobs: [{ name: 'build', runsOn: ['nobody'] }] });
    await db.pool.query(sql.unsafe`UPDATE runs SET delivery_id = ${`gen-1#2:${randomUUID()}`} WHERE id = ${fannedOut.runId}`);
    await db.pool.query(sql.unsafe`
      INSERT INTO webhook_deliveries (org_id, delivery_id, source_id, routing_key, provider_kind, status)
      VALUES ('org-1', 'gen-1', ${generic}, 'generic:alerts', 'generic', 'matched')`);
    const sourceless = await insertRun(db.pool, { jobs: [{ name: 'build', runsOn: ['nobody'] }] });
    for (const run of [onGithub, onGit, fannedOut, sourceless]) await advance(db.pool, run.runId, 'running', 'failed');

    const pending = Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM run_status_feed WHERE forge_done_at IS NULL`));
    t.equal(pending, 4 * 3 + 4, 'three run changes and one job row per run');
    const drained = await drainFeedBatch(feed(db.pool), 100);
    t.same(drained, { rows: 16, enqueued: 3 + 3 + 6 });
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM run_status_feed WHERE forge_done_at IS NULL`)), 0, 'every row marked, job rows too');
    t.same(await drainFeedBatch(feed(db.pool), 100), { rows: 0, enqueued: 0 }, 'nothing left');

    t.same(await deliveries(db.pool, onGithub.runId), [
      { run_id: onGithub.runId, target: 'provider', provider_kind: 'github', run_status: 'queued', state: 'queued', conclusion: null, status: 'superseded' },
      { run_id: onGithub.runId, target: 'provider', provider_kind: 'github', run_status: 'running', state: 'in_progress', conclusion: null, status: 'superseded' },
      { run_id: onGithub.runId, target: 'provider', provider_kind: 'github', run_status: 'failed', state: 'completed', conclusion: 'failure', status: 'pending' },
    ], 'github reports: one check run shows the latest state, so waiting earlier ones are superseded');
    t.same((await deliveries(db.pool, onGit.runId)).map((d) => [d.target, d.run_status, d.status]), [
      ['webhook', 'queued', 'pending'],
      ['webhook', 'running', 'pending'],
      ['webhook', 'failed', 'pending'],
    ], 'git does not report run status: its webhook hears every change');
    t.same((await deliveries(db.pool, fannedOut.runId)).map((d) => [d.target, d.provider_kind, d.run_status]), [
      ['webhook', 'generic', 'queued'],
      ['webhook', 'git', 'queued'],
      ['webhook', 'generic', 'running'],
      ['webhook', 'git', 'running'],
      ['webhook', 'generic', 'failed'],
      ['webhook', 'git', 'failed'],
    ], "the run's own source and the generic source that started it");
    t.same(await deliveries(db.pool, sourceless.runId), [], 'a run from no source reports nowhere');

    const leased = await leaseDeliveries(db.pool, 'node-a', 60_000, 3, 100);
    t.same(
      leased.map((d) => [d.run_id, d.provider_kind, d.run_status]).sort(),
      [
        [onGithub.runId, 'github', 'failed'],
        [onGit.runId, 'git', 'queued'],
        [fannedOut.runId, 'generic', 'queued'],
        [fannedOut.runId, 'git', 'queued'],
      ].sort(),
      'one run and target at a time, the oldest change first',
    );
    t.same(await leaseDeliveries(db.pool, 'node-b', 60_000, 3, 100), [], 'leased ones, and those behind them, are not due for another node');
  });

  await t.test('a node that stops mid-attempt: its lease expires, another node takes over; on the last attempt it fails', async (t) => {
    const run = await insertRun(db.pool, { sourceId: git, provider: 'git', jobs: [{ name: 'a', runsOn: ['nobody'] }] });
    await drainFeedBatch(feed(db.pool), 100);
    const expire = (id: string) => db.pool.query(sql.unsafe`UPDATE forge_status_deliveries SET lease_until = clock_timestamp() - interval '1 second' WHERE id = ${id}`);
    const mine = <R extends { run_id: string }>(rows: readonly R[]): R[] => rows.filter((r) => r.run_id === run.runId);
    const [first] = mine(await leaseDeliveries(db.pool, 'node-a', 60_000, 2, 100));
    t.match(first, { attempts: 1, run_status: 'queued' });
    t.same(mine(await leaseDeliveries(db.pool, 'node-b', 60_000, 2, 100)), [], 'held by node-a');
    await expire(first!.id);
    const [second] = mine(await leaseDeliveries(db.pool, 'node-b', 60_000, 2, 100));
    t.match(second, { id: first!.id, attempts: 2 }, 'node-b takes it over, as attempt 2');
    t.equal(await finishDelivery(db.pool, first!, 'node-a', { status: 'delivered', statusCode: 200, externalId: null }), false, "node-a's late result is not recorded");
    await expire(first!.id);
    t.equal(await failExhausted(db.pool, 2), 1, 'the last attempt never finished: failed');
    const row = (await db.pool.one(sql.unsafe`SELECT status, last_error FROM forge_status_deliveries WHERE id = ${first!.id}`)) as { status: string; last_error: string };
    t.match(row, { status: 'failed', last_error: /the last attempt did not finish \(its node stopped; lease expired on node-b\)/ });
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM forge_status_attempts WHERE delivery_id = ${first!.id}`)), 0, 'no attempt finished');
  });

  await t.test('finished deliveries are deleted after their retention; pending ones never', async (t) => {
    const run = await insertRun(db.pool, { sourceId: git, provider: 'git', jobs: [{ name: 'a', runsOn: ['nobody'] }] });
    await drainFeedBatch(feed(db.pool), 100);
    await db.pool.query(sql.unsafe`UPDATE forge_status_deliveries SET updated_at = now() - interval '31 days' WHERE run_id = ${run.runId}`);
    t.equal(await pruneDeliveries(db.pool), 0, 'still pending: kept however old');
    await db.pool.query(sql.unsafe`UPDATE forge_status_deliveries SET status = 'delivered' WHERE run_id = ${run.runId}`);
    t.equal(await pruneDeliveries(db.pool), 1);
    t.equal(await pruneDeliveries(db.pool), 0);
  });

  await t.test('nodes draining at once share the rows and never enqueue a change twice', async (t) => {
    const runs = [];
    for (let i = 0; i < 6; i++) runs.push(await insertRun(db.pool, { sourceId: git, provider: 'git', jobs: [{ name: 'a', runsOn: ['nobody'] }, { name: 'b', runsOn: ['nobody'] }] }));
    for (const run of runs) await advance(db.pool, run.runId, 'running', 'completed');
    const before = Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM forge_status_deliveries`));
    const drain = async () => {
      let total = 0;
      for (;;) {
        const { rows, enqueued } = await drainFeedBatch(feed(db.pool), 3);
        total += enqueued;
        if (rows === 0) return total;
      }
    };
    const totals = await Promise.all([drain(), drain(), drain(), drain()]);
    t.equal(totals.reduce((a, b) => a + b, 0), 6 * 3, 'three changes per run, each once');
    const after = Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM forge_status_deliveries`));
    t.equal(after - before, 18);
    const dupes = Number(await db.pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM (SELECT feed_seq, target, source_id FROM forge_status_deliveries GROUP BY 1, 2, 3 HAVING count(*) > 1) d`));
    t.equal(dupes, 0, 'no feed row enqueued twice');
  });
});
