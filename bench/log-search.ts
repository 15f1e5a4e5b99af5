// Log search over many stored lines (docs/log-search.md, docs/benchmarks.md "Log search"). A
// scratch database gets the orchestrator's migrations, then 10,000 runs (two jobs each) of two
// orgs and 5,000,000 log lines in `job_logs` chunks, made with generate_series in SQL; a rare
// string is planted in a few lines (one of them in the other org, which must not be found).
// The search index (migration 0910) is dropped for the load and built afterwards, timed. Then
// `searchLogs` (the code the relay's route calls) runs N times per query; p50/p99, the index's
// size and the check that the rare string's lines (and only they) are found are printed.
// `--compare` also builds a tsvector GIN index over the same chunk text and times the same
// rare-string search through it, for the choice recorded in docs/log-search.md.
//
// Needs PostgreSQL: SVC_BENCH_DATABASE_URL (default the test server; a superuser: the load sets
// session_replication_role to skip the status-transition triggers), or --embedded for the
// embedded flavour. Run: node bench/log-search.ts [--runs 10000] [--lines 5000000]
//   [--chunk-lines 50] [--searches 200] [--compare] [--embedded] [--keep-data]
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { createDatabase, ensureDatabaseExists, migrate, sql, sqlTyped, startEmbeddedPostgres, type DatabasePool } from '../kernel/services/db/index.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../kernel/orchestrator/database.ts';
import { searchLogs } from '../kernel/orchestrator/log-search/search.ts';
import { Type } from 'typebox';
import { keepOrRemove, machineLine } from './lib/machine.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '10000' },
    lines: { type: 'string', default: '5000000' },
    'chunk-lines': { type: 'string', default: '50' },
    searches: { type: 'string', default: '200' },
    compare: { type: 'boolean', default: false },
    embedded: { type: 'boolean', default: false },
    'keep-data': { type: 'boolean', default: false },
  },
});
const RUNS = Number(args.runs);
const LINES = Number(args.lines);
const CHUNK = Number(args['chunk-lines']);
const SEARCHES = Number(args.searches);
const JOBS_PER_RUN = 2;
const CHUNKS_PER_JOB = Math.max(1, Math.round(LINES / (RUNS * JOBS_PER_RUN * CHUNK)));
const NEEDLE = 'zq-needle-4711';
/** Where the needle is planted: [run number, job number (0/1), chunk seq, line index]; run 0..RUNS/10-1 belong to the other org. */
const PLANTED: Array<[number, number, number, number]> = [
  [RUNS - 1, 0, 0, 3],
  [RUNS - 17, 1, CHUNKS_PER_JOB - 1, CHUNK - 1],
  [Math.floor(RUNS / 2), 0, 1 % CHUNKS_PER_JOB, 0],
  [Math.floor(RUNS / 2) + 1, 1, 2 % CHUNKS_PER_JOB, 7],
  [Math.floor(RUNS / 3), 1, 0, 20],
  [RUNS / 10 + 5, 0, 0, 1],
  [3, 0, 0, 0], // the other org
];
const silent = pino({ level: 'silent' });
const ms = (t0: number) => performance.now() - t0;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const fmt = (n: number) => n.toFixed(1).padStart(7);
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

async function load(pool: DatabasePool): Promise<void> {
  await pool.query(sql.unsafe`SET session_replication_role = replica`);
  await pool.query(sql.unsafe`SET maintenance_work_mem = '256MB'`);
  const t0 = performance.now();
  await pool.query(sql.unsafe`
    INSERT INTO runs (id, org_id, provider, repository, workflow_repository, workflow, workflow_sha, sha, ref, event_name, subject_kind,
                      status, content_hash, lock_entry, event, created_at)
    SELECT md5('run' || i)::uuid, CASE WHEN i < ${RUNS / 10} THEN 'other' ELSE 'acme' END, 'github',
           'acme/repo-' || (i % 20), 'acme/repo-' || (i % 20), (ARRAY['ci', 'nightly', 'release'])[1 + i % 3], 'w', md5(i::text),
           'refs/heads/' || (ARRAY['main', 'dev', 'feature-x'])[1 + i % 3], 'push', 'ref',
           CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'completed' END, 'c', '{}', '{}', now() - (${RUNS} - i) * interval '1 minute'
    FROM generate_series(0, ${RUNS - 1}) AS i`);
  await pool.query(sql.unsafe`
    INSERT INTO jobs (id, run_id, org_id, name, display_name, status, created_at)
    SELECT md5('job' || i || '/' || k)::uuid, md5('run' || i)::uuid, CASE WHEN i < ${RUNS / 10} THEN 'other' ELSE 'acme' END,
           (ARRAY['build', 'test'])[1 + k], (ARRAY['build', 'test'])[1 + k], 'completed', now() - (${RUNS} - i) * interval '1 minute' + k * interval '1 second'
    FROM generate_series(0, ${RUNS - 1}) AS i, generate_series(0, ${JOBS_PER_RUN - 1}) AS k`);
  await pool.query(sql.unsafe`
    INSERT INTO job_steps (job_id, index, name, status)
    SELECT md5('job' || i || '/' || k)::uuid, s, (ARRAY['install', 'compile', 'unit'])[1 + s], 'completed'
    FROM generate_series(0, ${RUNS - 1}) AS i, generate_series(0, ${JOBS_PER_RUN - 1}) AS k, generate_series(0, 2) AS s`);
  // Lines: a verb, a noun, a path with numbers, a duration and an 8-hex id, like build output.
  await pool.query(sql.unsafe`
    INSERT INTO job_logs (job_id, seq, lines)
    SELECT md5('job' || i || '/' || k)::uuid, c,
      (SELECT jsonb_agg(jsonb_build_object(
                'at', '2026-12-01T10:00:00.000Z', 'step', (ARRAY['install', 'compile', 'unit'])[1 + (c * ${CHUNK} + n) * 3 / ${CHUNK * CHUNKS_PER_JOB}],
                'stream', 'stdout',
                'text', (ARRAY['PASS', 'ok', 'info', 'compiling', 'linking', 'downloading', 'warn', 'debug'])[1 + h % 8] || ' ' ||
                        (ARRAY['module', 'package', 'bundle', 'test', 'fixture', 'handler', 'router', 'schema'])[1 + (h / 8) % 8] || ' src/' ||
                        (ARRAY['core', 'api', 'web', 'cli', 'db', 'auth', 'jobs', 'util'])[1 + (h / 64) % 8] || '/file_' || (h / 512) % 997 ||
                        '.ts (' || h % 1000 || ' ms) ' || substr(md5(h::text), 1, 8)) ORDER BY n)
       FROM generate_series(0, ${CHUNK - 1}) AS n, LATERAL (SELECT abs(hashint8((i::bigint * 1000003 + k * 7919 + c) * 10007 + n)) AS h) AS hh)
    FROM generate_series(0, ${RUNS - 1}) AS i, generate_series(0, ${JOBS_PER_RUN - 1}) AS k, generate_series(0, ${CHUNKS_PER_JOB - 1}) AS c`);
  for (const [run, job, seq, index] of PLANTED) {
    await pool.query(sql.unsafe`
      UPDATE job_logs SET lines = jsonb_set(lines, ${`{${index},text}`}::text[], to_jsonb(${`ERROR fetch failed: ${NEEDLE} not reachable (run ${run})`}::text))
      WHERE job_id = md5(${`job${run}/${job}`})::uuid AND seq = ${seq}`);
  }
  await pool.query(sql.unsafe`SET session_replication_role = origin`);
  const lines = await pool.oneFirst(sqlTyped(Type.Object({ n: Type.Number() }))`SELECT sum(jsonb_array_length(lines))::int AS n FROM job_logs`);
  process.stdout.write(`data: ${RUNS} runs × ${JOBS_PER_RUN} jobs × ${CHUNKS_PER_JOB} chunks × ${CHUNK} lines = ${lines} lines, loaded in ${(ms(t0) / 1000).toFixed(1)} s\n`);
  await pool.query(sql.unsafe`VACUUM ANALYZE runs`);
  await pool.query(sql.unsafe`VACUUM ANALYZE jobs`);
  await pool.query(sql.unsafe`VACUUM ANALYZE job_logs`);
}

async function buildIndex(pool: DatabasePool, name: string, ddl: ReturnType<typeof sql.unsafe>): Promise<number> {
  const t0 = performance.now();
  await pool.query(ddl);
  const took = ms(t0);
  await pool.query(sql.unsafe`ANALYZE job_logs`);
  const size = await pool.oneFirst(sqlTyped(Type.Object({ n: Type.Number() }))`SELECT pg_relation_size(${name}::regclass)::float8 AS n`);
  process.stdout.write(`index ${name}: built in ${(took / 1000).toFixed(1)} s, ${mib(size)} on disk (pg_relation_size)\n`);
  return size;
}

async function timed(label: string, n: number, run: () => Promise<number>): Promise<void> {
  try {
    await run();
  } catch (error) {
    process.stdout.write(`  ${label.padEnd(58)} failed: ${(error as Error).message}\n`);
    return;
  }
  const times: number[] = [];
  let found = 0;
  for (let i = 0; i < n; i += 1) {
    const t0 = performance.now();
    found = await run();
    times.push(ms(t0));
  }
  process.stdout.write(`  ${label.padEnd(58)} p50 ${fmt(pct(times, 50))} ms   p99 ${fmt(pct(times, 99))} ms   (${n} searches, ${found} lines)\n`);
}

const base = { limit: 50, context: 2 };

async function measureTrigram(pool: DatabasePool): Promise<void> {
  const answer = await searchLogs(pool, 'acme', { ...base, text: NEEDLE });
  const expected = PLANTED.filter(([run]) => run >= RUNS / 10).length;
  const ok = answer.hits.length === expected && answer.hits.every((h) => h.text.includes(NEEDLE)) && !answer.more;
  const context = answer.hits.every((h) => h.before.length + h.after.length > 0);
  process.stdout.write(`check: "${NEEDLE}" found in ${answer.hits.length} lines of org acme (expected ${expected}; the other org's line not shown): ${ok ? 'ok' : 'WRONG'}; context lines ${context ? 'ok' : 'MISSING'}\n`);
  if (!ok || !context) process.exitCode = 1;
  process.stdout.write(`searchLogs (trigram index, org acme, limit 50, 2 lines of context):\n`);
  await timed(`rare string "${NEEDLE}"`, SEARCHES, async () => (await searchLogs(pool, 'acme', { ...base, text: NEEDLE })).hits.length);
  await timed(`rare string, --repository acme/repo-1`, SEARCHES, async () => (await searchLogs(pool, 'acme', { ...base, text: NEEDLE, repository: 'acme/repo-1' })).hits.length);
  await timed(`rare substring "eedle-47" (mid-word)`, SEARCHES, async () => (await searchLogs(pool, 'acme', { ...base, text: 'eedle-47' })).hits.length);
  await timed(`uncommon "file_512.ts (7" (~1 line in 8,000)`, Math.min(SEARCHES, 10), async () => (await searchLogs(pool, 'acme', { ...base, text: 'file_512.ts (7' })).hits.length);
  await timed(`common "compiling handler" (1 line in 64; first 50)`, Math.min(SEARCHES, 10), async () => (await searchLogs(pool, 'acme', { ...base, text: 'compiling handler' })).hits.length);
}

async function measureTsvector(pool: DatabasePool): Promise<void> {
  await pool.query(sql.unsafe`DROP INDEX job_logs_text_trgm`);
  await buildIndex(pool, 'job_logs_text_tsv', sql.unsafe`CREATE INDEX job_logs_text_tsv ON job_logs USING gin (to_tsvector('simple', svc_log_chunk_text(lines)))`);
  const search = async (text: string) => {
    const rows = await pool.any(sqlTyped(Type.Object({ t: Type.String() }))`
      SELECT e.line->>'text' AS t
      FROM job_logs l JOIN jobs j ON j.id = l.job_id JOIN runs r ON r.id = j.run_id
      CROSS JOIN LATERAL jsonb_array_elements(l.lines) WITH ORDINALITY AS e(line, ord)
      WHERE to_tsvector('simple', svc_log_chunk_text(l.lines)) @@ phraseto_tsquery('simple', ${text})
        AND to_tsvector('simple', e.line->>'text') @@ phraseto_tsquery('simple', ${text}) AND r.org_id = 'acme'
      ORDER BY r.created_at DESC, r.id, j.created_at, j.id, l.seq, e.ord LIMIT 51`);
    return rows.length;
  };
  process.stdout.write(`tsvector index (phrase query, same joins and order, no context lines):\n`);
  await timed(`rare string "${NEEDLE}"`, SEARCHES, () => search(NEEDLE));
  await timed(`rare substring "eedle-47" (mid-word): finds nothing`, SEARCHES, () => search('eedle-47'));
  await pool.query(sql.unsafe`DROP INDEX job_logs_text_tsv`);
}

async function main(): Promise<void> {
  const end = machineLine(false);
  const dir = args.embedded ? mkdtempSync(path.join(tmpdir(), 'svc-bench-log-search-')) : undefined;
  const server = dir === undefined ? undefined : await startEmbeddedPostgres({ dataDir: dir, logger: silent, settings: { fsync: 'off' } });
  const adminUrl = server?.url ?? process.env['SVC_BENCH_DATABASE_URL'] ?? process.env['SVC_TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `svc_bench_log_search_${process.pid}`;
  await ensureDatabaseExists(adminUrl, name);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const pool = await createDatabase({ url: url.toString(), logger: silent, maxPoolSize: 1, statementTimeoutMs: 3_600_000, namedStatements: 'repeated' });
  try {
    process.stdout.write(`flavour: ${server === undefined ? 'system PostgreSQL' : 'embedded PostgreSQL'} (${await pool.oneFirst(sqlTyped(Type.Object({ v: Type.String() }))`SELECT current_setting('server_version') AS v`)})\n`);
    await migrate(pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: silent });
    await pool.query(sql.unsafe`DROP INDEX job_logs_text_trgm`);
    await load(pool);
    const heap = await pool.oneFirst(sqlTyped(Type.Object({ n: Type.Number() }))`SELECT pg_total_relation_size('job_logs')::float8 AS n`);
    process.stdout.write(`job_logs with its TOAST and primary key: ${mib(heap)}\n`);
    await pool.query(sql.unsafe`SET maintenance_work_mem = '256MB'`);
    await buildIndex(pool, 'job_logs_text_trgm', sql.unsafe`CREATE INDEX job_logs_text_trgm ON job_logs USING gin (svc_log_chunk_text(lines) gin_trgm_ops)`);
    await measureTrigram(pool);
    if (args.compare) await measureTsvector(pool);
  } finally {
    await pool.end();
    if (!args['keep-data']) {
      const admin = await createDatabase({ url: adminUrl, logger: silent });
      await admin.query(sql.unsafe`DROP DATABASE IF EXISTS ${sql.identifier([name])}`);
      await admin.end();
    } else process.stdout.write(`database kept: ${name}\n`);
    await server?.stop();
    if (dir !== undefined) keepOrRemove(dir, args['keep-data']);
    end();
  }
}

await main();
