// The node's memory of the queue depth (ingest/steps/queue-depth.ts): far below `queue.maxDepth`
// one count serves the deliveries that follow (their jobs added to it), near the limit every
// delivery counts again and the limit is exact, a count too old or made for another limit is
// not trusted, and a count that found the queue full sheds. Real jobs in a real database; the
// trust window is set long so no assertion depends on the machine's speed.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { CommonQueryMethods } from 'slonik';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { QueueDepthGuard } from '../../../../kernel/orchestrator/ingest/steps/queue-depth.ts';
import { migrate, sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun } from '../../../fixtures/runs.ts';

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: db.logger });
  /** One delivery's transaction: `jobs` queued jobs inserted, then the guard, committed unless shed. */
  const deliver = async (guard: QueueDepthGuard, maxDepth: number, jobs: number) => {
    const check = await db.pool
      .transaction(async (tx: CommonQueryMethods) => {
        await insertJobs(tx, jobs);
        const result = await guard.check(tx, maxDepth, jobs);
        if (result.reason !== null) throw Object.assign(new Error('shed'), { result });
        return result;
      })
      .catch((error: { result?: Awaited<ReturnType<QueueDepthGuard['check']>> }) => {
        if (error.result === undefined) throw error;
        return error.result;
      });
    if (check.reason === null) guard.committed(check, jobs);
    return check;
  };
  let runId = '';
  const insertJobs = async (tx: CommonQueryMethods, n: number) => {
    for (let i = 0; i < n; i += 1) {
      await tx.query(sql.unsafe`
        INSERT INTO jobs (id, run_id, org_id, name, display_name, kind, needs, runs_on, status, queued_at)
        VALUES (${randomUUID()}, ${runId}, 'org-1', ${`j${i}`}, 'j', 'job', '{}', '{}', 'queued', now())`);
    }
  };
  const queued = async () => Number(await db.pool.oneFirst(sql.unsafe`select count(*) from jobs where status = 'queued'`));

  await t.test('far below the limit one count serves the next deliveries; near it each counts, exactly', async (t) => {
    runId = (await insertRun(db.pool, { orgId: 'org-1', jobs: [] })).runId;
    const guard = new QueueDepthGuard({ refreshMs: 3_600_000 });
    // One job each, limit 20: skipping lasts while last count + jobs since + 1 ≤ 18 (90 %).
    for (let i = 0; i < 18; i += 1) t.equal((await deliver(guard, 20, 1)).reason, null);
    t.equal(guard.counts, 1, 'one count for eighteen deliveries');
    t.equal(await queued(), 18);
    for (let i = 0; i < 2; i += 1) t.equal((await deliver(guard, 20, 1)).reason, null, 'up to the limit exactly');
    t.equal(guard.counts, 3, 'past 90 % of the limit every delivery counts');
    const shed = await deliver(guard, 20, 1);
    t.equal(guard.counts, 4);
    t.match(shed.reason, /^queue\.maxDepth \(20\) reached: the run\(s\) of this delivery would queue 1 more job\(s\)/);
    t.equal(await queued(), 20, 'the shed delivery added nothing');
  });

  await t.test('a count made for another limit, or too old, is not trusted', async (t) => {
    await db.pool.query(sql.unsafe`update jobs set status = 'cancelled' where status = 'queued'`);
    const guard = new QueueDepthGuard({ refreshMs: 3_600_000 });
    await deliver(guard, 1000, 1);
    await deliver(guard, 1000, 1);
    t.equal(guard.counts, 1);
    await deliver(guard, 999, 1);
    t.equal(guard.counts, 2, 'a reload changed queue.maxDepth: counted again');
    const stale = new QueueDepthGuard({ refreshMs: 0 });
    await deliver(stale, 1000, 1);
    await deliver(stale, 1000, 1);
    t.equal(stale.counts, 2, 'a count older than the trust window is made again');
  });

  await t.test('no limit or nothing queued by this delivery: never counted', async (t) => {
    const guard = new QueueDepthGuard();
    await db.pool.transaction(async (tx) => {
      t.same(await guard.check(tx, undefined, 3), { reason: null, counted: false });
      t.same(await guard.check(tx, 10, 0), { reason: null, counted: false });
    });
    t.equal(guard.counts, 0);
  });
});
