// Step 10 (registrations on a default-branch push) runs once per delivery. It commits in its own
// transaction before the delivery's record, so a delivery processed again — replayed by the relay
// to a restarted orchestrator or another node after the first attempt committed, or retried after
// a queue.maxDepth shed — reached it a second time and emitted a second `registration.updated`
// (a lifecycle workflow on it ran twice for one push). Found by the fault suite
// (test/faults/orchestrator-kill.test.ts counts the events per push).
import t from 'tap';
import { sourcePointerKey } from '../../../../kernel/orchestrator/ingest/steps/caches.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload, SHA_A } from '../../../fixtures/github-payloads.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { count, delivery, deliveryRow, makeHarness } from './harness.ts';

await eachDatabase(t, async (t, db) => {
  let maxDepth: number | undefined;
  const h = await makeHarness(t, db, { queueMaxDepth: () => maxDepth });
  const { secret } = await h.addSource();
  const ci = workflow('ci', [trig.push({ branches: ['main'] })]);
  const onRegistration = workflow('on-registration', [trig.lifecycle({ events: ['registration.updated'] })]);
  h.forge.putLock(SHA_A, [ci, onRegistration]);
  await h.storage.put(sourcePointerKey('acme', ci.contentHash), Buffer.from('digest'));
  const events = async () => ({
    ingest: await count(db, 'ingest_events', sql.fragment`name = 'registration.updated'`),
    internal: Number(await db.pool.oneFirst(sql.unsafe`select count(*) from internal_events where name = 'registration.updated'`)),
  });

  await t.test('a recorded push replayed on another node (or a restarted one): answered duplicate, registration.updated emitted once', async (t) => {
    const before = await events();
    const d = delivery(pushPayload(), { secret });
    t.equal((await h.pipeline.ingestDelivery(d)).status, 'matched');
    const other = h.newPipeline({ nodeId: 'node-b' });
    const again = await other.ingestDelivery({ ...d, replay: true });
    t.equal(again.result, 'duplicate');
    t.same(await events(), { ingest: before.ingest + 1, internal: before.internal + 1 }, 'one event for the one push');
  });

  await t.test('a push shed after step 10 (queue.maxDepth) and sent again: one registration.updated', async (t) => {
    const before = await events();
    maxDepth = 0;
    const d = delivery(pushPayload({ message: 'shed then retried' }), { secret });
    t.equal((await h.pipeline.ingestDelivery(d)).result, 'shed_retry_later');
    maxDepth = undefined;
    const retried = await h.newPipeline({ nodeId: 'node-c' }).ingestDelivery({ ...d, replay: true });
    t.equal(retried.status, 'matched');
    const row = await deliveryRow(db, d.deliveryId);
    t.match(row?.steps.find((s) => s.step === 'registrations')?.detail, /already replaced by an earlier attempt of this delivery/);
    t.same(await events(), { ingest: before.ingest + 1, internal: before.internal + 1 }, 'one event for the one push');
    t.equal(await count(db, 'registrations', sql.fragment`repository = 'acme/app'`), 1, 'the registrations of the lock, once');
  });

  await t.test('each new push to the default branch still emits its own event', async (t) => {
    const before = await events();
    for (let i = 0; i < 3; i += 1) t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload({ message: `push ${i}` }), { secret }))).status, 'matched');
    t.same(await events(), { ingest: before.ingest + 3, internal: before.internal + 3 });
  });
});
