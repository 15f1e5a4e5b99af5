// Keeping the run status feed bounded on real PostgreSQL: rows of orgs the relay link does not
// serve, and every row of a node without a link, are marked handled after the grace period
// (never before); rows both consumers handled are deleted once old enough, others never; the
// unlinked node's janitor does it on its own timer.
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { pruneFeed, startFeedJanitor } from '../../../../kernel/orchestrator/relay-link/feed-janitor.ts';
import { pruneHandled, settleUnservable } from '../../../../kernel/orchestrator/relay-link/status-feed.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { insertRun, until } from '../../../fixtures/runs.ts';

const pendingOf = async (pool: DatabasePool, orgId: string): Promise<number> =>
  (await pool.oneFirst(sql.unsafe`select count(*)::int from run_status_feed where org_id = ${orgId} and relay_sent_at is null`)) as number;

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const mine = await insertRun(db.pool, { orgId: 'acme', jobs: [{ name: 'build' }] });
  await insertRun(db.pool, { orgId: 'umbrella', jobs: [{ name: 'build' }, { name: 'lint' }] });
  t.equal(await pendingOf(db.pool, 'acme'), 2, 'the trigger wrote a run row and a job row');
  t.equal(await pendingOf(db.pool, 'umbrella'), 3);

  await t.test('linked: only rows of other orgs, only after the grace period', async (t) => {
    t.equal(await settleUnservable(db.pool, 'acme', 60_000, 100), 0, 'too recent');
    t.equal(await settleUnservable(db.pool, 'acme', 0, 2), 2, 'bounded by the batch');
    t.equal(await settleUnservable(db.pool, 'acme', 0, 100), 1);
    t.equal(await pendingOf(db.pool, 'umbrella'), 0);
    t.equal(await pendingOf(db.pool, 'acme'), 2, "the link's own org stays pending");
  });

  await t.test('unlinked: every row after the grace period', async (t) => {
    t.same(await pruneFeed(db.pool, testLogger, { mode: 'unlinked' }, { graceMs: 60_000 }), { settled: 0, deleted: 0 });
    t.same(await pruneFeed(db.pool, testLogger, { mode: 'wait' }, { graceMs: 0 }), { settled: 0, deleted: 0 }, 'a link whose org is unknown marks nothing');
    t.same(await pruneFeed(db.pool, testLogger, { mode: 'unlinked' }, { graceMs: 0 }), { settled: 2, deleted: 0 });
    t.equal(await pendingOf(db.pool, 'acme'), 0);
  });

  await t.test('pruning needs both consumers and an hour', async (t) => {
    t.equal(await pruneHandled(db.pool, 0, 100), 0, 'forge_done_at is still null: nothing is deleted');
    // The forge reporter's mark, as it would set it.
    await db.pool.query(sql.unsafe`update run_status_feed set forge_done_at = now() where run_id = ${mine.runId}`);
    t.equal(await pruneHandled(db.pool, 60 * 60_000, 100), 0, 'handled just now: kept for an hour');
    await db.pool.query(sql.unsafe`update run_status_feed set relay_sent_at = now() - interval '2 hours', forge_done_at = now() - interval '2 hours' where run_id = ${mine.runId}`);
    t.equal(await pruneHandled(db.pool, 60 * 60_000, 100), 2);
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*)::int from run_status_feed`), 3, "the other org's rows (forge side pending) stay");
  });

  await t.test("the unlinked node's janitor runs on its own", async (t) => {
    await insertRun(db.pool, { orgId: 'acme', jobs: [{ name: 'build' }] });
    t.equal(await pendingOf(db.pool, 'acme'), 2);
    const janitor = startFeedJanitor({ pool: db.pool, logger: testLogger, retention: { everyMs: 50, graceMs: 0 } });
    t.teardown(() => janitor.stop());
    await until('the janitor to mark the rows', async () => ((await pendingOf(db.pool, 'acme')) === 0 ? true : undefined), 10_000, 50);
    await janitor.stop();
    t.pass('stopped');
  });
});
