// svc-admin diagnose in-process (runCli) against a real database, with no orchestrator running:
// exit codes as svc doctor (0 all pass, 1 a warning, 2 a failure). No database address, a
// database no orchestrator ever migrated, storage that cannot be written, signing on without an
// active key, a key the master key does not open, no live node for the relay-link check, and
// an all-pass run once an agent is online and the key opens. Nothing is migrated by diagnose.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { migrate, sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');

interface Report {
  status: string;
  checks: Array<{ name: string; status: string; message: string }>;
}

t.test('diagnose', async (t) => {
  const storage = await mkdtemp(join(tmpdir(), 'svc-diagnose-'));
  t.teardown(() => rm(storage, { recursive: true, force: true }));
  const key = randomBytes(32).toString('base64');
  const base = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_STORAGE_TYPE: 'filesystem', SVC_STORAGE_FS_PATH: storage, SVC_SECRET_KEY: key };
  const diagnose = async (extra: Record<string, string>, ...args: string[]) => {
    const result = await runCli(BIN, ['diagnose', '--json', ...args], { env: { ...base, ...extra } });
    return { code: result.code, stderr: result.stderr, report: JSON.parse(result.stdout) as Report };
  };
  const statuses = (r: Report) => r.checks.map((c) => [c.name, c.status]);

  await t.test('no database address: database fails, the checks needing it are skipped, exit 2', async (t) => {
    const { code, report } = await diagnose({});
    t.equal(code, 2);
    t.same(statuses(report), [['database', 'fail'], ['migrations', 'skip'], ['storage', 'pass'], ['relay-link', 'skip'], ['signing', 'skip'], ['agents', 'skip']]);
    t.match(report.checks[0]!.message, /--database-url or set SVC_DATABASE_URL/);
  });

  await eachDatabase(t, async (t, db) => {
    await t.test('a database no orchestrator migrated: migrations fail and diagnose does not migrate it', async (t) => {
      const { code, report } = await diagnose({ SVC_DATABASE_URL: db.url });
      t.equal(code, 2);
      t.match(report.checks.find((c) => c.name === 'migrations'), { status: 'fail', message: /never used by an orchestrator/ });
      t.equal((await db.pool.maybeOne(sql.unsafe`select to_regclass('svc_migrations') as t`) as { t: string | null }).t, null, 'still not migrated');
    });

    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const env = { SVC_DATABASE_URL: db.url, SVC_ORCHESTRATOR_PROVENANCE_ISSUER: 'https://ci.example.test', SVC_BOOTSTRAP_ADMIN_TOKEN: 'diagnose-admin-token-0123456789' };

    await t.test('migrated, but no key, no agent, no live node, unwritable storage', async (t) => {
      // A regular file where the storage directory should be: nothing can be created under it.
      const blocker = join(storage, 'not-a-directory');
      await writeFile(blocker, 'x');
      const { code, report } = await diagnose({ ...env, SVC_STORAGE_FS_PATH: join(blocker, 'objects') });
      t.equal(code, 2);
      t.same(statuses(report), [['database', 'pass'], ['migrations', 'pass'], ['storage', 'fail'], ['relay-link', 'fail'], ['signing', 'fail'], ['agents', 'warn']]);
      t.match(report.checks.find((c) => c.name === 'relay-link')!.message, /no live orchestrator node/);
      t.match(report.checks.find((c) => c.name === 'signing')!.message, /no active signing key: .*svc-admin signing-key generate/);
      t.match(report.checks.find((c) => c.name === 'agents')!.message, /no agent online \(0 known\)/);
    });

    await t.test('a key the configured master key does not open fails; the right key passes; all pass: exit 0', async (t) => {
      const generated = await runCli(BIN, ['signing-key', 'generate'], { env: { ...base, ...env } });
      t.equal(generated.code, 0, generated.stderr);
      const other = await diagnose({ ...env, SVC_SECRET_KEY: randomBytes(32).toString('base64') }, '--token', 'x'.repeat(20));
      t.match(other.report.checks.find((c) => c.name === 'signing'), { status: 'fail', message: /does not open with the configured master key/ });

      await db.pool.query(sql.unsafe`INSERT INTO agents (id, labels, connected) VALUES ('agent-1', '{}', true), ('agent-2', '{}', false)`);
      // No token: the relay link cannot be asked, which is a skip, not a warning.
      const { SVC_BOOTSTRAP_ADMIN_TOKEN: _token, ...noToken } = env;
      const ok = await diagnose(noToken);
      t.equal(ok.code, 0, JSON.stringify(ok.report));
      t.equal(ok.report.status, 'pass');
      t.same(statuses(ok.report), [['database', 'pass'], ['migrations', 'pass'], ['storage', 'pass'], ['relay-link', 'skip'], ['signing', 'pass'], ['agents', 'pass']]);
      t.match(ok.report.checks.find((c) => c.name === 'agents')!.message, /^1 agent\(s\) online$/);
      const text = await runCli(BIN, ['diagnose'], { env: { ...base, ...noToken } });
      t.equal(text.code, 0, text.stderr);
      t.match(text.stdout, /^pass {2}signing {5}active key \S+ opens with the configured master key$/m);
      t.match(text.stdout, /all checks pass\n$/);
    });
  }, { schema: 'empty' });
});
