// The dispatch transaction writes the record first (claim and final form in one statement) with
// the ids of the runs it is about to create. A replay that takes over a record whose runs exist
// already (a row left `shed`/`processing` after its runs were made) names those runs instead, with
// "(existing)" in its steps: one record, one run per workflow.
import t from 'tap';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
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
    const again = await h.newPipeline({ nodeId: 'node-r' }).ingestDelivery({ ...d, replay: true });
    t.equal(again.status, 'matched');
    t.same(again.runIds, first.runIds, 'the existing run, not a new one');
    t.equal(await count(db, 'runs', sql.fragment`delivery_id = ${d.deliveryId}`), 1);
    const row = await deliveryRow(db, d.deliveryId);
    t.same(row?.run_ids, first.runIds, 'the record names the existing run only');
    t.match(row?.steps.find((s) => s.step === 'dispatch')?.detail, /\(existing\)/);
  });
});
