// Event-log payloads written after the ack: a confirmation the database refuses (here: the
// table is renamed away for a moment, a real PostgreSQL error) is kept and recorded once the
// database takes it again, so a database blip never leaves a stored payload recorded as lost.
// Found by the fault suite (test/faults/postgres-restart.test.ts): before, every confirmation in
// flight during a PostgreSQL restart was dropped and its record said `storage_failed` for ever.
import { gunzipSync } from 'node:zlib';
import { pino } from 'pino';
import t from 'tap';
import { EventLogWriter } from '../../../../kernel/orchestrator/ingest/record/event-log.ts';
import { readDeliveryPayload } from '../../../../kernel/orchestrator/runs/api/payload.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { until } from '../../../fixtures/runs.ts';
import { delivery, deliveryRow, makeHarness } from './harness.ts';

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { secret } = await h.addSource();

  await t.test('a confirmation the database refuses is retried until it is recorded', async (t) => {
    const d = delivery(pushPayload({ ref: 'refs/heads/topic', after: 'e'.repeat(40) }), { secret });
    t.equal((await h.pipeline.ingestDelivery(d)).result, 'accepted');
    t.ok(await h.pipeline.eventLog.drain(), 'the pipeline wrote and confirmed it');
    // Back to how the record reads between the commit and the confirmation.
    await db.pool.query(sql.unsafe`update webhook_deliveries set payload_omitted = true, payload_omitted_reason = 'storage_failed' where delivery_id = ${d.deliveryId}`);

    const warnings: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
    const writer = new EventLogWriter({ storage: h.storage, pool: db.pool, logger, maxPayloadBytes: 5 * 1024 * 1024, flushMs: 5 });
    await db.pool.query(sql.unsafe`alter table webhook_deliveries rename to webhook_deliveries_away`);
    let renamed = true;
    t.teardown(async () => {
      if (renamed) await db.pool.query(sql.unsafe`alter table webhook_deliveries_away rename to webhook_deliveries`);
    });
    writer.write(d, writer.plan(d));
    await until('the confirmation to be refused', () => (warnings.some((w) => w.includes('event-log confirmations not recorded')) ? true : undefined), 30_000, 10);
    t.ok(writer.pending > 0, 'the refused confirmation is still held');
    await db.pool.query(sql.unsafe`alter table webhook_deliveries_away rename to webhook_deliveries`);
    renamed = false;

    t.ok(await writer.drain(60_000), 'drained once the database takes it');
    const row = await deliveryRow(db, d.deliveryId);
    t.same([row?.payload_omitted, row?.payload_omitted_reason], [false, null], 'recorded as stored');
    t.not(await h.storage.head(row!.payload_key!), null, 'the object is stored');
    t.equal(writer.written, 1);
    t.equal(writer.droppedOutcomes, 0);
  });

  await t.test('stored payloads inflate to the exact body, small and large (deflate sized to the body)', async (t) => {
    const small = delivery(pushPayload({ ref: 'refs/heads/tiny', after: 'f'.repeat(40) }), { secret });
    const large = delivery({ ...pushPayload({ ref: 'refs/heads/big', after: '1'.repeat(40) }), padding: 'x'.repeat(40_000) + 'y'.repeat(20_000) }, { secret });
    for (const d of [small, large]) {
      t.equal((await h.pipeline.ingestDelivery(d)).result, 'accepted');
      t.ok(await h.pipeline.eventLog.drain());
      const row = await deliveryRow(db, d.deliveryId);
      const chunks: Buffer[] = [];
      for await (const chunk of await h.storage.get(row!.payload_key!)) chunks.push(chunk as Buffer);
      t.same(gunzipSync(Buffer.concat(chunks)), d.body, `${d.body.length}-byte body round-trips`);
    }
  });

  await t.test('a payload read before its confirmation: served when the object is there, "still pending" when not', async (t) => {
    const d = delivery(pushPayload({ ref: 'refs/heads/early', after: '2'.repeat(40) }), { secret });
    t.equal((await h.pipeline.ingestDelivery(d)).result, 'accepted');
    t.ok(await h.pipeline.eventLog.drain());
    const stored = await readDeliveryPayload(db.pool, h.storage, 'acme', d.deliveryId);
    t.same(stored.payload, JSON.parse(d.body.toString('utf8')), 'confirmed: read as always');
    // How the record reads between the commit and the confirmation, the object already written.
    await db.pool.query(sql.unsafe`update webhook_deliveries set payload_omitted = true, payload_omitted_reason = 'storage_failed' where delivery_id = ${d.deliveryId}`);
    t.same((await readDeliveryPayload(db.pool, h.storage, 'acme', d.deliveryId)).payload, stored.payload, 'written, not yet confirmed: served from storage');
    // ... and before the write (or after a crash before it).
    const row = await deliveryRow(db, d.deliveryId);
    await h.storage.delete(row!.payload_key!);
    await t.rejects(readDeliveryPayload(db.pool, h.storage, 'acme', d.deliveryId), {
      code: 'SVC_ERR_RUNS_PAYLOAD_OMITTED',
      message: /was not kept: it is not in storage: storage failed when it arrived, or its write is still pending/,
    });
    // A write that failed cleared the key: that says storage failed, and reads nothing.
    await db.pool.query(sql.unsafe`update webhook_deliveries set payload_key = null where delivery_id = ${d.deliveryId}`);
    await t.rejects(readDeliveryPayload(db.pool, h.storage, 'acme', d.deliveryId), { code: 'SVC_ERR_RUNS_PAYLOAD_OMITTED', message: /was not kept: storage failed when it arrived$/ });
  });
});
