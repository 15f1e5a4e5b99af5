// A new delivery's one run in ONE statement (ingest/steps/one-statement-run.ts): the same record,
// run and job rows the transaction writes; anything already there (a run, a record) aborts the
// statement whole and the transaction takes over; a hold, a build or a queue count due go
// through the transaction. Real PostgreSQL (system and embedded), real pipeline.
import t from 'tap';
import { sourcePointerKey } from '../../../../kernel/orchestrator/ingest/steps/caches.ts';
import { isUniqueViolation, sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../../../fixtures/locks.ts';
import type { LockWorkflow } from '../../../../schemas/lock.ts';
import { count, delivery, deliveryRow, makeHarness } from './harness.ts';

const STAGES = ['one_statement', 'one_statement_aborted', 'connection', 'statements', 'commit'] as const;

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { secret } = await h.addSource();
  const stageCounts = async (): Promise<Record<string, number>> => {
    const text = await h.metrics.text();
    return Object.fromEntries(STAGES.map((s) => [s, Number(new RegExp(`^svc_orch_ingest_stage_seconds_count\\{stage="${s}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)]));
  };
  /** Which path each stage count says the deliveries sent by `fn` took. */
  const pathOf = async (fn: () => Promise<unknown>): Promise<Record<string, number>> => {
    const before = await stageCounts();
    await fn();
    const after = await stageCounts();
    return Object.fromEntries(STAGES.map((s) => [s, after[s]! - before[s]!]));
  };
  const ONE = { one_statement: 1, one_statement_aborted: 0, connection: 0, statements: 0, commit: 0 };
  const TRANSACTION = { one_statement: 0, one_statement_aborted: 0, connection: 1, statements: 1, commit: 1 };
  const ABORTED_THEN_TRANSACTION = { ...TRANSACTION, one_statement_aborted: 1 };
  /** A source cache hit for `wf`: its runs wait for no build. */
  const cacheHit = (wf: LockWorkflow) => h.storage.put(sourcePointerKey('acme', wf.contentHash), Buffer.from('digest'));
  const jobRows = async (runId: string): Promise<Array<Record<string, unknown>>> =>
    (await db.pool.any(sql.unsafe`
      select name, display_name, kind, status, needs, runs_on, matrix, waits_for_build, gated, concurrency_group,
        queued_at is not null as has_queued_at, ready_at is not null as has_ready_at, org_id
      from jobs where run_id = ${runId} order by display_name`)) as Array<Record<string, unknown>>;

  // A job of each kind the planner treats differently: ready at once, a static matrix, one that
  // needs others, one gated by a job concurrency group.
  const lint = { ...job('lint'), matrix: { type: 'static' as const, axes: { os: ['linux', 'mac'], node: [20, 22] }, size: 4 } };
  const deploy = { ...job('deploy'), needs: ['build', 'lint'], concurrency: { hasGroup: false, cancelInProgress: false } } as LockWorkflow['jobs'][number];
  const shaped = workflow('shaped', [trig.push()], [job('build'), lint, deploy]);

  await t.test('a new delivery with one run: record, run and every job row in one statement, as the transaction writes them', async (t) => {
    const shaOne = '1'.repeat(40);
    const shaTwo = '2'.repeat(40);
    const other = workflow('other', [trig.push()]);
    await cacheHit(shaped);
    await cacheHit(other);
    h.forge.putLock(shaOne, [shaped]);
    // The same workflow beside another: two runs, so the transaction writes them.
    h.forge.putLock(shaTwo, [shaped, other]);
    const d = delivery(pushPayload({ after: shaOne, ref: 'refs/heads/one' }), { secret });
    let one: Awaited<ReturnType<typeof h.pipeline.ingestDelivery>> | undefined;
    t.same(await pathOf(async () => (one = await h.pipeline.ingestDelivery(d))), ONE, 'one statement, no transaction');
    t.equal(one?.status, 'matched');
    t.equal(one?.runIds.length, 1);
    let two: Awaited<ReturnType<typeof h.pipeline.ingestDelivery>> | undefined;
    t.same(
      await pathOf(async () => (two = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: shaTwo, ref: 'refs/heads/two' }), { secret })))),
      TRANSACTION,
      'two runs: the transaction',
    );
    const viaTransaction = (await db.pool.one(sql.unsafe`select id::text as id from runs where id = any(${sql.array(two!.runIds, 'uuid')}) and workflow = 'shaped'`)) as { id: string };

    const rowsOne = await jobRows(one!.runIds[0]!);
    t.equal(rowsOne.length, 6, 'build, four lint instances, deploy');
    t.same(rowsOne, await jobRows(viaTransaction.id), 'job rows identical to the transaction’s');
    t.same(
      rowsOne.filter((r) => r['status'] === 'queued').map((r) => r['display_name']),
      ['build', 'lint (20, linux)', 'lint (20, mac)', 'lint (22, linux)', 'lint (22, mac)'],
      'jobs without needs are queued',
    );
    const runOf = (id: string) =>
      db.pool.one(sql.unsafe`select status, event_name, workflow, sha, ref, concurrency_group, lock_entry->>'name' as lock_name from runs where id = ${id}`);
    const runOne = (await runOf(one!.runIds[0]!)) as Record<string, unknown>;
    t.match(runOne, { status: 'queued', workflow: 'shaped', sha: shaOne, ref: 'refs/heads/one', lock_name: 'shaped' });
    const record = await deliveryRow(db, d.deliveryId);
    t.equal(record?.status, 'matched');
    t.same(record?.run_ids, one!.runIds, 'the record names its run');
    t.match(record?.steps.find((s) => s.step === 'dispatch')?.detail, new RegExp(`shaped → run ${one!.runIds[0]}, 6 job\\(s\\), status queued`));
    t.equal(record?.steps.filter((s) => s.step === 'delivery-record').length, 1, 'steps written once');
    // The feed trigger saw the run and its jobs (migration 0600), with its NOTIFY left to us.
    const feed = (await db.pool.one(sql.unsafe`select count(*)::int as n from run_status_feed where run_id = ${one!.runIds[0]!}`)) as { n: number };
    t.ok(feed.n >= 1, 'the run status feed has the new run');
  });

  await t.test('a run already there aborts the statement whole; the transaction adopts the run', async (t) => {
    const sha = '3'.repeat(40);
    const adopt = workflow('adopt', [trig.push()]);
    await cacheHit(adopt);
    h.forge.putLock(sha, [adopt]);
    const d = delivery(pushPayload({ after: sha, ref: 'refs/heads/adopt' }), { secret });
    const first = await h.pipeline.ingestDelivery(d);
    // As if the record had been lost while its run stayed (a retention purge, a restore).
    await db.pool.query(sql.unsafe`delete from webhook_deliveries where delivery_id = ${d.deliveryId}`);
    const jobsBefore = await count(db, 'jobs', sql.fragment`run_id = ${first.runIds[0]!}`);
    let again: Awaited<ReturnType<typeof h.pipeline.ingestDelivery>> | undefined;
    t.same(await pathOf(async () => (again = await h.newPipeline({ nodeId: 'node-r' }).ingestDelivery({ ...d, replay: true }))), ABORTED_THEN_TRANSACTION, 'the one statement aborted, the transaction followed');
    t.equal(again?.status, 'matched');
    t.same(again?.runIds, first.runIds, 'the existing run');
    t.equal(await count(db, 'runs', sql.fragment`delivery_id = ${d.deliveryId}`), 1, 'no second run');
    t.equal(await count(db, 'jobs', sql.fragment`run_id = ${first.runIds[0]!}`), jobsBefore, 'no jobs from the aborted statement');
    t.equal(await count(db, 'jobs', sql.fragment`run_id not in (select id from runs)`), 0, 'no job without its run');
    const record = await deliveryRow(db, d.deliveryId);
    t.same(record?.run_ids, first.runIds);
    t.match(record?.steps.find((s) => s.step === 'dispatch')?.detail, /\(existing\)/);
    t.equal(record?.steps.filter((s) => s.step === 'dispatch').length, 1, 'the aborted attempt left no steps behind');
  });

  await t.test('a duplicate: the statement writes nothing and the duplicate is counted once', async (t) => {
    const sha = '4'.repeat(40);
    const dup = workflow('dup', [trig.push()]);
    await cacheHit(dup);
    h.forge.putLock(sha, [dup]);
    const d = delivery(pushPayload({ after: sha, ref: 'refs/heads/dup' }), { secret });
    t.same(await pathOf(async () => t.equal((await h.pipeline.ingestDelivery(d)).status, 'matched')), ONE);
    let again: Awaited<ReturnType<typeof h.pipeline.ingestDelivery>> | undefined;
    const path = await pathOf(async () => (again = await h.newPipeline({ nodeId: 'node-d' }).ingestDelivery(d)));
    t.equal(path.one_statement_aborted, 1, 'the one statement found the record and wrote nothing');
    t.equal(again?.result, 'duplicate');
    t.equal(await count(db, 'runs', sql.fragment`delivery_id = ${d.deliveryId}`), 1);
    t.equal((await deliveryRow(db, d.deliveryId))?.duplicates, 1);
  });

  await t.test('a hold, a build to wait for or a queue count due take the transaction', async (t) => {
    const held = { ...workflow('held', [trig.push()]), approval: { clauses: [{ users: ['boss'], teams: [], roles: [], count: 1 }], when: 'always' as const } };
    await cacheHit(held);
    h.forge.putLock('5'.repeat(40), [held]);
    let o: Awaited<ReturnType<typeof h.pipeline.ingestDelivery>> | undefined;
    t.same(await pathOf(async () => (o = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: '5'.repeat(40), ref: 'refs/heads/h' }), { secret })))), TRANSACTION, 'approval hold');
    t.equal(((await db.pool.one(sql.unsafe`select status from runs where id = ${o!.runIds[0]!}`)) as { status: string }).status, 'held');

    // A lock with a lockfile hash and no source cache: the jobs wait for a build.
    h.forge.putLock('6'.repeat(40), [workflow('built', [trig.push()])], { lockfileHash: `npm:${'6'.repeat(64)}` });
    t.same(await pathOf(() => h.pipeline.ingestDelivery(delivery(pushPayload({ after: '6'.repeat(40), ref: 'refs/heads/b' }), { secret }))), TRANSACTION, 'a build');
    // The same with the source cache present: no build, one statement.
    const cached = workflow('cached', [trig.push()]);
    await cacheHit(cached);
    h.forge.putLock('7'.repeat(40), [cached]);
    t.same(await pathOf(() => h.pipeline.ingestDelivery(delivery(pushPayload({ after: '7'.repeat(40), ref: 'refs/heads/c' }), { secret }))), ONE, 'a source cache hit');

    // queue.maxDepth: a node's first delivery counts the queue (inside the transaction).
    const limited = h.newPipeline({ nodeId: 'node-q', queueMaxDepth: () => 10_000 });
    const counted = workflow('counted', [trig.push()]);
    await cacheHit(counted);
    h.forge.putLock('8'.repeat(40), [counted]);
    const counts = limited.queueDepth.counts;
    t.same(await pathOf(() => limited.ingestDelivery(delivery(pushPayload({ after: '8'.repeat(40), ref: 'refs/heads/q' }), { secret }))), TRANSACTION, 'a queue count due');
    t.equal(limited.queueDepth.counts, counts + 1, 'the queue was counted');
  });

  await t.test('isUniqueViolation: the database’s unique violation through slonik, nothing else', async (t) => {
    const failed = await db.pool.query(sql.unsafe`insert into webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, status, received_at)
      select org_id, delivery_id, routing_key, provider_kind, status, received_at from webhook_deliveries limit 1`).catch((e: unknown) => e);
    t.ok(isUniqueViolation(failed), 'a duplicate key');
    const other = await db.pool.query(sql.unsafe`select 1/0`).catch((e: unknown) => e);
    t.notOk(isUniqueViolation(other), 'division by zero');
    t.notOk(isUniqueViolation(undefined));
    t.notOk(isUniqueViolation('23505'));
    t.ok(isUniqueViolation(new Error('wrapped', { cause: { code: '23505' } })));
  });
});
