// Named statements (kernel/services/db/named-statements.ts) against a real PostgreSQL: a
// statement's text is parsed once per connection and kept there under a name derived from the
// text, results stay right as values change, table-shaped results stay unnamed, statements marked
// PLAN_EACH_EXECUTION stay unnamed (and so keep finding rows by index as their table grows), and
// the number of names per pool is bounded.
import t from 'tap';
import type { CommonQueryMethods } from 'slonik';
import { Type } from 'typebox';
import { createDatabase, namedStatementsInterceptor, PLAN_EACH_EXECUTION, sql, sqlTyped, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';

const Prepared = Type.Object({ name: Type.String(), statement: Type.String() }, { additionalProperties: false });

/** The statements prepared on the pool's only connection, by the pool itself (this query is one of them). */
async function prepared(pool: DatabasePool): Promise<Map<string, string>> {
  const rows = await pool.any(sqlTyped(Prepared)`select name, statement from pg_prepared_statements where name like 'svc_%'`);
  return new Map(rows.map((r) => [r.statement, r.name]));
}

await eachDatabase(t, async (t, db) => {
  await db.pool.query(sql.unsafe`create table named_items (id integer primary key, label text not null)`);

  await t.test('one name per text, kept on the connection; values bind afresh each time', async (t) => {
    const interceptor = namedStatementsInterceptor();
    const pool = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, interceptors: [interceptor] });
    t.teardown(() => pool.end());
    for (const [id, label] of [[1, 'one'], [2, 'two'], [3, 'three']] as const) {
      await pool.query(sql.unsafe`insert into named_items (id, label) values (${id}, ${label})`);
    }
    const Label = Type.Object({ label: Type.String() }, { additionalProperties: false });
    for (const [id, label] of [[3, 'three'], [1, 'one'], [2, 'two']] as const) {
      t.equal((await pool.one(sqlTyped(Label)`select label from named_items where id = ${id}`)).label, label, `id ${id} reads its own row`);
    }
    const statements = await prepared(pool);
    const insert = [...statements].find(([text]) => text.startsWith('insert into named_items'));
    const select = [...statements].find(([text]) => text.startsWith('select label from named_items'));
    t.ok(insert, 'the insert is prepared on the connection');
    t.ok(select, 'the select is prepared on the connection');
    t.match(insert![1], /^svc_[0-9a-f]{32}$/);
    t.not(insert![1], select![1], 'different texts, different names');
    t.equal(interceptor.size, 4, 'the start-up `select 1`, the insert, the select and the pg_prepared_statements query: four texts, four names');
    // A second pool with its own interceptor names the same text the same way.
    const other = namedStatementsInterceptor();
    const again = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, interceptors: [other] });
    t.teardown(() => again.end());
    await again.query(sql.unsafe`insert into named_items (id, label) values (${4}, ${'four'})`);
    t.equal((await prepared(again)).get(insert![0]), insert![1], 'the name follows from the text alone');
  });

  await t.test('results shaped by a table stay unnamed, and still follow a column added later', async (t) => {
    const pool = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, interceptors: [namedStatementsInterceptor()] });
    t.teardown(() => pool.end());
    const before = await pool.any(sql.unsafe`select * from named_items where id = ${1}`);
    t.same(Object.keys(before[0] as object), ['id', 'label']);
    const Named = Type.Object({ id: Type.Integer(), label: Type.String() }, { additionalProperties: false });
    await pool.one(sqlTyped(Named)`select id, label from named_items where id = ${1}`);
    await db.pool.query(sql.unsafe`alter table named_items add column note text`);
    // Unnamed: PostgreSQL plans it afresh and returns the new column.
    const after = await pool.any(sql.unsafe`select * from named_items where id = ${1}`);
    t.same(Object.keys(after[0] as object), ['id', 'label', 'note']);
    // Named with its columns spelled out: PostgreSQL replans it after the change and it still runs.
    t.same(await pool.one(sqlTyped(Named)`select id, label from named_items where id = ${1}`), { id: 1, label: 'one' });
    const texts = [...(await prepared(pool)).keys()];
    t.notOk(texts.some((text) => text.includes('*')), 'no statement with * is prepared');
    t.ok(texts.some((text) => text.startsWith('select id, label from named_items')), 'the spelled-out select is');
    await db.pool.query(sql.unsafe`alter table named_items drop column note`);
  });

  await t.test('past the limit statements run unnamed, and correctly', async (t) => {
    const interceptor = namedStatementsInterceptor(2);
    const pool = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, verify: false, interceptors: [interceptor] });
    t.teardown(() => pool.end());
    const Value = Type.Object({ v: Type.Integer() }, { additionalProperties: false });
    t.equal((await pool.one(sqlTyped(Value)`select ${1}::int as v`)).v, 1);
    t.equal((await pool.one(sqlTyped(Value)`select ${2}::int + 0 as v`)).v, 2);
    t.equal((await pool.one(sqlTyped(Value)`select ${3}::int + 1 as v`)).v, 4);
    t.equal((await pool.one(sqlTyped(Value)`select ${5}::int + 1 as v`)).v, 6, 'the unnamed one again, new value');
    t.equal(interceptor.size, 2, 'two names, no more');
    const count = await pool.oneFirst(sql.unsafe`select count(*)::int from pg_prepared_statements where name like 'svc_%'`);
    t.equal(count, 2, 'two statements prepared on the connection');
  });

  await t.test("'repeated': a text is named from its second run, so one-off statements leave the names to those that repeat", async (t) => {
    const interceptor = namedStatementsInterceptor(2, 2);
    const pool = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, verify: false, interceptors: [interceptor] });
    t.teardown(() => pool.end());
    const Value = Type.Object({ v: Type.Integer() }, { additionalProperties: false });
    t.equal((await pool.one(sqlTyped(Value)`select ${1}::int + 100 as v`)).v, 101, 'a one-off statement runs');
    t.equal(interceptor.size, 0, 'and takes no name');
    for (const v of [1, 2, 3]) t.equal((await pool.one(sqlTyped(Value)`select ${v}::int + 200 as v`)).v, v + 200, `run ${v} of a repeated statement`);
    t.equal(interceptor.size, 1, 'the repeated statement is named');
    const count = await pool.oneFirst(sql.unsafe`select count(*)::int from pg_prepared_statements where name like 'svc_%' and statement like '%+ 200%'`);
    t.equal(count, 1, 'and prepared on the connection');
    t.equal((await pool.one(sqlTyped(Value)`select ${2}::int + 100 as v`)).v, 102, 'the one-off text run again');
    t.equal(interceptor.size, 2, 'is named at its second run: the limit of two is reached');
    t.equal((await pool.one(sqlTyped(Value)`select ${3}::int + 300 as v`)).v, 303);
    t.equal((await pool.one(sqlTyped(Value)`select ${4}::int + 300 as v`)).v, 304, 'past the limit a repeated text runs unnamed, correctly');
    t.equal(interceptor.size, 2);
    // The pool option the orchestrator's and the relay's shared pools use.
    const shared = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, namedStatements: 'repeated' });
    t.teardown(() => shared.end());
    const prepared400 = () => shared.oneFirst(sql.unsafe`select count(*)::int from pg_prepared_statements where statement like '%+ 400 as v'`);
    t.equal((await shared.one(sqlTyped(Value)`select ${1}::int + 400 as v`)).v, 401);
    t.equal(await prepared400(), 0, "namedStatements: 'repeated' leaves a first run unnamed");
    t.equal((await shared.one(sqlTyped(Value)`select ${2}::int + 400 as v`)).v, 402);
    t.equal(await prepared400(), 1, 'and names the second');
  });

  await t.test('PLAN_EACH_EXECUTION: the statement stays unnamed and is planned for its keys as the table grows; a named one keeps its first plan', async (t) => {
    // The shape of the event-log confirmation (a record per delivery, keyed by org and delivery id).
    await db.pool.query(sql.unsafe`
      create table grown_items (org_id text, item_id text, item_key text not null, done boolean not null default false, pad text, primary key (org_id, item_id))`);
    const grow = (from: number, to: number) =>
      db.pool.query(sql.unsafe`insert into grown_items (org_id, item_id, item_key, pad) select 'o', 'i' || g, 'k' || g, repeat('x', 200) from generate_series(${from}::int, ${to}::int) g`);
    await grow(1, 100);
    const interceptor = namedStatementsInterceptor();
    const pool = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, interceptors: [interceptor] });
    t.teardown(() => pool.end());
    const Scans = Type.Object({ seq: Type.Integer(), idx: Type.Integer() }, { additionalProperties: false });
    // Scans of the table by one execution: the connection's own counters (pg_stat_xact_*: its
    // activity not yet reported) read just before and just after it, in one transaction.
    const counters = (tx: CommonQueryMethods) =>
      tx.one(sqlTyped(Scans)`select coalesce(seq_scan, 0)::int as seq, coalesce(idx_scan, 0)::int as idx from pg_stat_xact_user_tables where relname = 'grown_items'`);
    const scansOf = (statement: (ids: number[]) => ReturnType<typeof sql.unsafe>) =>
      pool.transaction(async (tx) => {
        const before = await counters(tx);
        await tx.query(statement([3, 7]));
        const after = await counters(tx);
        return { seq: after.seq - before.seq, idx: after.idx - before.idx };
      });
    // Rows picked by a join with unnested arrays of their keys.
    const keys = (ids: number[]) =>
      sql.fragment`unnest(${sql.array(ids.map(() => 'o'), 'text')}, ${sql.array(ids.map((i) => `i${i}`), 'text')}, ${sql.array(ids.map((i) => `k${i}`), 'text')}) as u(org_id, item_id, item_key)
        where g.org_id = u.org_id and g.item_id = u.item_id and g.item_key = u.item_key`;
    const marked = (ids: number[]) => sql.unsafe`${PLAN_EACH_EXECUTION}update grown_items g set done = true from ${keys(ids)}`;
    const plain = (ids: number[]) => sql.unsafe`update grown_items g set done = false from ${keys(ids)}`;
    // Past the five executions after which PostgreSQL may keep a generic plan, on a small table.
    for (let i = 0; i < 8; i += 1) {
      await pool.query(marked([1, 2]));
      await pool.query(plain([1, 2]));
    }
    const texts = [...(await prepared(pool)).keys()];
    t.notOk(texts.some((text) => text.includes('set done = true')), 'the marked statement is not prepared on the connection');
    t.ok(texts.some((text) => text.includes('set done = false')), 'the plain one is');
    // The table grows; nothing refreshes its statistics (as on a cluster with autovacuum off).
    await grow(101, 40_000);
    const Done = Type.Object({ ids: Type.Array(Type.Integer()) }, { additionalProperties: false });
    const done = async () => (await pool.one(sqlTyped(Done)`select coalesce(array_agg(substr(item_id, 2)::int order by item_id), '{}')::int4[] as ids from grown_items where done`)).ids;
    const planned = await scansOf(marked);
    t.equal(planned.seq, 0, 'the marked statement reads no table whole');
    t.ok(planned.idx >= 1, `it finds its rows by index (${JSON.stringify(planned)})`);
    t.same(await done(), [3, 7], 'and marks the rows it names');
    const cached = await scansOf(plain);
    t.equal(cached.seq, 1, `the named one still reads the whole table by the plan it cached when the table was small (${JSON.stringify(cached)})`);
    t.same(await done(), [], 'and unmarks them');
  });

  await t.test('a column whose type changed under a named statement: one failure, then the text runs unnamed', async (t) => {
    await db.pool.query(sql.unsafe`create table typed_items (id integer primary key, amount integer not null)`);
    await db.pool.query(sql.unsafe`insert into typed_items values (1, 5)`);
    const interceptor = namedStatementsInterceptor();
    const pool = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, interceptors: [interceptor] });
    t.teardown(() => pool.end());
    const read = () => pool.oneFirst(sql.unsafe`select amount from typed_items where id = ${1}`);
    t.equal(await read(), 5, 'named and run');
    const named = interceptor.size;
    // Another node's migration: the result column is now text.
    await db.pool.query(sql.unsafe`alter table typed_items alter column amount type text using amount::text`);
    const error = await read().catch((e: unknown) => e);
    t.match(String((error as Error)?.message ?? error), /result type/, "PostgreSQL refuses the prepared statement's old form once");
    t.equal(interceptor.size, named - 1, 'the text lost its name');
    t.equal(await read(), '5', 'and runs unnamed from then on, with the new type');
    t.equal(await read(), '5', 'every time');
  });

  await t.test('a statement that fails to parse is not kept; the next one with that text fails the same way', async (t) => {
    const pool = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1, interceptors: [namedStatementsInterceptor()] });
    t.teardown(() => pool.end());
    for (let i = 0; i < 2; i += 1) {
      const error = await pool.query(sql.unsafe`select missing_column from named_items where id = ${1}`).catch((e: unknown) => e);
      t.match(String((error as Error).message ?? error), /missing_column/, `attempt ${i + 1} names the column`);
    }
    const Value = Type.Object({ v: Type.Integer() }, { additionalProperties: false });
    t.equal((await pool.one(sqlTyped(Value)`select ${7}::int as v`)).v, 7, 'the connection still works');
  });
}, { schema: 'empty' });
