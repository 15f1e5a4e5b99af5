// Event-log retention against real PostgreSQL, the real ingest pipeline and filesystem storage:
// one archive pass marks records received before the warm window archived and keeps newer ones;
// payload objects stay; the warm list leaves archived records out, `--archived` (the query and
// the real `svc-admin deliveries list` process) shows them marked; the pass runs only on the leader.
import { join } from 'node:path';
import t from 'tap';
import { archiveOldDeliveries, startEventLogRetention, type LeaderView } from '../../../../kernel/orchestrator/ingest/record/retention.ts';
import { getDelivery, listDeliveries } from '../../../../kernel/orchestrator/ingest/record/queries.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { sampleOf } from '../../../fixtures/prom-text.ts';
import { REPO_ROOT, runProgram } from '../../../fixtures/programs.ts';
import { delivery, makeHarness } from './harness.ts';

const DAY_MS = 86_400_000;

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { secret } = await h.addSource();
  h.forge.putLock('e1'.repeat(20), [workflow('ci', [trig.push()])]);
  // Five deliveries recorded by the pipeline, payloads stored; then aged (received_at) to
  // 45, 31, 29 and 1 days and now.
  const ages = [45, 31, 29, 1, 0];
  const ids: string[] = [];
  for (const _ of ages) {
    const d = delivery(pushPayload({ after: 'e1'.repeat(20) }), { secret });
    t.equal((await h.pipeline.ingestDelivery(d)).status, 'matched');
    ids.push(d.deliveryId);
  }
  t.ok(await h.pipeline.eventLog.drain(10_000), 'payload objects written');
  for (const [i, days] of ages.entries()) {
    await db.pool.query(sql.unsafe`update webhook_deliveries set received_at = now() - ${days} * interval '1 day' - interval '1 minute' where delivery_id = ${ids[i]!}`);
  }
  const payloadKeys = (await db.pool.any(sql.unsafe`select delivery_id, payload_key from webhook_deliveries where delivery_id = any(${sql.array(ids, 'text')})`)) as unknown as Array<{ delivery_id: string; payload_key: string | null }>;
  t.equal(payloadKeys.filter((r) => r.payload_key !== null).length, 5, 'every record points at its payload');

  await t.test('one pass archives what is older than the window and keeps the rest', async (t) => {
    t.equal(await archiveOldDeliveries(db.pool, 30), 2, '45 and 31 days old');
    const archived = (await db.pool.any(sql.unsafe`select delivery_id from webhook_deliveries where archived_at is not null order by received_at`)) as unknown as Array<{ delivery_id: string }>;
    t.same(archived.map((r) => r.delivery_id), [ids[0], ids[1]]);
    t.equal(await archiveOldDeliveries(db.pool, 30), 0, 'a second pass finds nothing more');
    for (const { payload_key } of payloadKeys) t.ok(await h.storage.head(payload_key!), `payload ${payload_key} still stored`);
    // A smaller batch still archives everything past the window, batch by batch.
    t.equal(await archiveOldDeliveries(db.pool, 30, new Date(Date.now() + 30 * DAY_MS), 1), 3, 'the other three, 30 days later, one per batch');
    await db.pool.query(sql.unsafe`update webhook_deliveries set archived_at = null where delivery_id = any(${sql.array(ids.slice(2), 'text')})`);
  });

  await t.test('the warm list leaves archived records out; --archived shows them marked', async (t) => {
    const warm = (await listDeliveries(db.pool, { limit: 1000 })).map((d) => d.deliveryId);
    t.same(ids.filter((id) => warm.includes(id)), [ids[2], ids[3], ids[4]], 'only warm records');
    const all = await listDeliveries(db.pool, { limit: 1000, archived: true });
    const mine = all.filter((d) => ids.includes(d.deliveryId));
    t.equal(mine.length, 5, 'archived records included');
    t.same(mine.filter((d) => d.archivedAt !== null).map((d) => d.deliveryId).sort(), [ids[0]!, ids[1]!].sort(), 'marked by archivedAt');
    t.match((await getDelivery(db.pool, 'acme', ids[0]!))?.archivedAt, /^\d{4}-\d\d-\d\dT/, 'show still finds an archived record');

    const bin = join(REPO_ROOT, 'bin/svc-admin.ts');
    const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_DATABASE_URL: db.url };
    const plain = await runProgram(bin, ['deliveries', 'list', '--limit', '1000'], { env, timeoutMs: 60_000 });
    t.equal(plain.code, 0, plain.stderr);
    t.notMatch(plain.stdout, ids[0]!, 'the CLI list is warm by default');
    const withArchived = await runProgram(bin, ['deliveries', 'list', '--archived', '--limit', '1000'], { env, timeoutMs: 60_000 });
    t.equal(withArchived.code, 0, withArchived.stderr);
    const line = withArchived.stdout.split('\n').find((l) => l.includes(ids[0]!));
    t.match(line, /  archived$/, 'an archived record is marked');
    t.notMatch(withArchived.stdout.split('\n').find((l) => l.includes(ids[4]!)), /archived/, 'a warm one is not');
  });

  await t.test('the hourly job runs on the leader only, and at once on becoming leader', async (t) => {
    await db.pool.query(sql.unsafe`update webhook_deliveries set received_at = now() - interval '40 days' where delivery_id = ${ids[2]!}`);
    let leader = false;
    // Each tick of the job asks first whether this node leads: the asks count its ticks.
    let ticks = 0;
    const handlers: Array<(leader: boolean) => void> = [];
    const cluster: LeaderView = {
      isLeader: () => {
        ticks += 1;
        return leader;
      },
      onLeaderChange: (handler) => {
        handlers.push(handler);
        return () => handlers.splice(handlers.indexOf(handler), 1);
      },
    };
    const job = startEventLogRetention({ pool: db.pool, logger: db.logger, metrics: h.metrics, warmDays: 30, cluster, intervalMs: 100 });
    t.teardown(() => job.stop());
    // Not the leader: three ticks (the one at start, two intervals) and nothing is archived.
    for (const deadline = Date.now() + 60_000; ticks < 3 && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 10));
    t.ok(ticks >= 3, `three ticks ran (${ticks})`);
    const isArchived = async () => ((await db.pool.oneFirst(sql.unsafe`select archived_at is not null from webhook_deliveries where delivery_id = ${ids[2]!}`)) as boolean);
    t.equal(await isArchived(), false, 'a follower archives nothing');
    leader = true;
    for (const handler of handlers) handler(true);
    const deadline = Date.now() + 60_000;
    while (!(await isArchived()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    t.equal(await isArchived(), true, 'the leader archived it');
    t.ok((sampleOf(await h.metrics.text(), 'svc_orch_event_log_archived_total') ?? 0) >= 1, 'svc_orch_event_log_archived_total moved');
    await job.stop();
  });
});
