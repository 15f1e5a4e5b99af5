// Batched records for deliveries without runs: many concurrent no-match deliveries share
// statements, each still gets exactly one committed record before its answer; the same id twice
// in flight is one record and one duplicate; a row that cannot be written fails alone.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { count, delivery, deliveryRow, makeHarness } from './harness.ts';

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { secret } = await h.addSource();

  await t.test('concurrent no-match deliveries: one record each, fewer statements than deliveries', async (t) => {
    const ds = Array.from({ length: 60 }, () => delivery(pushPayload({ ref: 'refs/heads/topic', after: 'e'.repeat(40) }), { secret }));
    const before = h.pipeline.outcomes.statements;
    const metricsBefore = await h.metrics.text();
    const outcomes = await Promise.all(ds.map((d) => h.pipeline.ingestDelivery(d)));
    t.ok(outcomes.every((o) => o.result === 'accepted' && o.status === 'no_lock_file'));
    // Every answer came after its row was committed: all rows are there now.
    t.equal(await count(db, 'webhook_deliveries', sql.fragment`delivery_id = any(${sql.array(ds.map((d) => d.deliveryId), 'text')})`), 60);
    const row = await deliveryRow(db, ds[7]!.deliveryId);
    t.equal(row?.status, 'no_lock_file');
    t.same(row?.steps.map((s) => s.step).slice(0, 3), ['admission', 'verify-signature', 'dedup']);
    const statements = h.pipeline.outcomes.statements - before;
    t.ok(statements < 60, `batched: ${statements} statement(s) for 60 deliveries`);
    // Each delivery's stages (ingest/stage-metrics.ts): its steps, its wait for a batch, the batch's statement.
    const metricsAfter = await h.metrics.text();
    const stageCount = (text: string, stage: string) => Number(new RegExp(`^svc_orch_ingest_stage_seconds_count\\{stage="${stage}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    for (const stage of ['steps', 'batch_wait', 'batch_write']) t.equal(stageCount(metricsAfter, stage) - stageCount(metricsBefore, stage), 60, `stage ${stage} observed once per delivery`);
    t.equal(stageCount(metricsAfter, 'commit') - stageCount(metricsBefore, 'commit'), 0, 'no runs: no run transaction');
  });

  await t.test('the same delivery twice in flight (two nodes): one record, one duplicate', async (t) => {
    const d = delivery(pushPayload({ ref: 'refs/heads/topic', after: 'e'.repeat(40) }), { secret, deliveryId: randomUUID() });
    const other = h.newPipeline({ nodeId: 'node-z' });
    const filler = Array.from({ length: 10 }, () => h.pipeline.ingestDelivery(delivery(pushPayload({ ref: 'refs/heads/topic', after: 'e'.repeat(40) }), { secret })));
    const [a, b] = await Promise.all([h.pipeline.ingestDelivery(d), other.ingestDelivery({ ...d, replay: true }), ...filler]);
    t.same([a!.result, b!.result].sort(), ['accepted', 'duplicate']);
    t.equal(await count(db, 'webhook_deliveries', sql.fragment`delivery_id = ${d.deliveryId}`), 1);
    t.equal((await deliveryRow(db, d.deliveryId))?.duplicates, 1);
  });

  await t.test('a shed record is upgraded by a batched outcome', async (t) => {
    const full = h.newPipeline({ admission: { maxInFlight: 0 } });
    const d = delivery(pushPayload({ ref: 'refs/heads/topic', after: 'e'.repeat(40) }), { secret });
    t.equal((await full.ingestDelivery(d)).status, 'shed');
    const again = await Promise.all([h.pipeline.ingestDelivery({ ...d, replay: true }), ...Array.from({ length: 5 }, () => h.pipeline.ingestDelivery(delivery(pushPayload({ ref: 'refs/heads/x', after: 'e'.repeat(40) }), { secret })))]);
    t.equal(again[0]!.status, 'no_lock_file');
    const row = await deliveryRow(db, d.deliveryId);
    t.same([row?.status, row?.attempts, row?.shed_reason], ['no_lock_file', 2, null]);
  });
});
