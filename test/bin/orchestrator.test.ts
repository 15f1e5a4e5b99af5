// svc-orchestrator as a real process: ready line, health, metrics, clean SIGTERM, restart on the
// same database, embedded default under SVC_DATA_DIR, one-line fatal errors.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../kernel/orchestrator/database.ts';
import { createSource } from '../../kernel/orchestrator/sources/store.ts';
import { migrate, sql } from '../../kernel/services/db/index.ts';
import { eachDatabase, type Test } from '../fixtures/db.ts';
import { until } from '../fixtures/runs.ts';
import { REPO_ROOT, runProgram, startProgram } from '../fixtures/programs.ts';

// Real processes on a 2-core machine shared with other test files: allow for load.

const BIN = join(REPO_ROOT, 'bin/svc-orchestrator.ts');

function baseEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_SERVER_LOG_LEVEL: 'warn' };
  return { ...env, ...extra };
}

/** Each thread of `pid` with its name and nice value (/proc/<pid>/task/<tid>/stat, field 19). */
async function threadNices(pid: number): Promise<Array<{ tid: number; name: string; nice: number }>> {
  const out: Array<{ tid: number; name: string; nice: number }> = [];
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    const close = stat.lastIndexOf(')');
    if (close < 0) continue;
    const fields = stat.slice(close + 2).split(' ');
    out.push({ tid: Number(tid), name: stat.slice(stat.indexOf('(') + 1, close), nice: Number(fields[16]) });
  }
  return out;
}

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-orch-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('against an operator PostgreSQL', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const dataDir = await tempDir(t);
    const env = baseEnv({ SVC_DATABASE_URL: db.url, SVC_DATA_DIR: dataDir });
    let pid: number | undefined;
    const first = await startProgram(BIN, 'svc-orchestrator', { env, onSpawn: (child) => void (pid = child.pid) });
    if (process.platform === 'linux') {
      // Its libuv pool (background file work after the ack) runs at nice +10; the rest at 0.
      const threads = await threadNices(pid!);
      const pool = threads.filter((th) => th.name === 'libuv-worker');
      t.ok(pool.length >= 1, 'the libuv pool is running');
      t.same([...new Set(pool.map((th) => th.nice))], [10], 'every pool thread at nice +10 (THREADPOOL_NICE, bin/launch.ts)');
      t.equal(threads.find((th) => th.tid === pid)?.nice, 0, 'the main thread keeps its priority');
    }
    const health = await fetch(`${first.url}/healthz`);
    t.equal(health.status, 200);
    t.same(await health.json(), { status: 'ok' });
    const metrics = await (await fetch(`${first.url}/metrics`)).text();
    t.match(metrics, /process_cpu_user_seconds_total/);
    t.equal(await first.stop(), 0, 'SIGTERM stops cleanly with exit 0');

    const tables = await db.pool.anyFirst(
      (await import('../../kernel/services/db/index.ts')).sql.unsafe`select table_name from information_schema.tables where table_schema = 'public' order by 1`,
    );
    t.ok(tables.includes('runs') && tables.includes('jobs') && tables.includes('svc_migrations'), 'migrations applied');

    const second = await startProgram(BIN, 'svc-orchestrator', { env });
    t.equal((await fetch(`${second.url}/healthz`)).status, 200, 'restart on a migrated database');
    t.equal(await second.stop('SIGINT'), 0, 'SIGINT stops cleanly too');
  });
});

// Found by bench/ingest.ts, which drops the databases right after its SIGTERM: the event log's
// retry timer for a refused confirmation stayed armed after the pool closed, so the stopped
// process never ended. Here the database refuses every confirmation (a trigger raises).
t.test('a stop while the database refuses event-log confirmations still ends the process', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const dataDir = await tempDir(t);
    const masterKey = randomBytes(32);
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: (await import('pino')).pino({ level: 'silent' }) });
    const settings = { signature: { mode: 'none' }, maxPayloadBytes: 65536, rateLimitRpm: 1_000_000, eventType: { payloadField: 'event' }, idempotencyWindowSeconds: 3600 };
    await createSource(db.pool, masterKey, { orgId: 'acme', providerKind: 'generic', sourceId: 'hooks', settings });
    await db.pool.query(sql.unsafe`
      create function refuse_payload_confirmation() returns trigger language plpgsql as $$
      begin raise exception 'this test refuses event-log confirmations'; end $$`);
    await db.pool.query(sql.unsafe`
      create trigger refuse_payload_confirmation before update on webhook_deliveries for each row
      when (old.payload_omitted and not new.payload_omitted) execute function refuse_payload_confirmation()`);
    const env = baseEnv({ SVC_DATABASE_URL: db.url, SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: masterKey.toString('base64') });
    const p = await startProgram(BIN, 'svc-orchestrator', { env });
    const answer = await fetch(`${p.url}/webhook/acme/generic/hooks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ event: 'nothing-listens' }) });
    t.equal(answer.status, 200, 'the delivery is recorded');
    await until('the confirmation to be refused', () => ((p.stdout() + p.stderr()).includes('event-log confirmations not recorded') ? true : undefined), 120_000, 50);

    // A hang guard, not a speed check: before the fix the process never ended.
    const code = await Promise.race([p.stop(), new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 300_000).unref())]);
    if (code === 'hung') p.child.kill('SIGKILL');
    t.equal(code, 0, 'the process ended with exit 0 after SIGTERM');
    t.match(p.stdout() + p.stderr(), /event-log payloads left unwritten or unconfirmed at stop/, 'says what the stop left unconfirmed');
    t.notMatch(p.stderr(), /still running .* after a finished stop/, 'it ended by itself, not by the backstop');
    const row = (await db.pool.one(sql.unsafe`select payload_omitted, payload_omitted_reason from webhook_deliveries`)) as { payload_omitted: boolean; payload_omitted_reason: string | null };
    t.same([row.payload_omitted, row.payload_omitted_reason], [true, 'storage_failed'], 'the record says what is true: not confirmed');
  });
});

t.test('embedded defaults: no database URL, state under SVC_DATA_DIR, kept across restarts', async (t) => {
  const dataDir = await tempDir(t);
  const env = baseEnv({ SVC_DATA_DIR: dataDir });
  const first = await startProgram(BIN, 'svc-orchestrator', { env, readyTimeoutMs: 60_000 });
  t.equal((await fetch(`${first.url}/healthz`)).status, 200);
  t.match(first.stdout() + first.stderr(), /generated a master key in the data directory/, 'says it generated a master key');
  t.equal(await first.stop(), 0);
  const key = await readFile(join(dataDir, 'master.key'), 'utf8');

  const second = await startProgram(BIN, 'svc-orchestrator', { env, readyTimeoutMs: 60_000 });
  t.equal((await fetch(`${second.url}/healthz`)).status, 200);
  t.notMatch(second.stdout() + second.stderr(), /generated a master key/, 'reuses its key');
  t.equal(await readFile(join(dataDir, 'master.key'), 'utf8'), key);
  t.equal(await second.stop(), 0);
});

t.test('fatal start errors: one line, non-zero exit', async (t) => {
  const dataDir = await tempDir(t);
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ SVC_SERVER_PORT: '99999' }, /^svc-orchestrator: SVC_ERR_CONFIG_INVALID: config server\.port: must be <= 65535 \(from env SVC_SERVER_PORT\)$/],
    [{ SVC_STORAGE_TYPE: 'gcs' }, /storage\.type/],
    // s3 storage without a bucket stops the start (never starts with caches off); an unreachable
    // bucket does too (test/plugins/storage/s3-start.test.ts).
    [{ SVC_STORAGE_TYPE: 's3' }, /^svc-orchestrator: SVC_ERR_CONFIG_UNSUPPORTED: config storage\.type: s3 storage needs a bucket: set storage\.bucket \(SVC_STORAGE_BUCKET\).*\(from env SVC_STORAGE_TYPE\)$/],
    // A setting this version does not honour stops the start.
    [{ SVC_STORAGE_BUCKET: 'ci-cache' }, /^svc-orchestrator: SVC_ERR_CONFIG_UNSUPPORTED: config storage\.bucket: an s3 storage setting, and storage\.type is filesystem \(nothing reads it\)/],
    [{ SVC_SECRET_KEY: 'too-short' }, /SVC_SECRET_KEY/],
    [{ SVC_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' }, /^svc-orchestrator: SVC_ERR_DB_/],
    [{ SVC_NOT_A_SETTING: 'x' }, /SVC_NOT_A_SETTING/],
  ];
  for (const [extra, pattern] of cases) {
    const result = await runProgram(BIN, [], { env: baseEnv({ SVC_DATA_DIR: dataDir, ...extra }) });
    t.equal(result.code, 1, `exit 1 for ${JSON.stringify(extra)}`);
    const lines = result.stderr.trim().split('\n').filter((l) => l.startsWith('svc-orchestrator:'));
    t.equal(lines.length, 1, 'exactly one reason line');
    t.match(lines[0], pattern);
  }
});

t.test('the compiled orchestrator (dist/) finds its migrations and starts', { skip: process.env['CI'] !== 'true' && !existsSync(join(REPO_ROOT, 'dist/bin/svc-orchestrator.js')) ? 'needs `npm run build` (never skipped in CI)' : false }, async (t) => {
  await eachDatabase(t, async (t, db) => {
    const dataDir = await tempDir(t);
    const p = await startProgram(join(REPO_ROOT, 'dist/bin/svc-orchestrator.js'), 'svc-orchestrator', { env: baseEnv({ SVC_DATABASE_URL: db.url, SVC_DATA_DIR: dataDir }) });
    t.equal((await fetch(`${p.url}/healthz`)).status, 200);
    t.equal(await p.stop(), 0);
  });
});
