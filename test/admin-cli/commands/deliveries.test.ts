// svc-admin deliveries list/show/retry in-process (runCli) against a real database: the list is
// one line per record, newest first, narrowed by filters, `--json` gives the records; show prints
// the header, the pipeline steps one per line, the runs and the payload (stored under its key, or
// omitted with the reason); an unknown delivery exits 1 and a bad --since is refused with the
// filter's code before the database is opened.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { migrate, sql, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

const SOURCE = randomUUID();
const RUN_A = randomUUID();
const RUN_B = randomUUID();

async function insertDelivery(
  pool: DatabasePool,
  r: { org: string; id: string; status: string; minutesAgo: number; repository?: string; ref?: string; sha?: string; eventName?: string; runIds?: string[]; steps?: unknown; payload?: [string | null, number | null, boolean, string | null]; message?: string },
): Promise<void> {
  const [key, bytes, omitted, reason] = r.payload ?? [null, null, false, null];
  await pool.query(sql.unsafe`
    INSERT INTO webhook_deliveries (org_id, delivery_id, source_id, routing_key, provider_kind, status, message, event_type, event_name,
      repository, ref, sha, run_ids, steps, payload_key, payload_bytes, payload_omitted, payload_omitted_reason, node_id, received_at)
    VALUES (${r.org}, ${r.id}, ${r.repository ? SOURCE : null}, 'github:100', 'github', ${r.status}, ${r.message ?? null},
      ${r.eventName ?? null}, ${r.eventName ?? null}, ${r.repository ?? null}, ${r.ref ?? null}, ${r.sha ?? null},
      ${sql.array(r.runIds ?? [], 'uuid')}, ${sql.jsonb((r.steps ?? []) as never)}, ${key}, ${bytes}, ${omitted}, ${reason}, 'node-a',
      now() - ${r.minutesAgo} * interval '1 minute')`);
}

t.test('list and show', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const run = (...args: string[]) => runCli(BIN, ['deliveries', ...args], { env: env({ SVC_DATABASE_URL: db.url }) });
    await insertDelivery(db.pool, {
      org: 'acme', id: 'gh-1', status: 'matched', minutesAgo: 2, repository: 'acme/app', ref: 'refs/heads/main', sha: 'a1b2c3d4e5f6'.padEnd(40, '0'),
      eventName: 'push', runIds: [RUN_A, RUN_B], payload: ['event-log/acme/gh-1.json.gz', 2048, false, null],
      steps: [
        { step: 'admission', outcome: 'ok' },
        { step: 'verify-signature', outcome: 'ok', detail: 'current secret' },
        { step: 'match', outcome: 'matched', detail: 'workflows ci,\n  lint' },
        { step: 'dispatch', outcome: 'ok', detail: '2 runs' },
      ],
    });
    await insertDelivery(db.pool, {
      org: 'acme', id: 'gh-2', status: 'no_lock_file', minutesAgo: 30, repository: 'acme/lib', ref: 'refs/pull/7/head', sha: 'f'.repeat(40),
      eventName: 'pull_request', payload: [null, 30_000_000, true, 'size_exceeded'], steps: [{ step: 'lock-fetch', outcome: 'no_lock_file' }],
    });
    await insertDelivery(db.pool, { org: 'other', id: 'gh-3', status: 'rejected_signature', minutesAgo: 180, message: 'signature does not verify' });

    await t.test('list: one line each, newest first; filters; --json', async (t) => {
      const listed = await run('list');
      t.equal(listed.code, 0, listed.stderr);
      const lines = listed.stdout.trim().split('\n');
      t.equal(lines.length, 3);
      const TIME = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';
      t.match(lines[0], new RegExp(`^${TIME}  acme  gh-1  matched  push  acme/app  main@a1b2c3d  runs=2$`));
      t.match(lines[1], new RegExp(`^${TIME}  acme  gh-2  no_lock_file  pull_request  acme/lib  refs/pull/7/head@fffffff  runs=0$`));
      t.match(lines[2], new RegExp(`^${TIME}  other  gh-3  rejected_signature  -  -  -  runs=0$`));

      const json = await run('list', '--org', 'acme', '--since', '1h', '--status', 'no_lock_file', '--json');
      t.equal(json.code, 0, json.stderr);
      const body = JSON.parse(json.stdout) as { deliveries: Array<Record<string, unknown>> };
      t.same(Object.keys(body), ['deliveries']);
      t.same(body.deliveries.map((d) => d['deliveryId']), ['gh-2']);
      t.match(body.deliveries[0], { orgId: 'acme', status: 'no_lock_file', repository: 'acme/lib', payloadOmitted: true, payloadOmittedReason: 'size_exceeded', payloadBytes: 30_000_000, runIds: [] });
      t.notOk('steps' in body.deliveries[0]!, 'no steps in the list');

      t.equal((await run('list', '--org', 'nobody')).stdout, 'no deliveries\n');
    });

    await t.test('show: header, steps one per line, runs, payload; --json', async (t) => {
      const shown = await run('show', 'gh-1', '--org', 'acme');
      t.equal(shown.code, 0, shown.stderr);
      const lines = shown.stdout.trimEnd().split('\n');
      t.match(lines[0], /^delivery gh-1  org acme  matched$/);
      t.match(lines[1], /^  received \S+Z  updated \S+Z  node node-a  attempts 1  duplicates 0$/);
      t.equal(lines[2], `  source ${SOURCE}  routing key github:100  provider github`);
      t.equal(lines[3], '  event push  name push  repository acme/app  main@a1b2c3d  sender -  trust -');
      t.same(lines.slice(4), [
        'steps:',
        '  admission  ok',
        '  verify-signature  ok  current secret',
        '  match  matched  workflows ci, lint',
        '  dispatch  ok  2 runs',
        `runs: ${RUN_A} ${RUN_B}`,
        'payload: stored under key event-log/acme/gh-1.json.gz, 2048 bytes',
      ]);

      const json = await run('show', 'gh-2', '--org', 'acme', '--json');
      t.equal(json.code, 0, json.stderr);
      const record = JSON.parse(json.stdout) as Record<string, unknown>;
      t.match(record, { orgId: 'acme', deliveryId: 'gh-2', status: 'no_lock_file', steps: [{ step: 'lock-fetch', outcome: 'no_lock_file' }], runIds: [], payloadKey: null, payloadBytes: 30_000_000, payloadOmitted: true, payloadOmittedReason: 'size_exceeded' });
      t.same(Object.keys(record).length, 31, 'every column (archivedAt included) and the steps');
    });

    await t.test('errors: unknown delivery exits 1, a bad --since is refused', async (t) => {
      const unknown = await run('show', 'gh-1', '--org', 'other');
      t.equal(unknown.code, 1);
      t.equal(unknown.stdout, '');
      t.match(unknown.stderr, 'SVC_ERR_DELIVERY_NOT_FOUND: no delivery gh-1 in org other; list them with "svc-admin deliveries list --org other"');

      const bad = await run('list', '--since', 'yesterday');
      t.equal(bad.code, 1);
      t.match(bad.stderr, /SVC_ERR_DELIVERY_FILTER_INVALID: since "yesterday" is not valid: give an ISO timestamp .* or a duration back from now \(30m, 1h, 7d\)/);
    });

    await t.test('retry: a kept delivery that gave up is due now; one never kept is refused', async (t) => {
      await insertDelivery(db.pool, { org: 'acme', id: 'gh-kept', status: 'failed', minutesAgo: 30, message: 'gave up after 9 attempts' });
      await db.pool.query(sql.unsafe`
        INSERT INTO webhook_delivery_retries (org_id, delivery_id, routing_key, provider_kind, headers, body, client_ip, received_at,
          state, attempts, next_attempt_at, last_error, created_at)
        VALUES ('acme', 'gh-kept', 'github:100', 'github', '{}'::jsonb, '\\x7b7d'::bytea, '127.0.0.1', now(), 'failed', 9,
          now() + interval '1 day', 'lock file could not be fetched: GitHub is unavailable', now() - interval '2 days')`);
      const retried = await run('retry', 'gh-kept', '--org', 'acme', '--json');
      t.equal(retried.code, 0, retried.stderr);
      t.match(JSON.parse(retried.stdout), { deliveryId: 'gh-kept', orgId: 'acme', attempts: 9, lastError: /GitHub is unavailable/ });
      const row = (await db.pool.one(sql.unsafe`
        SELECT r.state, r.next_attempt_at <= now() AS due, r.created_at > now() - interval '1 hour' AS new_clock, d.status
        FROM webhook_delivery_retries r JOIN webhook_deliveries d USING (org_id, delivery_id) WHERE r.delivery_id = 'gh-kept'`)) as Record<string, unknown>;
      t.same(row, { state: 'waiting', due: true, new_clock: true, status: 'retrying' });

      const refused = await run('retry', 'gh-1', '--org', 'acme');
      t.equal(refused.code, 1);
      t.match(refused.stderr, /SVC_ERR_DELIVERY_NOT_KEPT: delivery gh-1 of org acme is not kept for retry.*ask the sender to redeliver it/);
      t.equal((await db.pool.one(sql.unsafe`SELECT status FROM webhook_deliveries WHERE delivery_id = 'gh-1'`) as { status: string }).status, 'matched', 'nothing changed');
    });
  });
});
