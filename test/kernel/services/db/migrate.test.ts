import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { migrate, migrationLockKey, readMigrations } from '../../../../kernel/services/db/migrate.ts';
import { sql, sqlTyped } from '../../../../kernel/services/db/pool.ts';
import { Type } from 'typebox';
import type { SvcError } from '../../../../core/errors.ts';
import { eachDatabase, testLogger, type Test } from '../../../fixtures/db.ts';

const CHILD = path.join(import.meta.dirname, '../../../fixtures/db-migrate-child.ts');

async function migrationDir(t: Test, files: Record<string, string>): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-migrations-'));
  t.teardown(() => fs.rm(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(files)) await fs.writeFile(path.join(dir, name), text);
  return dir;
}

// applied_at is timestamptz: slonik's default parser gives epoch milliseconds.
const MigrationRow = Type.Object({ name: Type.String(), checksum: Type.String(), applied_at: Type.Number() }, { additionalProperties: false });

const BASE = {
  '0001_items.sql': 'create table items (id integer primary key);\ncreate index items_id on items (id);\n',
  '0002_items_name.sql': `alter table items add column name text not null default '';
insert into items (id, name) values (1, 'one');
create function item_count() returns bigint language sql as $$ select count(*) from items $$;
`,
  '0010_items_more.sql': "insert into items (id, name) values (2, 'two');\n",
  'README.md': 'not a migration',
};

await eachDatabase(t, async (t, db) => {
  await t.test('applies migrations in order, each once, and records them', async (t) => {
    const dir = await migrationDir(t, BASE);
    const first = await migrate(db.url, { dir, logger: testLogger });
    t.same(first.applied, ['0001_items.sql', '0002_items_name.sql', '0010_items_more.sql']);
    t.same(first.alreadyApplied, []);
    t.equal(await db.pool.oneFirst(sql.unsafe`select item_count()`), 2n);
    const rows = await db.pool.any(sqlTyped(MigrationRow)`select name, checksum, applied_at from svc_migrations order by name`);
    t.same(
      rows.map((r) => r.name),
      ['0001_items.sql', '0002_items_name.sql', '0010_items_more.sql'],
    );
    t.ok(rows.every((r) => /^[0-9a-f]{64}$/.test(r.checksum)));

    const again = await migrate(db.pool, { dir, logger: testLogger });
    t.same(again.applied, [], 're-run applies nothing');
    t.equal(again.alreadyApplied.length, 3);
    t.equal(await db.pool.oneFirst(sql.unsafe`select count(*) from svc_migrations`), 3n);

    await fs.writeFile(path.join(dir, '0011_later.sql'), 'create table later (x int);');
    const later = await migrate(db.url, { dir, logger: testLogger });
    t.same(later.applied, ['0011_later.sql'], 'only the new file runs');
  });

  await t.test('a changed applied file is refused and nothing else runs', async (t) => {
    const url = await db.extraDatabase();
    const dir = await migrationDir(t, BASE);
    await migrate(url, { dir, logger: testLogger });
    await fs.writeFile(path.join(dir, '0002_items_name.sql'), `${BASE['0002_items_name.sql']}-- edited\n`);
    await fs.writeFile(path.join(dir, '0020_new.sql'), 'create table should_not_exist (x int);');
    const error = (await migrate(url, { dir, logger: testLogger }).catch((e: unknown) => e)) as SvcError;
    t.equal(error.code, 'SVC_ERR_DB_MIGRATION_CHANGED');
    t.match(error.message, /0002_items_name\.sql/);
    const client = new pg.Client(url);
    await client.connect();
    const found = await client.query("select to_regclass('should_not_exist') as t");
    await client.end();
    t.equal(found.rows[0].t, null, 'the pending migration was not applied');
  });

  await t.test('a failing migration rolls back and names the file and the error', async (t) => {
    const url = await db.extraDatabase();
    const dir = await migrationDir(t, {
      '0001_ok.sql': 'create table ok (x int);',
      '0002_bad.sql': 'create table half (x int);\ninsert into half values (1);\nselect * from no_such_table;\n',
      '0003_after.sql': 'create table after_bad (x int);',
    });
    const error = (await migrate(url, { dir, logger: testLogger }).catch((e: unknown) => e)) as SvcError;
    t.equal(error.code, 'SVC_ERR_DB_MIGRATION_FAILED');
    t.match(error.message, /0002_bad\.sql/);
    t.match(error.message, /no_such_table/);
    t.match(error.message, /line 3/);
    t.match(error.message, /42P01/);
    const client = new pg.Client(url);
    await client.connect();
    const state = await client.query(
      "select to_regclass('ok') is not null as ok, to_regclass('half') is not null as half, to_regclass('after_bad') is not null as after from svc_migrations limit 1",
    );
    const names = await client.query('select name from svc_migrations order by name');
    await client.end();
    t.same(state.rows[0], { ok: true, half: false, after: false });
    t.same(
      names.rows.map((r) => r.name),
      ['0001_ok.sql'],
    );

    await fs.writeFile(path.join(dir, '0002_bad.sql'), 'create table half (x int);');
    const fixed = await migrate(url, { dir, logger: testLogger });
    t.same(fixed.applied, ['0002_bad.sql', '0003_after.sql'], 'a fixed file applies on the next start');
  });

  await t.test('programs with their own tables share one database', async (t) => {
    const url = await db.extraDatabase();
    const orchestrator = await migrationDir(t, { '0001_jobs.sql': 'create table jobs (id int);' });
    const relay = await migrationDir(t, { '0001_deliveries.sql': 'create table deliveries (id int);' });
    const a = await migrate(url, { dir: orchestrator, table: 'svc_migrations', logger: testLogger });
    const b = await migrate(url, { dir: relay, table: 'relay_migrations', logger: testLogger });
    t.same(a.applied, ['0001_jobs.sql']);
    t.same(b.applied, ['0001_deliveries.sql'], 'same file number, separate table');
    t.not(migrationLockKey('svc_migrations'), migrationLockKey('relay_migrations'));
  });

  await t.test('waits for the lock held by another session, and gives up after lockTimeoutMs', async (t) => {
    const url = await db.extraDatabase();
    const dir = await migrationDir(t, { '0001_x.sql': 'create table x (id int);' });
    const holder = new pg.Client(url);
    await holder.connect();
    t.teardown(() => holder.end());
    await holder.query('select pg_advisory_lock($1::bigint)', [migrationLockKey('svc_migrations').toString()]);

    const timedOut = (await migrate(url, { dir, lockTimeoutMs: 200, logger: testLogger }).catch((e: unknown) => e)) as SvcError;
    t.equal(timedOut.code, 'SVC_ERR_DB_MIGRATION_LOCK_TIMEOUT');

    let done = false;
    const running = migrate(url, { dir, logger: testLogger }).then((r) => {
      done = true;
      return r;
    });
    // PostgreSQL shows the migration's session blocked by the holder's lock (not a fixed wait).
    const holderPid = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    let blocked = false;
    for (const deadline = Date.now() + 60_000; !blocked && Date.now() < deadline; ) {
      const rows = await holder.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where $1::int = any(pg_blocking_pids(pid))', [holderPid]);
      blocked = rows.rows[0]!.n > 0;
      if (!blocked) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    t.ok(blocked, 'the migration waits on the lock');
    t.equal(done, false, 'still waiting while the lock is held');
    await holder.query('select pg_advisory_unlock($1::bigint)', [migrationLockKey('svc_migrations').toString()]);
    t.same((await running).applied, ['0001_x.sql']);
  });

  await t.test('two processes migrating one empty database at once: one schema, no error', async (t) => {
    const url = await db.extraDatabase();
    const dir = await migrationDir(t, {
      '0001_a.sql': 'create table a (id int primary key);',
      '0002_slow.sql': 'select pg_sleep(0.3);\ncreate table b (id int references a);',
      '0003_c.sql': 'create table c (id int);',
    });
    const startAt = Date.now() + 400;
    const run = () =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [CHILD, url, dir, 'svc_migrations', String(startAt)], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.on('close', (code) => {
          clearTimeout(timer);
          resolve({ code, stdout, stderr });
        });
      });
    const [one, two] = await Promise.all([run(), run()]);
    t.equal(one.code, 0, one.stderr);
    t.equal(two.code, 0, two.stderr);
    const results = [JSON.parse(one.stdout), JSON.parse(two.stdout)] as Array<{ applied: string[] }>;
    const applied = results.flatMap((r) => r.applied).sort();
    t.same(applied, ['0001_a.sql', '0002_slow.sql', '0003_c.sql'], 'every file applied exactly once across both');
    const client = new pg.Client(url);
    await client.connect();
    const rows = await client.query('select name, count(*)::int as n from svc_migrations group by name order by name');
    const tables = await client.query("select count(*)::int as n from pg_tables where schemaname = 'public' and tablename in ('a','b','c')");
    await client.end();
    t.same(rows.rows, [
      { name: '0001_a.sql', n: 1 },
      { name: '0002_slow.sql', n: 1 },
      { name: '0003_c.sql', n: 1 },
    ]);
    t.equal(tables.rows[0].n, 3);
  });

  await t.test('bad migration directories are refused before anything changes', async (t) => {
    const url = await db.extraDatabase();
    const cases: Array<[string, Record<string, string>, string]> = [
      ['misnamed', { '1_init.sql': 'select 1;' }, 'SVC_ERR_DB_MIGRATION_NAME'],
      ['upper case', { '0001_Init.sql': 'select 1;' }, 'SVC_ERR_DB_MIGRATION_NAME'],
      ['duplicate number', { '0001_a.sql': 'select 1;', '0001_b.sql': 'select 1;' }, 'SVC_ERR_DB_MIGRATION_NAME'],
      ['empty file', { '0001_a.sql': '  \n' }, 'SVC_ERR_DB_MIGRATION_EMPTY'],
    ];
    for (const [label, files, code] of cases) {
      const dir = await migrationDir(t, files);
      await t.rejects(migrate(url, { dir, logger: testLogger }), { code }, label);
    }
    await t.rejects(migrate(url, { dir: '/nonexistent/svc-migrations', logger: testLogger }), { code: 'SVC_ERR_DB_MIGRATION_DIR' });
    const dir = await migrationDir(t, { '0001_a.sql': 'select 1;' });
    await t.rejects(migrate(url, { dir, table: 'bad-table; drop', logger: testLogger }), { code: 'SVC_ERR_DB_MIGRATION_TABLE' });
    await t.rejects(migrate('http://x', { dir, logger: testLogger }), { code: 'SVC_ERR_DB_URL_INVALID' });
    const client = new pg.Client(url);
    await client.connect();
    const found = await client.query("select to_regclass('svc_migrations') as t");
    await client.end();
    t.equal(found.rows[0].t, null, 'no migrations table was created');
  });
}, { schema: 'empty' });

t.test('readMigrations orders by number and ignores other files', async (t) => {
  const dir = await migrationDir(t, { '0010_b.sql': 'select 2;', '0002_a.sql': 'select 1;', 'notes.txt': 'x' });
  const migrations = await readMigrations(dir);
  t.same(
    migrations.map((m) => [m.name, m.version]),
    [
      ['0002_a.sql', 2],
      ['0010_b.sql', 10],
    ],
  );
});

t.test('an unreachable database is a clear error', async (t) => {
  const dir = await migrationDir(t, { '0001_a.sql': 'select 1;' });
  await t.rejects(migrate('postgres://u:pw@127.0.0.1:1/db', { dir, logger: testLogger }), { code: 'SVC_ERR_DB_UNAVAILABLE' });
});
