// Runs created with their wake-ups after the commit (kernel/orchestrator/runs/deferred-wakeups.ts,
// migration 0840): the run status feed rows are written as always, but neither the feed trigger
// nor `notifyJobsQueued` NOTIFYs inside the transaction (notifications arrive in commit order: a
// sentinel committed afterwards arrives first); the sender wakes `svc_run_status` and `svc_jobs`
// once it is let go. The setting is local to that transaction: the next one on the same
// connection notifies from the trigger again, as every other code path does.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import type { CommonQueryMethods } from 'slonik';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { JOBS_CHANNEL, notifyJobsQueued } from '../../../../kernel/orchestrator/dispatch/notify.ts';
import { RUN_STATUS_FEED_CHANNEL, transactionWithWakeupsAfterCommit } from '../../../../kernel/orchestrator/runs/deferred-wakeups.ts';
import { createDatabase, createListener, migrate, notify, sql, WakeupSender } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';

/** A real sender that holds what it is asked to send until `release()`. */
class HeldSender extends WakeupSender {
  readonly held: string[][] = [];
  override wake(channels: Iterable<string>): void {
    this.held.push([...channels]);
  }
  release(): void {
    for (const channels of this.held.splice(0)) super.wake(channels);
  }
}

async function insertRunWithJob(tx: CommonQueryMethods): Promise<string> {
  const runId = randomUUID();
  await tx.query(sql.unsafe`
    INSERT INTO runs (id, org_id, provider, repository, workflow_repository, workflow, workflow_sha, sha, event_name, subject_kind, trust_tier, status,
                      content_hash, lock_entry, event)
    VALUES (${runId}, 'acme', 'github', 'acme/app', 'acme/app', 'ci', ${'b'.repeat(40)}, ${'b'.repeat(40)}, 'push', 'ref', 'trusted', 'queued',
            ${'a'.repeat(64)}, '{}'::jsonb, '{}'::jsonb)`);
  await tx.query(sql.unsafe`
    INSERT INTO jobs (id, run_id, org_id, name, display_name, kind, needs, runs_on, status, queued_at)
    VALUES (${randomUUID()}, ${runId}, 'acme', 'build', 'build', 'job', '{}', '{}', 'queued', now())`);
  return runId;
}

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: db.logger });
  // One connection: the transaction-local setting must not outlive its transaction on it.
  const pool = await createDatabase({ url: db.url, logger: testLogger, maxPoolSize: 1 });
  t.teardown(() => pool.end());
  const heard: string[] = [];
  const listener = await createListener({ url: db.url, logger: testLogger });
  t.teardown(() => listener.close());
  for (const channel of [RUN_STATUS_FEED_CHANNEL, JOBS_CHANNEL, 'sentinel']) await listener.listen(channel, (_payload, c) => heard.push(c));
  const sentinel = async () => {
    const before = heard.filter((c) => c === 'sentinel').length;
    await notify(pool, 'sentinel', '');
    await until('the sentinel', () => (heard.filter((c) => c === 'sentinel').length > before ? true : undefined), 10_000, 10);
  };
  const feedRows = async (runId: string) => Number(await pool.oneFirst(sql.unsafe`select count(*) from run_status_feed where run_id = ${runId}`));

  await t.test('a plain transaction: the feed trigger notifies at the commit', async (t) => {
    heard.length = 0;
    const runId = await pool.transaction((tx) => insertRunWithJob(tx));
    await sentinel();
    t.equal(heard[0], RUN_STATUS_FEED_CHANNEL, 'the feed wake-up came with the commit, before the sentinel');
    t.equal(await feedRows(runId), 2, 'a feed row for the run and one for its job');
  });

  await t.test('deferred: feed rows written, no NOTIFY at the commit, both wake-ups once released', async (t) => {
    heard.length = 0;
    const sender = new HeldSender(pool, testLogger);
    const runId = await transactionWithWakeupsAfterCommit(pool, sender, async (tx) => {
      const id = await insertRunWithJob(tx);
      await notifyJobsQueued(tx);
      return id;
    });
    t.equal(await feedRows(runId), 2, 'the feed rows are there, committed with the run');
    await sentinel();
    t.same(heard, ['sentinel'], 'nothing was notified by the transaction');
    t.same(sender.held.map((c) => [...c].sort()), [[JOBS_CHANNEL, RUN_STATUS_FEED_CHANNEL].sort()], 'asked once, after the commit');
    sender.release();
    await sender.idle();
    await until('both wake-ups', () => (heard.includes(RUN_STATUS_FEED_CHANNEL) && heard.includes(JOBS_CHANNEL) ? true : undefined), 10_000, 10);
    t.pass('the dispatchers and the feed consumers were woken');
  });

  await t.test('a failed transaction asks for nothing', async (t) => {
    const sender = new HeldSender(pool, testLogger);
    await t.rejects(
      transactionWithWakeupsAfterCommit(pool, sender, async (tx) => {
        await insertRunWithJob(tx);
        throw new Error('abort');
      }),
      { message: 'abort' },
    );
    t.same(sender.held, []);
  });

  await t.test('the setting ends with its transaction: the next one on the connection notifies again', async (t) => {
    heard.length = 0;
    await pool.transaction((tx) => insertRunWithJob(tx));
    await sentinel();
    t.equal(heard[0], RUN_STATUS_FEED_CHANNEL);
    t.equal(await pool.oneFirst(sql.unsafe`select coalesce(current_setting('svc.status_feed_notify', true), '')`), '', 'not set outside the transaction');
  });
});
