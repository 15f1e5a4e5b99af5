// svc-admin source purge-stale in-process (runCli) against a real database. Stale = created and
// without a delivery or a run for --older-than days, and no unfinished run (however old). The
// dry run lists and changes nothing; --confirm deletes the stale sources with their
// registrations, run-status webhook and pending forge-status deliveries, and keeps history (runs,
// the delivery log, delivered forge-status rows); neither flag (or both) is a usage error.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { migrate, sql, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { insertRun } from '../../fixtures/runs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

async function source(pool: DatabasePool, name: string, daysOld: number): Promise<string> {
  const id = randomUUID();
  await pool.query(sql.unsafe`
    INSERT INTO sources (id, org_id, provider_kind, routing_key, name, created_at, updated_at)
    VALUES (${id}, 'acme', 'git', ${`git:${id}`}, ${name}, now() - ${daysOld} * interval '1 day', now() - ${daysOld} * interval '1 day')`);
  return id;
}
async function delivery(pool: DatabasePool, sourceId: string, daysAgo: number): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO webhook_deliveries (org_id, delivery_id, source_id, routing_key, provider_kind, status, received_at)
    VALUES ('acme', ${randomUUID()}, ${sourceId}, ${`git:${sourceId}`}, 'git', 'no_match', now() - ${daysAgo} * interval '1 day')`);
}
async function run(pool: DatabasePool, sourceId: string, daysAgo: number, status: string, column: 'source_id' | 'workflow_source_id' = 'source_id'): Promise<string> {
  const { runId } = await insertRun(pool, { status, jobs: [{ name: 'build', status: status === 'queued' ? 'queued' : 'completed' }] });
  await pool.query(sql.unsafe`UPDATE runs SET ${sql.identifier([column])} = ${sourceId}, created_at = now() - ${daysAgo} * interval '1 day' WHERE id = ${runId}`);
  return runId;
}
async function forgeStatus(pool: DatabasePool, runId: string, sourceId: string, status: string, seq: number): Promise<void> {
  await pool.query(sql.unsafe`
    INSERT INTO forge_status_deliveries (id, org_id, run_id, feed_seq, target, source_id, provider_kind, run_status, state, changed_at, status)
    VALUES (${randomUUID()}, 'acme', ${runId}, ${seq}, 'webhook', ${sourceId}, 'git', 'completed', 'completed', now(), ${status})`);
}
const count = async (pool: DatabasePool, query: ReturnType<typeof sql.unsafe>) => Number(((await pool.one(query)) as { n: number | string }).n);

t.test('source purge-stale', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const admin = (...args: string[]) => runCli(BIN, ['source', 'purge-stale', ...args], { env: env({ SVC_DATABASE_URL: db.url }) });

    const silent = await source(db.pool, 'silent', 200); // never used: stale
    const lapsed = await source(db.pool, 'lapsed', 200); // last delivery and run 100 days ago: stale at 90, not at 120
    const busy = await source(db.pool, 'busy', 200); // delivery 10 days ago
    const pending = await source(db.pool, 'pending', 200); // an unfinished run from long ago
    const fresh = await source(db.pool, 'fresh', 5); // created recently
    const workflows = await source(db.pool, 'workflows', 200); // a recent run reads its workflow from it
    await db.pool.query(sql.unsafe`
      INSERT INTO registrations (id, org_id, source_id, repository, branch, sha, workflow, trigger_index, trigger_type, trigger, lock_entry)
      VALUES (${randomUUID()}, 'acme', ${silent}, 'acme/app', 'main', ${'a'.repeat(40)}, 'ci', 0, 'push', '{}'::jsonb, '{}'::jsonb)`);
    await db.pool.query(sql.unsafe`INSERT INTO source_status_webhooks (source_id, org_id, url, secret_sealed) VALUES (${silent}, 'acme', 'https://hooks.example.test/x', 'sealed')`);
    await delivery(db.pool, lapsed, 100);
    const lapsedRun = await run(db.pool, lapsed, 100, 'completed');
    await forgeStatus(db.pool, lapsedRun, lapsed, 'pending', 1);
    await forgeStatus(db.pool, lapsedRun, lapsed, 'delivered', 2);
    await delivery(db.pool, busy, 10);
    await run(db.pool, pending, 300, 'queued');
    await run(db.pool, workflows, 10, 'completed', 'workflow_source_id');
    const sourcesLeft = async () => (await db.pool.anyFirst(sql.unsafe`SELECT name FROM sources ORDER BY name`)).map(String);
    const all = ['busy', 'fresh', 'lapsed', 'pending', 'silent', 'workflows'];

    await t.test('neither flag, or both: refused as usage errors, nothing deleted', async (t) => {
      const none = await admin();
      t.equal(none.code, 2);
      t.match(none.stderr, /SVC_ERR_CLI_USAGE: source purge-stale deletes sources: pass --dry-run to list what would go, or --confirm to delete it/);
      const both = await admin('--dry-run', '--confirm');
      t.equal(both.code, 2);
      t.match(both.stderr, /cannot also be provided when using/);
      const zero = await admin('--dry-run', '--older-than', '0');
      t.equal(zero.code, 2);
      t.same(await sourcesLeft(), all);
    });

    await t.test('dry run lists the stale sources, oldest activity first, and deletes nothing', async (t) => {
      const listed = await admin('--dry-run');
      t.equal(listed.code, 0, listed.stderr);
      const lines = listed.stdout.trim().split('\n');
      t.equal(lines.length, 3);
      t.match(lines[0], new RegExp(`^${silent}  acme  git:${silent}  silent  last activity never  1 registrations$`));
      t.match(lines[1], new RegExp(`^${lapsed}  acme  git:${lapsed}  lapsed  last activity \\d{4}-\\d\\d-\\d\\dT.*Z  0 registrations$`));
      t.equal(lines[2], '2 stale sources would be purged; run again with --confirm to delete');
      const longer = await admin('--dry-run', '--older-than', '120', '--json');
      t.equal(longer.code, 0, longer.stderr);
      const body = JSON.parse(longer.stdout) as { dryRun: boolean; olderThanDays: number; sources: Array<{ id: string; name: string }> };
      t.match(body, { dryRun: true, olderThanDays: 120 });
      t.same(body.sources.map((s) => s.name), ['silent']);
      t.same(await sourcesLeft(), all);
    });

    await t.test('--confirm deletes the stale sources and what hangs off them, keeps history, prints counts', async (t) => {
      const runsBefore = await count(db.pool, sql.unsafe`SELECT count(*) AS n FROM runs`);
      const purged = await admin('--confirm');
      t.equal(purged.code, 0, purged.stderr);
      t.match(purged.stdout, /purged .* silent /);
      t.match(purged.stdout, /purged .* lapsed /);
      t.match(purged.stdout, /^Purged 2 sources, 1 registrations, 1 run-status webhooks, 1 pending forge-status deliveries\.$/m);
      t.same(await sourcesLeft(), ['busy', 'fresh', 'pending', 'workflows']);
      t.equal(await count(db.pool, sql.unsafe`SELECT count(*) AS n FROM registrations`), 0);
      t.equal(await count(db.pool, sql.unsafe`SELECT count(*) AS n FROM source_status_webhooks`), 0);
      t.same((await db.pool.anyFirst(sql.unsafe`SELECT status FROM forge_status_deliveries`)).map(String), ['delivered'], 'delivered rows are history');
      t.equal(await count(db.pool, sql.unsafe`SELECT count(*) AS n FROM runs`), runsBefore, 'runs stay');
      t.equal(await count(db.pool, sql.unsafe`SELECT count(*) AS n FROM webhook_deliveries WHERE source_id = ${lapsed}`), 1, 'the delivery log stays');

      const again = await admin('--confirm', '--json');
      t.equal(again.code, 0, again.stderr);
      t.match(JSON.parse(again.stdout), { dryRun: false, sources: [], counts: { sources: 0, registrations: 0, statusWebhooks: 0, forgeStatusDeliveries: 0 } });
    });
  });
});
