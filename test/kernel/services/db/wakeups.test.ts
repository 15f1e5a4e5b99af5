// Wake-ups after the commit (kernel/services/db/wakeups.ts): a transaction given to
// `collectWakeups` sends no NOTIFY of its own for empty-payload wake-ups (notifications arrive in
// commit order, so a sentinel committed after it proves nothing was queued), a payload still goes
// through the transaction, and the `WakeupSender` folds the channels asked for while a statement
// is on its way into the next one. Given the database's URL it wakes this process's listeners at
// once, in-process, and lets the NOTIFY for other processes linger; those listeners skip that
// NOTIFY, so each hears a wake-up once.
import t from 'tap';
import pg from 'pg';
import { pino } from 'pino';
import { collectWakeups, createDatabase, createListener, notify, settledWake, WakeupSender, type Listener } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger, type Test } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';

await eachDatabase(t, async (t, db) => {
  const heard: Array<{ channel: string; payload: string }> = [];
  const open = async (t: Test, channels: string[]): Promise<Listener> => {
    const listener = await createListener({ url: db.url, logger: testLogger });
    t.teardown(() => listener.close());
    for (const channel of channels) await listener.listen(channel, (payload, c) => heard.push({ channel: c, payload }));
    return listener;
  };
  const heardOn = (channel: string) => heard.filter((h) => h.channel === channel);

  await t.test('collected wake-ups are not sent by the commit; payloads are; the sender sends them after', async (t) => {
    heard.length = 0;
    await open(t, ['wake_a', 'wake_b', 'carries', 'sentinel']);
    const channels = new Set<string>();
    await db.pool.transaction(async (tx) => {
      collectWakeups(tx, channels);
      await notify(tx, 'wake_a', '');
      await notify(tx, 'wake_b');
      await notify(tx, 'wake_a', '');
      await notify(tx, 'carries', { id: 1 });
    });
    t.same([...channels].sort(), ['wake_a', 'wake_b'], 'the empty-payload channels were collected, each once');
    await notify(db.pool, 'sentinel', 'after');
    await until('the sentinel', () => (heardOn('sentinel').length > 0 ? true : undefined), 60_000, 10);
    t.same(
      heard.map((h) => h.channel),
      ['carries', 'sentinel'],
      'only the payload was sent at the commit (a queued wake-up would have arrived before the sentinel)',
    );

    const sender = new WakeupSender(db.pool, testLogger);
    sender.wake(channels);
    await sender.idle();
    await until('both wake-ups', () => (heardOn('wake_a').length === 1 && heardOn('wake_b').length === 1 ? true : undefined), 60_000, 10);
    t.equal(sender.statements, 1, 'one statement for both channels');
  });

  await t.test('a rolled-back transaction collects nothing the caller would send', async (t) => {
    const channels = new Set<string>();
    const sender = new WakeupSender(db.pool, testLogger);
    await db.pool
      .transaction(async (tx) => {
        collectWakeups(tx, channels);
        await notify(tx, 'wake_a', '');
        throw new Error('abort');
      })
      .then(() => sender.wake(channels), () => undefined);
    await sender.idle();
    t.equal(sender.statements, 0, 'nothing sent for a transaction that did not commit');
  });

  await t.test('wake-ups asked for while a statement is on its way fold into the next one', async (t) => {
    heard.length = 0;
    await open(t, ['fold_a', 'fold_b', 'fold_c']);
    const sender = new WakeupSender(db.pool, testLogger);
    for (let i = 0; i < 50; i += 1) sender.wake([['fold_a', 'fold_b', 'fold_c'][i % 3]!]);
    await sender.idle();
    t.equal(sender.statements, 2, 'the first wake-up goes at once; the 49 asked meanwhile share one more statement');
    await until('every channel woken', () => (['fold_a', 'fold_b', 'fold_c'].every((c) => heardOn(c).length > 0) ? true : undefined), 60_000, 10);
    t.ok(heardOn('fold_a').length <= 2 && heardOn('fold_b').length <= 2, 'at most one notification per channel per statement');
  });

  await t.test('with the URL: this process hears at once and once; another hears it after the linger', async (t) => {
    heard.length = 0;
    await open(t, ['near_a', 'near_b', 'near_sentinel']);
    // Another process's connection: a raw client, which sees the payload as sent.
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    t.teardown(() => other.end());
    const otherHeard: Array<{ channel: string; payload: string }> = [];
    other.on('notification', (m) => otherHeard.push({ channel: m.channel, payload: m.payload ?? '' }));
    await other.query('listen near_a');
    await other.query('listen near_b');
    await other.query('listen near_sentinel');
    const otherWakes = () => otherHeard.filter((h) => h.channel !== 'near_sentinel');
    const sender = new WakeupSender(db.pool, testLogger, { url: db.url, lingerMs: 60_000 });
    sender.wake(['near_a']);
    t.equal(heardOn('near_a').length, 0, 'never inside the caller: the handler runs on a later turn');
    await until('the in-process wake-up', () => (heardOn('near_a').length === 1 ? true : undefined), 60_000, 5);
    await until('the first NOTIFY (after a quiet spell it goes at once)', () => (otherWakes().length === 1 ? true : undefined), 60_000, 10);
    t.equal(sender.statements, 1);
    t.match(otherWakes()[0], { channel: 'near_a', payload: /^svc-wake:[\w-]+$/ }, 'tagged with the connection woken in-process');

    sender.wake(['near_a', 'near_b']);
    sender.wake(['near_b']);
    await until('the second wake-up, in-process', () => (heardOn('near_b').length === 1 ? true : undefined), 60_000, 5);
    // A sentinel NOTIFY sent now, heard by both connections: what was committed before it has
    // arrived (PostgreSQL delivers in commit order). The 60 s linger holds the second one back.
    await notify(db.pool, 'near_sentinel', 'after');
    await until('the sentinel', () => (heardOn('near_sentinel').length > 0 && otherHeard.some((h) => h.channel === 'near_sentinel') ? true : undefined), 60_000, 10);
    t.equal(sender.statements, 1, 'within the linger no second statement is sent');
    t.equal(otherWakes().length, 1, 'the other process has not heard the second yet');
    t.same(
      heard.filter((h) => h.channel !== 'near_sentinel'),
      [{ channel: 'near_a', payload: '' }, { channel: 'near_a', payload: '' }, { channel: 'near_b', payload: '' }],
      'each wake-up heard once here, with an empty payload: the first NOTIFY (committed before the sentinel) was skipped',
    );

    await sender.idle();
    t.equal(sender.statements, 2, 'idle sends what lingered at once');
    await until('the folded NOTIFY', () => (otherWakes().length === 3 ? true : undefined), 60_000, 10);
    t.same(otherWakes().slice(1).map((h) => h.channel).sort(), ['near_a', 'near_b'], 'one statement for both channels, each once');
    await notify(db.pool, 'near_sentinel', 'again');
    await until('the second sentinel', () => (heardOn('near_sentinel').length > 1 ? true : undefined), 60_000, 10);
    t.equal(heard.length, 5, 'nothing more here: the folded NOTIFY was skipped too');
  });

  await t.test("another process's tagged wake-up reaches the handlers with an empty payload; a plain payload is untouched", async (t) => {
    heard.length = 0;
    await open(t, ['tagged']);
    await notify(db.pool, 'tagged', 'svc-wake:not-this-process');
    await notify(db.pool, 'tagged', 'svc-wakeful');
    await until('both', () => (heardOn('tagged').length === 2 ? true : undefined), 60_000, 10);
    t.same(heardOn('tagged').map((h) => h.payload), ['', 'svc-wakeful']);
  });

  await t.test('a bad channel is refused; a failed send is logged, not thrown', async (t) => {
    const sender = new WakeupSender(db.pool, testLogger);
    t.throws(() => sender.wake(['']), { code: 'SVC_ERR_DB_CHANNEL_INVALID' });
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const ended = await createDatabase({ url: db.url, logger: testLogger });
    await ended.end();
    const failing = new WakeupSender(ended, logger);
    failing.wake(['wake_a']);
    await failing.idle();
    t.equal(failing.statements, 0);
    t.equal(lines.length, 1, 'the failure is logged once');
    t.match(JSON.parse(lines[0]!), { msg: 'wake-up notification not sent', channels: ['wake_a'] });
  });
}, { schema: 'empty' });

t.test('settledWake: a burst of wake-ups shares one call; cancel drops the one pending', async (t) => {
  let calls = 0;
  const settled = settledWake(() => (calls += 1), 20);
  for (let i = 0; i < 100; i += 1) settled.wake();
  t.equal(calls, 0, 'nothing runs inside the burst itself');
  await until('the call after the burst', () => (calls > 0 ? true : undefined), 60_000, 10);
  t.equal(calls, 1, '100 wake-ups, one call');
  settled.wake();
  await until('a later wake-up gets its own call', () => (calls > 1 ? true : undefined), 60_000, 10);
  t.equal(calls, 2);
  settled.wake();
  settled.cancel();
  settled.wake();
  // A second one with the same delay, woken after the cancel: timers fire in the order they are
  // due, so once its call came the cancelled timer's turn has passed, however late both were.
  let probed = false;
  settledWake(() => (probed = true), 20).wake();
  await until('a timer due after the cancelled one', () => (probed ? true : undefined), 60_000, 10);
  t.equal(calls, 2, 'no call after cancel, and none for wake-ups after it');
});
