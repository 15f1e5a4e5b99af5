// queryThroughCallbacks (kernel/services/db/pg-query-callbacks.ts) against a real PostgreSQL:
// pg's `client.query` answers as before (rows, parameters, named statements, the callback API and
// submittables left to pg), errors keep their class, code and a stack leading back to the caller,
// createDatabase installs it, and the point of it: a process running queries through it promotes
// (next to) nothing to V8's old generation, where pg's own promise API promoted every query's text
// and rows. The last is a memory measurement from V8's GC trace, never a timing.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import t from 'tap';
import { queryThroughCallbacks } from '../../../../kernel/services/db/pg-query-callbacks.ts';
import { createDatabase, sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, inCi, systemAvailability, systemTestUrl } from '../../../fixtures/db.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';

const execFileAsync = promisify(execFile);
const CHILD = join(REPO_ROOT, 'test/fixtures/pg-promotion-child.ts');
const PATCHED = Symbol.for('svc.pg.queryThroughCallbacks');

/** Bytes V8 promoted to the old generation in the child's main isolate (from `--trace-gc-nvp`). */
async function promotedBytes(url: string, mode: 'plain' | 'callbacks', queries: number): Promise<{ promoted: number; scavenges: number; queries: number }> {
  const { stdout } = await execFileAsync(process.execPath, ['--trace-gc-nvp', '--max-semi-space-size=1', CHILD, url, mode, String(queries)], {
    maxBuffer: 64 * 1024 * 1024,
    timeout: 240_000,
  });
  const lines = stdout.split('\n');
  const from = (JSON.parse(lines.find((l) => l.startsWith('{"measuredFromMs"')) ?? '{}') as { measuredFromMs?: number }).measuredFromMs ?? 0;
  let promoted = 0;
  let scavenges = 0;
  for (const line of lines) {
    // Main isolate lines read `[pid:0x…:0]   1234 ms: …`; worker isolates have another last field.
    const at = /^\[\d+:0x[0-9a-f]+:0\]\s+(\d+) ms: .* gc=s /.exec(line);
    if (at === null || Number(at[1]) < from) continue;
    scavenges += 1;
    promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
  }
  const summary = JSON.parse(lines.find((l) => l.startsWith('{"queries"')) ?? '{}') as { queries?: number };
  return { promoted, scavenges, queries: summary.queries ?? 0 };
}

await eachDatabase(t, async (t, db) => {
  queryThroughCallbacks();
  queryThroughCallbacks(); // idempotent: a second call must not wrap the wrapper
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  t.teardown(() => client.end());

  await t.test('results, parameters and named statements as before', async (t) => {
    const plain = await client.query<{ n: number; s: string }>('select 41 + 1 as n, $1::text as s', ['a;b--"c\'']);
    t.same(plain.rows, [{ n: 42, s: 'a;b--"c\'' }]);
    t.equal(plain.rowCount, 1);
    t.equal(plain.command, 'SELECT');
    const text = await client.query<{ one: number }>('select 1 as one');
    t.same(text.rows, [{ one: 1 }], 'a text without values (simple protocol)');
    for (const v of [1, 2, 3]) {
      const named = await client.query<{ v: number }>({ name: 'svc_test_named', text: 'select $1::int * 10 as v', values: [v] });
      t.same(named.rows, [{ v: v * 10 }], `named statement, value ${v}`);
    }
    const prepared = await client.query<{ name: string }>("select name from pg_prepared_statements where name = 'svc_test_named'");
    t.equal(prepared.rowCount, 1, 'the named statement was prepared once on the connection');
  });

  await t.test('errors keep class, code and a stack that leads back to the caller', async (t) => {
    async function readMissingTable(): Promise<unknown> {
      return await client.query('select * from svc_no_such_table where id = $1', [1]);
    }
    const error = await readMissingTable().then(
      () => null,
      (e: unknown) => e,
    );
    t.ok(error instanceof pg.DatabaseError, 'a pg DatabaseError');
    t.equal((error as pg.DatabaseError).code, '42P01');
    t.match((error as Error).stack, /readMissingTable/, 'the stack names the calling function');
    const after = await client.query<{ ok: boolean }>('select true as ok');
    t.same(after.rows, [{ ok: true }], 'the connection answers after the error');
  });

  await t.test('the callback API and submittables are left to pg', async (t) => {
    const viaCallback = await new Promise<pg.QueryResult<{ n: number }>>((resolve, reject) => {
      const returned = client.query<{ n: number }>('select $1::int as n', [7], (error, result) => (error ? reject(error) : resolve(result)));
      t.equal(returned, undefined, 'with a callback nothing is returned, as in pg');
    });
    t.same(viaCallback.rows, [{ n: 7 }]);
    const viaConfig = await new Promise<pg.QueryResult<{ n: number }>>((resolve, reject) => {
      const config = { text: 'select $1::int as n', values: [8], callback: (error: Error | null, result: pg.QueryResult<{ n: number }>) => (error ? reject(error) : resolve(result)) };
      t.equal(client.query(config as never), undefined, "a config object's own callback is pg's to call");
    });
    t.same(viaConfig.rows, [{ n: 8 }]);
    const submitted = new pg.Query('select 5 as n');
    const rows: unknown[] = [];
    await new Promise<void>((resolve, reject) => {
      submitted.on('row', (row: unknown) => rows.push(row));
      submitted.on('end', () => resolve());
      submitted.on('error', reject);
      t.equal(client.query(submitted), submitted, 'a submittable is returned itself, as in pg');
    });
    t.same(rows, [{ n: 5 }]);
  });

  await t.test('createDatabase installs it; slonik pools query through it', async (t) => {
    t.equal((pg.Client.prototype as unknown as Record<symbol, unknown>)[PATCHED], true);
    const pool = await createDatabase({ url: db.url, logger: db.logger, maxPoolSize: 1 });
    t.teardown(() => pool.end());
    t.equal(await pool.oneFirst(sql.unsafe`select ${'through slonik'}::text`), 'through slonik');
  });
}, { schema: 'empty' });

const system = await systemAvailability();
t.test('queries through it promote next to nothing to the old generation', { skip: system.ok || inCi ? false : system.reason }, async (t) => {
  if (!system.ok) throw new Error(system.reason);
  const queries = 1_500;
  const through = await promotedBytes(systemTestUrl(), 'callbacks', queries);
  const plain = await promotedBytes(systemTestUrl(), 'plain', queries);
  t.equal(through.queries, queries, 'the child ran every query');
  t.ok(through.scavenges >= 3, `young-generation collections ran between the queries (${through.scavenges})`);
  // ~2 KB of text goes out and ~2 KB comes back per query: pg's promise API promoted about that
  // much per query here (informational: a later V8 may stop doing so). Through callbacks, well
  // under a tenth of it, whatever the machine's load.
  t.comment(`promoted per query: ${(through.promoted / queries).toFixed(0)} B through callbacks, ${(plain.promoted / queries).toFixed(0)} B with pg's promise API`);
  t.ok(through.promoted / queries < 400, `through callbacks ${(through.promoted / queries).toFixed(0)} B promoted per query (under 400 B)`);
});
