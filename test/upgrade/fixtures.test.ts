// Upgrades lose nothing (issue 40, docs/upgrades.md): each dump in test/fixtures/upgrade/ was made
// by an older commit's real programs (populate.ts, scripts/upgrade-fixture.ts). It is restored
// with psql into a fresh empty database (and the relay's into another), the CURRENT migrations
// run over it, and every kind of row is read back through the current code: runs, jobs and logs
// (svc-admin runs list / show / logs), every sealed value of every store opened with the master
// key (svc-admin rotate-key --json, one transaction over every store) and the secret's plain
// value, the identity token minted before the dump verified against the upgraded key store's
// JWKS, the admin and agent tokens still accepted, config versions listed and their sealed
// fields opened, events and the schedule intact, the relay's org and deliveries; then the current
// orchestrator boots on it. No table has fewer rows than before. Counts are printed.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import t from 'tap';
import { findAdminToken } from '../../kernel/orchestrator/admin-auth/tokens.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE, startOrchestrator } from '../../kernel/orchestrator/app.ts';
import { latestConfigVersion, listConfigVersions, readConfigVersion } from '../../kernel/orchestrator/config/versions.ts';
import { checkAgentToken } from '../../kernel/orchestrator/dispatch/tokens.ts';
import { publicKeySet } from '../../kernel/orchestrator/identity/key-store.ts';
import { openContextSecrets } from '../../kernel/orchestrator/secrets/store.ts';
import { createDatabase, migrate, sql } from '../../kernel/services/db/index.ts';
import { runCli } from '../fixtures/cli.ts';
import { eachDatabase, testLogger } from '../fixtures/db.ts';
import { REPO_ROOT } from '../fixtures/programs.ts';
import { countLine, lostRows, psqlRestore, tableCounts, UPGRADE_FIXTURES, upgradeFixtures, type UpgradeManifest } from '../fixtures/upgrade/restore.ts';

// kernel/relay/app.ts's RELAY_MIGRATIONS_DIR and _TABLE, without loading the whole relay.
const RELAY_MIGRATIONS_DIR = join(REPO_ROOT, 'kernel/relay/migrations');
const RELAY_MIGRATIONS_TABLE = 'relay_migrations';

type Row = Record<string, unknown>;
const commits = await upgradeFixtures();
t.ok(commits.includes('2ca6415'), `fixtures: ${commits.join(', ')}`);

for (const commit of commits) {
  const manifest = JSON.parse(await readFile(join(UPGRADE_FIXTURES, `${commit}.json`), 'utf8')) as UpgradeManifest;
  await t.test(`the database of ${commit} upgraded to this tree`, async (t) => {
    await eachDatabase(
      t,
      async (t, db) => {
        const relayUrl = await db.extraDatabase();
        await psqlRestore(db.url, join(UPGRADE_FIXTURES, `${commit}.sql`));
        await psqlRestore(relayUrl, join(UPGRADE_FIXTURES, `${commit}-relay.sql`));
        const before = await tableCounts(db.pool);
        t.same(lostRows(manifest.counts, before), [], 'the restored dump holds what populate.ts counted');
        const applied = await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
        const after = await tableCounts(db.pool);
        t.same(lostRows(before, after), [], 'no table lost a row');
        const relay = await createDatabase({ url: relayUrl, logger: testLogger, maxPoolSize: 2 });
        t.teardown(() => relay.end());
        const relayBefore = await tableCounts(relay);
        const relayApplied = await migrate(relay, { dir: RELAY_MIGRATIONS_DIR, table: RELAY_MIGRATIONS_TABLE, logger: testLogger });
        const relayAfter = await tableCounts(relay);
        t.same(lostRows(relayBefore, relayAfter), [], 'no relay table lost a row');
        t.comment(`${commit}: orchestrator migrations applied ${JSON.stringify(applied)}; relay ${JSON.stringify(relayApplied)}`);
        t.comment(`${commit}: orchestrator rows after the upgrade: ${countLine(after)}`);
        t.comment(`${commit}: relay rows after the upgrade: ${countLine(relayAfter)}`);

        const env = { SVC_DATABASE_URL: db.url, SVC_SECRET_KEY: manifest.masterKey };
        const admin = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: { ...process.env, ...env } });
        const json = async (args: string[]) => {
          const r = await admin([...args, '--json']);
          t.equal(r.code, 0, `svc-admin ${args.join(' ')}: ${r.stderr}`);
          return JSON.parse(r.stdout) as Record<string, unknown>;
        };

        await t.test('runs, jobs and logs are listed by the current code', async (t) => {
          const listed = (await json(['runs', 'list'])) as { runs: Array<{ runId: string; workflow: string; status: string }> };
          t.equal(listed.runs.length, manifest.counts['runs'], `svc-admin runs list: ${listed.runs.length} runs`);
          const push = listed.runs.find((r) => r.runId === manifest.pushRun.id);
          t.match(push, { workflow: 'ci', status: 'completed' }, 'the push run, completed');
          t.match(listed.runs.find((r) => r.workflow === 'deployer'), { status: 'completed' }, 'the run an event triggered');
          const shown = (await json(['runs', 'show', manifest.pushRun.id])) as { jobs: Array<{ name: string; status: string }> };
          t.match(shown.jobs, [{ name: 'build', status: 'completed' }], 'its job');
          const logs = await admin(['runs', 'logs', manifest.pushRun.id]);
          t.equal(logs.code, 0, logs.stderr);
          for (const line of ['UPGRADE-FIXTURE line 1', 'UPGRADE-FIXTURE line 3', 'minted']) t.match(logs.stdout, line, `the log holds "${line}"`);
          t.notMatch(logs.stdout, manifest.secrets['deploy:TOKEN']!, 'and never the secret');
          const nightly = (await db.pool.one(sql.unsafe`SELECT j.status FROM jobs j JOIN runs r ON r.id = j.run_id WHERE r.workflow = 'nightly'`)) as Row;
          t.equal(nightly['status'], 'queued', 'the scheduled run\u2019s job is still queued, to be dispatched after the upgrade');
          t.comment(`runs ${listed.runs.length}, jobs ${after['jobs']}, log chunks ${after['job_logs']}, steps ${after['job_steps']}`);
        });

        await t.test('every sealed value opens with the master key; the secret reads back', async (t) => {
          const keys = [{ name: 'current', key: Buffer.from(manifest.masterKey, 'base64') }];
          const opened = await openContextSecrets(db.pool, keys, ['deploy']);
          t.same(opened, { deploy: { TOKEN: manifest.secrets['deploy:TOKEN'] } }, 'the secret context deploy opens to its value');
          const rotated = (await json(['rotate-key'])) as Record<string, number>;
          t.ok(rotated['signingKeys']! >= 1 && rotated['secrets']! >= 1 && rotated['sourceSecrets']! >= 1 && rotated['configFields']! >= 1, `svc-admin rotate-key opened and re-sealed every store: ${JSON.stringify(rotated)}`);
          const again = await openContextSecrets(db.pool, keys, ['deploy']);
          t.same(again, opened, 'and the value still reads back after the re-seal');
        });

        await t.test('tokens minted before the upgrade still verify', async (t) => {
          const jwks = await publicKeySet(db.pool);
          const { token, audience } = manifest.identityToken;
          const claims = decodeJwt(token);
          // The token's own lifetime (ten minutes) passed long ago: checked at the time it was valid.
          const verified = await jwtVerify(token, createLocalJWKSet(jwks as never), { issuer: manifest.issuer, audience, currentDate: new Date((claims.iat! + 1) * 1000) });
          t.equal(verified.protectedHeader.alg, 'ES256', `the identity token verifies against the upgraded JWKS (kid ${verified.protectedHeader.kid})`);
          t.match(verified.payload, { repository: 'acme/app', svc_run_id: manifest.pushRun.id }, 'with its claims');
          t.ok(await findAdminToken(db.pool, manifest.adminToken), 'the admin token is accepted');
          t.equal(await findAdminToken(db.pool, `${manifest.adminToken}x`), null, 'a different one is not');
          t.match(await checkAgentToken(db.pool, manifest.agentToken), { ok: true }, 'the agent token is accepted');
        });

        await t.test('config versions, events, schedules and deliveries are intact', async (t) => {
          const keys = [{ name: 'current', key: Buffer.from(manifest.masterKey, 'base64') }];
          const versions = await listConfigVersions(db.pool);
          t.equal(versions.length, manifest.counts['config_versions'], `${versions.length} config versions listed`);
          const history = (await json(['config', 'history'])) as { versions: unknown[] };
          t.equal(history.versions.length, versions.length, 'svc-admin config history lists them');
          const first = await readConfigVersion(db.pool, keys, 1);
          t.match(first?.config, { secrets: { bootstrapAdminToken: manifest.bootstrapAdminToken } }, 'a sealed field of the oldest version opens');
          t.match((await latestConfigVersion(db.pool, keys))?.config, { queue: { maxDepth: 500 } }, 'the newest version is the one set last');
          const events = (await db.pool.one(sql.unsafe`SELECT count(*)::int AS n, count(*) FILTER (WHERE processed_at IS NULL)::int AS pending FROM internal_events`)) as Row;
          t.equal(events['n'], manifest.counts['internal_events'], `${String(events['n'])} internal events`);
          const schedule = (await db.pool.one(sql.unsafe`SELECT count(*)::int AS n, bool_and(next_due_at IS NOT NULL) AS due FROM schedules WHERE workflow = 'nightly'`)) as Row;
          t.same(schedule, { n: 1, due: true }, 'the schedule is there with its next due time');
          const deliveries = (await json(['deliveries', 'list'])) as { deliveries: unknown[] };
          t.ok(deliveries.deliveries.length >= 1, `svc-admin deliveries list: ${deliveries.deliveries.length}`);
          const org = (await relay.one(sql.unsafe`SELECT count(*)::int AS n FROM relay_orgs WHERE org_id = 'acme'`)) as Row;
          t.equal(org['n'], 1, 'the relay still knows the org');
          t.comment(`config versions ${versions.length}, internal events ${String(events['n'])} (${String(events['pending'])} pending), schedules ${String(schedule['n'])}, deliveries ${deliveries.deliveries.length}`);
        });

        await t.test('the current orchestrator boots on the upgraded database', async (t) => {
          const dataDir = await mkdtemp(join(tmpdir(), 'svc-upgrade-'));
          t.teardown(() => rm(dataDir, { recursive: true, force: true }));
          const orch = await startOrchestrator({
            env: { ...env, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_AGENT_AUTH: 'none', SVC_DATA_DIR: dataDir },
            cwd: dataDir,
            logger: testLogger,
            plugins: () => ({ builtIns: [], config: {}, selection: {} }),
            subsystems: [],
          });
          t.teardown(() => orch.stop());
          const res = await fetch(`${orch.url}/healthz`);
          t.equal(res.status, 200, 'healthy');
        });
      },
      { schema: 'empty' },
    );
  });
}
