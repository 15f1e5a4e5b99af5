import t from 'tap';
import { createListener, notify, type Listener } from '../../../../kernel/services/db/listen.ts';
import { startEmbeddedPostgres } from '../../../../kernel/services/db/embedded.ts';
import { createDatabase, sql } from '../../../../kernel/services/db/pool.ts';
import { eachDatabase, initialisedDataDir, testLogger, type Test } from '../../../fixtures/db.ts';

/** Polls until `check` holds; bounded. */
async function waitFor(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

await eachDatabase(t, async (t, db) => {
  await db.pool.query(sql.unsafe`create table events (id serial primary key, body text not null)`);
  const open = async (t: Test): Promise<Listener> => {
    const listener = await createListener({ url: db.url, logger: testLogger, minBackoffMs: 20, maxBackoffMs: 200 });
    t.teardown(() => listener.close());
    return listener;
  };

  await t.test('a NOTIFY inside a committed transaction arrives; a rolled-back one never does', async (t) => {
    const listener = await open(t);
    const got: string[] = [];
    await listener.listen('events', (payload, channel) => {
      t.equal(channel, 'events');
      got.push(payload);
    });
    await db.pool
      .transaction(async (tx) => {
        await tx.query(sql.unsafe`insert into events (body) values ('lost')`);
        await notify(tx, 'events', 'rolled-back');
        throw new Error('abort');
      })
      .catch(() => undefined);
    const id = await db.pool.transaction(async (tx) => {
      const inserted = await tx.oneFirst(sql.unsafe`insert into events (body) values ('kept') returning id`);
      await notify(tx, 'events', { id: inserted });
      return inserted;
    });
    await waitFor(() => got.length > 0, 'the committed notification');
    // Notifications arrive in commit order: had the rolled-back one been sent, it would be first.
    t.same(
      got.map((p) => JSON.parse(p)),
      [{ id }],
    );
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*) from events where body = 'lost'`), 0n);
  });

  await t.test('handlers, unlisten, odd channel names and payloads', async (t) => {
    const listener = await open(t);
    const a: string[] = [];
    const b: string[] = [];
    const sentinel: string[] = [];
    const odd = 'Run.Done "quoted"';
    const handlerA = (p: string): void => {
      a.push(p);
    };
    await listener.listen(odd, handlerA);
    await listener.listen(odd, (p) => b.push(p));
    await listener.listen('sentinel', (p) => sentinel.push(p));
    await notify(db.pool, odd, 'x');
    await waitFor(() => a.length === 1 && b.length === 1, 'both handlers');
    t.same([a, b], [['x'], ['x']]);

    await listener.unlisten(odd, handlerA);
    await notify(db.pool, odd, 'y');
    await waitFor(() => b.length === 2, 'remaining handler');
    t.same(a, ['x'], 'removed handler hears nothing');

    await listener.unlisten(odd);
    await notify(db.pool, odd, 'z');
    await notify(db.pool, 'sentinel', 'done');
    await waitFor(() => sentinel.length === 1, 'sentinel');
    t.same(b, ['x', 'y'], 'unlistened channel is silent');

    await notify(db.pool, 'sentinel');
    await waitFor(() => sentinel.length === 2, 'empty payload');
    t.equal(sentinel[1], '');
    const thrower = listener.listen('sentinel', () => {
      throw new Error('handler bug');
    });
    await thrower;
    await notify(db.pool, 'sentinel', 'after');
    await waitFor(() => sentinel.length === 3, 'delivery despite a throwing handler');
  });

  await t.test('bad input is refused and sends nothing', async (t) => {
    const listener = await open(t);
    await t.rejects(listener.listen('', () => undefined), { code: 'SVC_ERR_DB_CHANNEL_INVALID' });
    await t.rejects(listener.listen('x'.repeat(64), () => undefined), { code: 'SVC_ERR_DB_CHANNEL_INVALID' });
    await t.rejects(listener.listen('ok', 'nope' as never), { code: 'SVC_ERR_DB_LISTENER_HANDLER' });
    await t.rejects(notify(db.pool, '', 'x'), { code: 'SVC_ERR_DB_CHANNEL_INVALID' });
    await t.rejects(notify(db.pool, 'ok', 'x'.repeat(8000)), { code: 'SVC_ERR_DB_NOTIFY_PAYLOAD' });
    await listener.close();
    await listener.close();
    t.equal(listener.connected, false);
    await t.rejects(listener.listen('ok', () => undefined), { code: 'SVC_ERR_DB_LISTENER_CLOSED' });
  });

  await t.test('reconnects after its backend is terminated, re-LISTENs and reports the gap', async (t) => {
    const listener = await open(t);
    const got: string[] = [];
    const gaps: Array<readonly string[]> = [];
    listener.onGap((channels) => gaps.push(channels));
    await listener.listen('jobs', (p) => got.push(p));
    t.equal(listener.connected, true);

    const terminated = await db.pool.anyFirst(
      sql.unsafe`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'svc-listen' and datname = current_database()`,
    );
    t.ok(terminated.length >= 1, 'the listener backend was terminated');
    await waitFor(() => gaps.length === 1, 'the reconnect');
    t.same(gaps[0], ['jobs']);
    t.equal(listener.connected, true);

    await notify(db.pool, 'jobs', 'after-reconnect');
    await waitFor(() => got.includes('after-reconnect'), 'a notification after reconnect');
    t.pass('delivery resumed');
  });
  await t.test('the listeners of one process share one connection, and each keeps its own handlers, gaps and close', async (t) => {
    const backends = async () =>
      Number(await db.pool.oneFirst(sql.unsafe`select count(*)::int from pg_stat_activity where application_name = 'svc-listen' and datname = current_database()`));
    const [a, b] = [await open(t), await open(t)];
    t.equal(await backends(), 1, 'two listeners, one backend LISTENing');
    const got: string[] = [];
    const both = (p: string, channel: string) => got.push(`${channel}:${p}`);
    await a.listen('jobs', both);
    await b.listen('jobs', both);
    await b.listen('runs', (p) => got.push(`b-runs:${p}`));
    const gaps = { a: [] as Array<readonly string[]>, b: [] as Array<readonly string[]> };
    a.onGap((channels) => gaps.a.push(channels));
    b.onGap((channels) => gaps.b.push(channels));

    await notify(db.pool, 'jobs', '1');
    await waitFor(() => got.length === 2, 'one notification, one call per listener');
    t.same(got, ['jobs:1', 'jobs:1'], 'the same function given by two listeners is two subscriptions');

    await a.unlisten('jobs', both);
    await notify(db.pool, 'jobs', '2');
    await notify(db.pool, 'runs', '3');
    await waitFor(() => got.length === 4, "b's two");
    t.same(got.slice(2), ['jobs:2', 'b-runs:3'], "a's unlisten left b's subscription to the same channel");

    await a.listen('jobs', both);
    await db.pool.query(sql.unsafe`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'svc-listen' and datname = current_database()`);
    await waitFor(() => gaps.a.length === 1 && gaps.b.length === 1, 'both hear of the gap');
    t.same(gaps.a[0], ['jobs'], 'a hears its own channels');
    t.same([...gaps.b[0]!].sort(), ['jobs', 'runs'], 'b its own');

    await a.close();
    t.equal(a.connected, false, 'a closed listener says so');
    t.equal(b.connected, true, 'the other stays connected');
    await notify(db.pool, 'jobs', '4');
    await waitFor(() => got.includes('jobs:4'), 'b still hears');
    // A later notification heard by b: any delivery of jobs:4 (to a too) came before it.
    await notify(db.pool, 'jobs', 'after-4');
    await waitFor(() => got.includes('jobs:after-4'), 'b hears the next one');
    t.equal(got.filter((g) => g === 'jobs:4').length, 1, 'a closed listener hears nothing');
    await t.rejects(a.listen('jobs', both), { code: 'SVC_ERR_DB_LISTENER_CLOSED' });

    await b.close();
    let left = await backends();
    for (const deadline = Date.now() + 60_000; left > 0 && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      left = await backends();
    }
    t.equal(left, 0, 'the last close ends the connection');
    const c = await open(t);
    await c.listen('jobs', both);
    await notify(db.pool, 'jobs', '5');
    await waitFor(() => got.includes('jobs:5'), 'a listener created after the last close opens a new connection');
    t.equal(await backends(), 1);
  });
}, { schema: 'empty' });

t.test('an unreachable server is a clear error at creation', async (t) => {
  await t.rejects(createListener({ url: 'postgres://u:pw@127.0.0.1:1/db', logger: testLogger }), { code: 'SVC_ERR_DB_UNAVAILABLE' });
  await t.rejects(createListener({ url: 'nope', logger: testLogger }), { code: 'SVC_ERR_DB_URL_INVALID' });
});

t.test('keeps retrying while the server is down and resumes when it is back', async (t) => {
  const dataDir = await initialisedDataDir(t);
  let server = await startEmbeddedPostgres({ dataDir, logger: testLogger });
  t.teardown(() => server.stop());
  const listener = await createListener({ url: server.url, logger: testLogger, minBackoffMs: 10, maxBackoffMs: 50 });
  t.teardown(() => listener.close());
  const got: string[] = [];
  const gaps: Array<readonly string[]> = [];
  listener.onGap((channels) => gaps.push(channels));
  await listener.listen('jobs', (p) => got.push(p));

  const port = server.port;
  await server.stop();
  await waitFor(() => !listener.connected, 'the loss to be noticed');
  await waitFor(() => listener.failedReconnects >= 3, 'three failed reconnects');
  t.equal(gaps.length, 0, 'no reconnect while the server is down');
  server = await startEmbeddedPostgres({ dataDir, port, logger: testLogger });
  await waitFor(() => gaps.length === 1, 'the reconnect');
  t.same(gaps[0], ['jobs']);
  const pool = await createDatabase({ url: server.url, logger: testLogger });
  t.teardown(() => pool.end());
  await notify(pool, 'jobs', 'back');
  await waitFor(() => got.includes('back'), 'delivery after the restart');
  t.pass('delivery resumed');
});
