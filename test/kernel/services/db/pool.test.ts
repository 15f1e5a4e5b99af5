import t from 'tap';
import { Type } from 'typebox';
import { SvcError } from '../../../../core/errors.ts';
import { createDatabase, describeQuery, ensureDatabaseExists, sql, sqlTyped, typed } from '../../../../kernel/services/db/pool.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';

const Row = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    meta: Type.Object({ tags: Type.Array(Type.String()) }),
  },
  { additionalProperties: false },
);

await eachDatabase(t, async (t, db) => {
  await db.pool.query(sql.unsafe`create table items (id integer primary key, name text, meta jsonb not null)`);
  await db.pool.query(sql.unsafe`insert into items values (1, 'one', '{"tags":["a"]}'), (2, null, '{"tags":["b"]}'), (3, 'three', '{"tags":[7]}')`);

  await t.test('accepts rows that match the schema', async (t) => {
    const row = await db.pool.one(sql.type(typed(Row))`select id, name, meta from items where id = 1`);
    t.same(row, { id: 1, name: 'one', meta: { tags: ['a'] } });
    const rows = await db.pool.any(sqlTyped(Row)`select id, name, meta from items where id = ${1}`);
    t.equal(rows.length, 1);
  });

  await t.test('refuses a row with a wrong field, naming the query and the field', async (t) => {
    const error = await db.pool.one(sqlTyped(Row)`select id, name, meta from items where id = 2`).catch((e: unknown) => e);
    t.ok(error instanceof SvcError);
    t.equal((error as SvcError).code, 'SVC_ERR_DB_ROW_INVALID');
    t.match((error as SvcError).message, /query "select id, name, meta from items where id = 2"/);
    t.match((error as SvcError).message, /name: /);
  });

  await t.test('names nested dot paths and the label', async (t) => {
    const error = await db.pool.any(sql.type(typed(Row, 'items.list'))`select id, name, meta from items`).catch((e: unknown) => e);
    t.equal((error as SvcError).code, 'SVC_ERR_DB_ROW_INVALID');
    t.match((error as SvcError).message, /query "items\.list"/);
    t.match((error as SvcError).message, /name: /);
    const nested = await db.pool.one(sqlTyped(Row)`select id, name, meta from items where id = 3`).catch((e: unknown) => e);
    t.match((nested as SvcError).message, /meta\.tags\.0: /);
  });

  await t.test('refuses unknown and missing columns', async (t) => {
    const extra = await db.pool.one(sqlTyped(Row)`select id, name, meta, 1 as extra from items where id = 1`).catch((e: unknown) => e);
    t.match((extra as SvcError).message, /extra: unknown field/);
    const missing = await db.pool.one(sqlTyped(Row)`select id, name from items where id = 1`).catch((e: unknown) => e);
    t.match((missing as SvcError).message, /meta: is required/);
  });

  await t.test('a refused row inside a transaction rolls it back', async (t) => {
    const error = await db.pool
      .transaction(async (tx) => {
        await tx.query(sql.unsafe`insert into items values (10, 'ten', '{"tags":[]}')`);
        await tx.one(sqlTyped(Row)`select id, name, meta from items where id = 2`);
      })
      .catch((e: unknown) => e);
    t.equal((error as SvcError).code, 'SVC_ERR_DB_ROW_INVALID');
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*) from items where id = 10`), 0n);
  });

  await t.test('untyped queries pass through; slonik defaults for int8 and timestamptz', async (t) => {
    const row = (await db.pool.one(sql.unsafe`select 5::int8 as big, '2026-01-02T03:04:05Z'::timestamptz as at`)) as Record<string, unknown>;
    t.equal(row['big'], 5n);
    t.equal(row['at'], Date.parse('2026-01-02T03:04:05Z'));
    const counted = await db.pool.oneFirst(sqlTyped(Type.Object({ n: Type.BigInt() }))`select count(*) as n from items`);
    t.equal(counted, 3n);
  });

  await t.test('ensureDatabaseExists creates once and tolerates repeats', async (t) => {
    const name = `${db.name}_x`;
    try {
      await Promise.all([ensureDatabaseExists(db.serverUrl, name), ensureDatabaseExists(db.serverUrl, name)]);
      await ensureDatabaseExists(db.serverUrl, name);
      const url = new URL(db.url);
      url.pathname = `/${name}`;
      const pool = await createDatabase({ url: url.toString(), logger: testLogger });
      t.equal(await pool.oneFirst(sql.unsafe`select current_database()`), name);
      await pool.end();
    } finally {
      const admin = await createDatabase({ url: db.serverUrl, logger: testLogger });
      await admin.query(sql.unsafe`drop database if exists ${sql.identifier([name])} with (force)`);
      await admin.end();
    }
    await t.rejects(ensureDatabaseExists(db.serverUrl, 'Bad-Name'), { code: 'SVC_ERR_DB_NAME_INVALID' });
  });
}, { schema: 'empty' });

t.test('bad URLs and unreachable servers get clear errors', async (t) => {
  await t.rejects(createDatabase({ url: 'not a url', logger: testLogger }), { code: 'SVC_ERR_DB_URL_INVALID' });
  await t.rejects(createDatabase({ url: 'mysql://x@127.0.0.1/db', logger: testLogger }), { code: 'SVC_ERR_DB_URL_INVALID' });
  // Port 1 on loopback: nothing listens there.
  const error = await createDatabase({ url: 'postgres://u:secret@127.0.0.1:1/db', logger: testLogger }).catch((e: unknown) => e);
  t.equal((error as SvcError).code, 'SVC_ERR_DB_UNAVAILABLE');
  t.notMatch((error as SvcError).message, /secret/, 'password is redacted');
  t.match((error as SvcError).message, /127\.0\.0\.1:1/);
});

t.test('describeQuery shortens long SQL', async (t) => {
  t.equal(describeQuery('select\n  1'), 'select 1');
  t.equal(describeQuery(`select ${'x'.repeat(300)}`).length, 120);
  t.equal(describeQuery('select 1', 'label'), 'label');
});
