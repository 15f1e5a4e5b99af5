// `queue.maxDepth` (docs/config.md): a delivery whose runs would take the queued jobs past the
// limit creates no run; it is recorded `shed` with a reason naming the setting and answered
// "retry later", and a replay once the limit allows it creates the run. The limit is read per
// delivery, so a reload applies it.
import t from 'tap';
import { sourcePointerKey } from '../../../../kernel/orchestrator/ingest/steps/caches.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload, SHA_A } from '../../../fixtures/github-payloads.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { count, deliveryRow, delivery, makeHarness } from './harness.ts';

await eachDatabase(t, async (t, db) => {
  let maxDepth: number | undefined = 2;
  const h = await makeHarness(t, db, { queueMaxDepth: () => maxDepth });
  const { secret } = await h.addSource();
  h.forge.putLock(SHA_A, [workflow('ci', [trig.push({ branches: ['main'] })])]);
  // A source cache hit: each run queues its one job at once (no shared build).
  await h.storage.put(sourcePointerKey('acme', workflow('ci', [trig.push()]).contentHash), Buffer.from('digest'));
  const queued = () => count(db, 'jobs', sql.fragment`status = 'queued'`);

  await t.test('runs are created while the queue stays within queue.maxDepth', async (t) => {
    for (let i = 0; i < 2; i += 1) {
      const outcome = await h.pipeline.ingestDelivery(delivery(pushPayload(), { secret }));
      t.same([outcome.result, outcome.status, outcome.runIds.length], ['accepted', 'matched', 1]);
    }
    t.equal(await queued(), 2, 'two jobs queued: the limit exactly');
  });

  await t.test('past the limit: no run, recorded shed with the setting named, retry later', async (t) => {
    const d = delivery(pushPayload(), { secret });
    const runsBefore = await count(db, 'runs');
    const outcome = await h.pipeline.ingestDelivery(d);
    t.equal(outcome.result, 'shed_retry_later');
    t.equal(outcome.status, 'shed');
    t.ok((outcome.retryAfterSeconds ?? 0) > 0, 'a retry hint');
    t.same(outcome.runIds, []);
    t.match(outcome.message, /^queue\.maxDepth \(2\) reached: the run\(s\) of this delivery would queue 1 more job\(s\); no run created/);
    const row = await deliveryRow(db, d.deliveryId);
    t.equal(row?.status, 'shed', 'recorded, not dropped');
    t.match(row?.shed_reason, /^queue\.maxDepth \(2\) reached/);
    t.match(row?.steps.find((s) => s.step === 'dispatch'), { outcome: 'shed', detail: /queue\.maxDepth/ }, 'the step log says why');
    t.notOk(row?.steps.some((s) => s.outcome === 'runs_created'), 'no step claims runs were made');
    t.equal(await count(db, 'runs'), runsBefore, 'no run created');
    t.equal(await queued(), 2, 'queue unchanged');

    // A reload raising the limit applies to the next delivery: the replay creates the run.
    maxDepth = 10;
    const replay = await h.pipeline.ingestDelivery({ ...d, replay: true });
    t.same([replay.result, replay.status, replay.runIds.length], ['accepted', 'matched', 1]);
    const after = await deliveryRow(db, d.deliveryId);
    t.equal(after?.status, 'matched', 'the shed record is upgraded by the replay');
    t.equal(after?.shed_reason, null);
    t.equal(await queued(), 3);
  });

  await t.test('a delivery that matches nothing is never shed by the queue limit', async (t) => {
    maxDepth = 1;
    const outcome = await h.pipeline.ingestDelivery(delivery(pushPayload({ ref: 'refs/heads/topic' }), { secret }));
    t.equal(outcome.result, 'accepted');
    t.equal(outcome.status, 'no_match');
  });
});
