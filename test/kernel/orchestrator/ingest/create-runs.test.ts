// The dispatch transaction writes the record first (claim and final form in one statement) with
// the ids of the runs it is about to create. A replay that takes over a record whose runs exist
// already (a row left `shed`/`processing` after its runs were made) names those runs instead, with
// "(existing)" in its steps: one record, one run per workflow. The transaction NOTIFYs nothing:
// the dispatchers and the run status feed's consumers are woken after the commit.
import t from 'tap';
import { JOBS_CHANNEL } from '../../../../kernel/orchestrator/dispatch/notify.ts';
import { sourcePointerKey } from '../../../../kernel/orchestrator/ingest/steps/caches.ts';
import { RUN_STATUS_FEED_CHANNEL } from '../../../../kernel/orchestrator/runs/deferred-wakeups.ts';
import { createListener, notify, sql, WakeupSender } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';
import { pushPayload, SHA_A } from '../../../fixtures/github-payloads.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { count, delivery, deliveryRow, makeHarness } from './harness.ts';

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { secret } = await h.addSource();
  h.forge.putLock(SHA_A, [workflow('ci', [trig.push()])]);

  await t.test('record names the runs it created', async (t) => {
    const d = delivery(pushPayload(), { secret });
    const o = await h.pipeline.ingestDelivery(d);
    t.equal(o.status, 'matched');
    const row = await deliveryRow(db, d.deliveryId);
    t.same(row?.run_ids, o.runIds);
    t.match(row?.steps.find((s) => s.step === 'dispatch')?.detail, new RegExp(`ci → run ${o.runIds[0]}, 1 job\\(s\\), status queued`));
  });

  await t.test('a replay over existing runs names those runs', async (t) => {
    const d = delivery(pushPayload(), { secret });
    const first = await h.pipeline.ingestDelivery(d);
    // As if the record had been left replayable after its runs were committed.
    await db.pool.query(sql.unsafe`update webhook_deliveries set status = 'shed', run_ids = '{}' where delivery_id = ${d.deliveryId}`);
    const replayer = h.newPipeline({ nodeId: 'node-r' });
    const again = await replayer.ingestDelivery({ ...d, replay: true });
    await replayer.wakeups.idle();
    t.equal(again.status, 'matched');
    t.same(again.runIds, first.runIds, 'the existing run, not a new one');
    t.equal(await count(db, 'runs', sql.fragment`delivery_id = ${d.deliveryId}`), 1);
    const row = await deliveryRow(db, d.deliveryId);
    t.same(row?.run_ids, first.runIds, 'the record names the existing run only');
    t.match(row?.steps.find((s) => s.step === 'dispatch')?.detail, /\(existing\)/);
  });

  await t.test('no NOTIFY in the transaction: the wake-ups follow the commit; each stage is timed', async (t) => {
    // The earlier tests' wake-ups are sent after their commits, asynchronously: one still in
    // flight when the listener starts would be heard here (seen once under load).
    await h.pipeline.wakeups.idle();
    const heard: string[] = [];
    const listener = await createListener({ url: db.url, logger: testLogger });
    t.teardown(() => listener.close());
    for (const channel of [JOBS_CHANNEL, RUN_STATUS_FEED_CHANNEL, 'sentinel']) await listener.listen(channel, (_p, c) => heard.push(c));
    const held: string[][] = [];
    const wakeups = new (class extends WakeupSender {
      override wake(channels: Iterable<string>): void {
        held.push([...channels]);
      }
    })(db.pool, testLogger);
    // A source cache hit: the run's job is queued at once (so dispatchers have something to wake for).
    await h.storage.put(sourcePointerKey('acme', workflow('ci', [trig.push()]).contentHash), Buffer.from('digest'));
    const before = await h.metrics.text();
    const o = await h.newPipeline({ wakeups }).ingestDelivery(delivery(pushPayload(), { secret }));
    t.equal(o.status, 'matched');
    t.equal(await count(db, 'jobs', sql.fragment`run_id = ${o.runIds[0]!} and status = 'queued'`), 1, 'its job is queued');
    await notify(db.pool, 'sentinel', '');
    await until('the sentinel', () => (heard.includes('sentinel') ? true : undefined), 10_000, 10);
    t.same(heard, ['sentinel'], 'the committed run and job notified nothing by themselves');
    t.same(held.map((c) => [...c].sort()), [[JOBS_CHANNEL, RUN_STATUS_FEED_CHANNEL].sort()], 'the dispatchers and the feed consumers are woken after the commit');
    new WakeupSender(db.pool, testLogger).wake(held[0]!);
    await until('the wake-ups', () => (heard.includes(JOBS_CHANNEL) && heard.includes(RUN_STATUS_FEED_CHANNEL) ? true : undefined), 10_000, 10);

    const after = await h.metrics.text();
    const stageCount = (metrics: string, name: string) => Number(new RegExp(`^svc_orch_ingest_stage_seconds_count\\{stage="${name}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0);
    // A new delivery with one run: written by one statement (steps/one-statement-run.ts).
    for (const name of ['steps', 'one_statement']) t.equal(stageCount(after, name) - stageCount(before, name), 1, `stage ${name} observed once`);
    for (const name of ['connection', 'statements', 'commit']) t.equal(stageCount(after, name) - stageCount(before, name), 0, `no transaction stage ${name}`);
    t.equal(stageCount(after, 'batch_wait') - stageCount(before, 'batch_wait'), 0, 'a delivery with runs is not batched');
  });
});
