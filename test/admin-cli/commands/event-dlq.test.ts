// svc-admin event-dlq list/count/retry/discard in-process (runCli) against a real database: only
// dead-lettered events are listed and counted (filters by org and name), a retry puts exactly the
// named ones back to pending with a fresh attempt count, a discard marks them processed with the
// operator's reason, a selection naming one unknown id changes nothing, and bad usage exits 2.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { Type } from 'typebox';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { migrate, sql, sqlTyped, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

type State = 'dlq' | 'pending' | 'processed';

async function insertEvent(pool: DatabasePool, e: { org: string; name: string; state: State; dlqMinutesAgo?: number; lastError?: string }): Promise<string> {
  const id = randomUUID();
  const dlq = e.state === 'dlq';
  await pool.query(sql.unsafe`
    INSERT INTO internal_events (id, name, payload, org_id, source, attempts, last_error, dlq_reason, dlq_at, processed_at, outcome)
    VALUES (${id}, ${e.name}, ${sql.jsonb({ n: 1 })}, ${e.org}, 'step', ${dlq ? 5 : e.state === 'processed' ? 1 : 0},
      ${e.lastError ?? null}, ${dlq ? 'exhausted_retries' : null},
      ${dlq ? sql.fragment`now() - ${e.dlqMinutesAgo ?? 0} * interval '1 minute'` : null},
      ${e.state === 'processed' ? sql.fragment`now()` : null}, ${e.state === 'processed' ? 'delivered' : null})`);
  return id;
}

const Row = Type.Object({
  dlq_reason: Type.Union([Type.String(), Type.Null()]),
  dlq_at: Type.Union([Type.String(), Type.Null()]),
  attempts: Type.Number(),
  processed: Type.Boolean(),
  outcome: Type.Union([Type.String(), Type.Null()]),
});

const rowOf = (pool: DatabasePool, id: string) =>
  pool.one(sqlTyped(Row)`SELECT dlq_reason, dlq_at::text AS dlq_at, attempts, processed_at IS NOT NULL AS processed, outcome FROM internal_events WHERE id = ${id}`);

t.test('list, count, retry, discard', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const dlqCount = async () => Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM internal_events WHERE dlq_reason IS NOT NULL AND processed_at IS NULL`));
    const run = (...args: string[]) => runCli(BIN, ['event-dlq', ...args], { env: env({ SVC_DATABASE_URL: db.url }) });
    const longError = `deploy hook answered 503\n  at line two ${'x'.repeat(300)}`;
    const a1 = await insertEvent(db.pool, { org: 'acme', name: 'deploy-done', state: 'dlq', dlqMinutesAgo: 3, lastError: longError });
    const a2 = await insertEvent(db.pool, { org: 'acme', name: 'build-done', state: 'dlq', dlqMinutesAgo: 2, lastError: 'boom' });
    const o1 = await insertEvent(db.pool, { org: 'other', name: 'deploy-done', state: 'dlq', dlqMinutesAgo: 1 });
    const pending = await insertEvent(db.pool, { org: 'acme', name: 'deploy-done', state: 'pending' });
    const processed = await insertEvent(db.pool, { org: 'acme', name: 'deploy-done', state: 'processed' });

    await t.test('list: only dead-lettered events, newest first, one line each', async (t) => {
      const listed = await run('list');
      t.equal(listed.code, 0, listed.stderr);
      const lines = listed.stdout.trim().split('\n');
      t.equal(lines.length, 3);
      t.same(lines.map((l) => l.split('  ')[0]), [o1, a2, a1], 'newest dlq time first');
      t.match(lines[2], new RegExp(`^${a1}  deploy-done  org=acme  attempts=5  exhausted_retries  \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z  deploy hook answered 503 at line two x+…$`));
      t.ok(lines[2]!.length < 300, 'the last error is one truncated line');
      t.match(lines[1], `${a2}  build-done  org=acme  attempts=5  exhausted_retries`);
      t.match(lines[0], /  -$/, 'no last error: -');
      t.notMatch(listed.stdout, pending);
      t.notMatch(listed.stdout, processed);

      const json = await run('list', '--json');
      t.equal(json.code, 0);
      const { events } = JSON.parse(json.stdout) as { events: Array<Record<string, unknown>> };
      t.same(Object.keys(JSON.parse(json.stdout) as object), ['events']);
      t.same(events.map((e) => e['id']), [o1, a2, a1]);
      t.same(Object.keys(events[0]!).sort(), ['attempts', 'createdAt', 'dlqAt', 'dlqReason', 'id', 'lastError', 'name', 'orgId', 'runId', 'source', 'target'].sort());
      t.match(events[2], { id: a1, name: 'deploy-done', orgId: 'acme', attempts: 5, dlqReason: 'exhausted_retries', lastError: longError, source: 'step', runId: null, target: null });

      t.same(JSON.parse((await run('list', '--org', 'acme', '--json')).stdout).events.map((e: { id: string }) => e.id), [a2, a1], '--org');
      t.same(JSON.parse((await run('list', '--name', 'deploy-done', '--json')).stdout).events.map((e: { id: string }) => e.id), [o1, a1], '--name');
      const limited = await run('list', '--limit', '1');
      t.equal(limited.code, 0);
      t.same(limited.stdout.trim().split('\n').map((l) => l.split('  ')[0]), [o1, '… 2 more (raise --limit to see them)']);
      t.equal((await run('list', '--org', 'nobody')).stdout, 'no events in the dead-letter queue\n');
    });

    await t.test('count', async (t) => {
      t.match(await run('count'), { code: 0, stdout: '3\n' });
      t.same(JSON.parse((await run('count', '--org', 'acme', '--name', 'build-done', '--json')).stdout), { count: 1 });
    });

    await t.test('usage errors exit 2 and change nothing', async (t) => {
      const none = await run('retry');
      t.equal(none.code, 2);
      t.match(none.stderr, /SVC_ERR_CLI_USAGE: name the event ids to retry .*or pass --all/);
      t.match(await run('retry', a1, '--all'), { code: 2, stderr: /not both/ });
      t.match(await run('retry', a1, '--org', 'acme'), { code: 2, stderr: /--org and --name narrow --all/ });
      t.match(await run('discard', a1), { code: 2, stderr: /Missing required flag reason/ });
      const json = await run('retry', '--json');
      t.equal(json.code, 2);
      t.same(JSON.parse(json.stdout), { error: { code: 'SVC_ERR_CLI_USAGE', message: 'name the event ids to retry (from "svc-admin event-dlq list"), or pass --all (narrowed with --org/--name)' } });
      t.equal(await dlqCount(), 3);
    });

    await t.test('a selection with an unknown or malformed id changes nothing', async (t) => {
      const ghost = randomUUID();
      const unknown = await run('retry', a1, ghost, a2);
      t.equal(unknown.code, 1);
      t.match(unknown.stderr, `SVC_ERR_EVENT_DLQ_UNKNOWN: no event ${ghost} in the dead-letter queue`);
      t.notMatch(unknown.stderr, a1);
      t.match(await run('retry', pending), { code: 1, stderr: /SVC_ERR_EVENT_DLQ_UNKNOWN/ }, 'a pending event is not in the queue');
      t.match(await run('retry', 'nope'), { code: 1, stderr: /SVC_ERR_EVENT_DLQ_ID_INVALID: event id "nope" is not a UUID/ });
      t.match(await run('discard', a2, ghost, '--reason', 'gone'), { code: 1, stderr: /SVC_ERR_EVENT_DLQ_UNKNOWN/ });
      for (const id of [a1, a2, o1]) t.match(await rowOf(db.pool, id), { dlq_reason: 'exhausted_retries', attempts: 5, processed: false, outcome: null }, 'still dead-lettered');
      t.equal(await dlqCount(), 3);
    });

    await t.test('retry puts exactly the named events back to pending', async (t) => {
      const retried = await run('retry', a1);
      t.equal(retried.code, 0, retried.stderr);
      t.equal(retried.stdout, `retried 1 event(s)\n${a1}\n`);
      t.same(await rowOf(db.pool, a1), { dlq_reason: null, dlq_at: null, attempts: 0, processed: false, outcome: null });
      t.match(await rowOf(db.pool, a2), { dlq_reason: 'exhausted_retries', attempts: 5 }, 'not named: untouched');
      t.match(await rowOf(db.pool, o1), { dlq_reason: 'exhausted_retries', attempts: 5 });
      t.equal(await dlqCount(), 2);

      const all = await run('retry', '--all', '--org', 'other', '--json');
      t.equal(all.code, 0, all.stderr);
      t.same(JSON.parse(all.stdout), { retried: [o1] }, '--all narrowed by --org');
      t.match(await rowOf(db.pool, o1), { dlq_reason: null, attempts: 0 });
      t.match(await rowOf(db.pool, a2), { dlq_reason: 'exhausted_retries' });
    });

    await t.test('discard marks them processed with the reason', async (t) => {
      const discarded = await run('discard', a2, '--reason', 'hook removed for good');
      t.equal(discarded.code, 0, discarded.stderr);
      t.equal(discarded.stdout, `discarded 1 event(s)\n${a2}\n`);
      const row = await rowOf(db.pool, a2);
      t.equal(row.processed, true);
      t.match(row.outcome, /hook removed for good/);
      t.equal(row.dlq_reason, 'exhausted_retries', 'kept for the record');
      t.equal(await dlqCount(), 0);
      t.equal((await run('list')).stdout, 'no events in the dead-letter queue\n');
      t.match(await run('discard', a2, '--reason', 'again'), { code: 1, stderr: /SVC_ERR_EVENT_DLQ_UNKNOWN/ }, 'a discarded event is out of the queue');

      const fresh = await insertEvent(db.pool, { org: 'acme', name: 'deploy-done', state: 'dlq' });
      const all = await run('discard', '--all', '--org', 'acme', '--reason', 'bulk', '--json');
      t.equal(all.code, 0, all.stderr);
      t.same(JSON.parse(all.stdout), { discarded: [fresh] });
      t.match(await rowOf(db.pool, fresh), { processed: true, outcome: /bulk/ });
      t.match(await rowOf(db.pool, a1), { processed: false, dlq_reason: null }, 'the retried (pending) event is not discarded by --all');
    });
  });
});

t.test('without a database: usage error', async (t) => {
  const result = await runCli(BIN, ['event-dlq', 'list'], { env: env() });
  t.equal(result.code, 2);
  t.match(result.stderr, /needs the orchestrator database/);
});
