// Reconciliation after downtime, against real PostgreSQL (system and embedded), the real
// orchestrator (independent mode, the real github provider) and the fake GitHub API, which sends
// webhooks as GitHub does and logs every attempt: pushes GitHub could not hand over while the
// orchestrator was down become runs once it is back, with nobody resending them; a push that
// arrived is never asked for again, and one asked for is not asked for again at the next pass.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE, startOrchestrator, type Orchestrator } from '../../../../kernel/orchestrator/app.ts';
import { undelivered } from '../../../../kernel/orchestrator/reconcile/reconcile.ts';
import { createSource } from '../../../../kernel/orchestrator/sources/store.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../../../kernel/orchestrator/subsystems.ts';
import { migrate, sql } from '../../../../kernel/services/db/index.ts';
import { buildLock, serializeLock } from '../../../../workflow/lock/lock-file.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { generateAppKeyPair, startFakeGithub } from '../../../fixtures/fake-github.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../../../fixtures/locks.ts';

const APP_ID = '5151';
const keys = generateAppKeyPair();
const lock = serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('ci', [trig.push()], [job('build')])] }));

t.test('undelivered: per delivery id the newest failed attempt, none once any attempt was answered 2xx', async (t) => {
  const at = (id: string, guid: string, statusCode: number, second: number) => ({ id, deliveryId: guid, statusCode, event: 'push', redelivery: false, deliveredAt: new Date(Date.UTC(2026, 0, 1, 0, 0, second)) });
  const result = undelivered([at('1', 'a', 0, 1), at('2', 'a', 502, 5), at('3', 'b', 0, 2), at('4', 'b', 200, 3), at('5', 'c', 401, 4)]);
  t.same(result.map((r) => r.id).sort(), ['2', '5']);
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const masterKey = randomBytes(32);
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  fake.addInstallation('99', ['acme/app']);
  const shas = ['a', 'b', 'c'].map((c) => c.repeat(40));
  for (const sha of shas) fake.addCommit('acme/app', sha, { files: { '.svc/svc.lock.json': lock } });
  const { secret } = await createSource(db.pool, masterKey, {
    orgId: 'acme',
    providerKind: 'github',
    targetId: APP_ID,
    settings: { appId: Number(APP_ID), apiBaseUrl: fake.url },
    credentials: { privateKey: keys.privateKeyPem },
  });
  const port = await freePort();
  fake.hook = { url: `http://127.0.0.1:${port}/webhook/acme/github`, secret };
  const recorded = async (guid: string) =>
    ((await db.pool.maybeOne(sql.unsafe`SELECT status FROM webhook_deliveries WHERE delivery_id = ${guid}`)) as { status: string } | null)?.status ?? null;
  const attemptsOf = (guid: string) => fake.hookDeliveries.filter((d) => d.guid === guid).length;
  const until = async <T>(what: string, probe: () => Promise<T | undefined>): Promise<T> => {
    // A hang guard: the first pass runs two seconds after start.
    const deadline = Date.now() + 120_000;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  await t.test('pushes GitHub could not hand over while the orchestrator was down become runs once it is back', async (t) => {
    // Down: nothing listens on the port GitHub sends to.
    const missed = [];
    for (const sha of shas.slice(0, 2)) missed.push(await fake.sendWebhook('push', pushPayload({ after: sha, ref: 'refs/heads/main' })));
    t.same(missed.map((d) => d.status_code), [0, 0], 'GitHub logged both as not handed over');

    const dataDir = await mkdtemp(join(tmpdir(), 'svc-reconcile-'));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SVC_DATABASE_URL: db.url,
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: masterKey.toString('base64'),
      SVC_SERVER_PORT: String(port),
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_INSTANCE_ID: `reconcile-${randomUUID().slice(0, 8)}`,
      SVC_RECONCILE_INTERVAL_MS: '1000',
    };
    delete env['SVC_PLATFORM_URL'];
    let orchestrator: Orchestrator | null = await startOrchestrator({ env, cwd: dataDir, logger: testLogger, subsystems: ORCHESTRATOR_SUBSYSTEMS, plugins: orchestratorPlugins });
    t.teardown(async () => {
      await orchestrator?.stop();
      await rm(dataDir, { recursive: true, force: true });
    });

    // Up: a push now arrives at once (2xx) and must never be asked for again.
    const live = await fake.sendWebhook('push', pushPayload({ after: shas[2]!, ref: 'refs/heads/main' }));
    t.equal(live.status_code, 200, live.response);

    for (const d of missed) {
      const status = await until(`${d.guid} recorded`, async () => ((await recorded(d.guid)) ?? undefined));
      t.equal(status, 'matched', 'redelivered by GitHub, matched by the orchestrator');
    }
    const runs = (await db.pool.any(sql.unsafe`SELECT sha FROM runs WHERE delivery_id = ANY(${sql.array(missed.map((d) => d.guid), 'text')})`)) as Array<{ sha: string }>;
    t.same(runs.map((r) => r.sha).sort(), shas.slice(0, 2), 'one run per missed push, at its commit');
    const asked = (await db.pool.one(sql.unsafe`SELECT listed, missing, redelivered, error FROM source_reconciliations`)) as Record<string, unknown>;
    t.match(asked, { error: null }, 'the last pass recorded no error');

    // Several more passes (one a second): nothing is asked for twice, the live push never.
    const passes = async () => Number(((await db.pool.one(sql.unsafe`SELECT count(*)::int AS n FROM reconcile_redeliveries`)) as { n: number }).n);
    t.equal(await passes(), 2, 'two deliveries asked for');
    // Each pass stamps the source's row when it finishes: two more stamps, the second from a pass
    // that began after this point (passes never overlap).
    const finishedAt = async () => String(await db.pool.oneFirst(sql.unsafe`SELECT finished_at::text FROM source_reconciliations`));
    for (let pass = 0; pass < 2; pass += 1) {
      const before = await finishedAt();
      await until('another reconciliation pass', async () => ((await finishedAt()) !== before ? true : undefined));
    }
    for (const d of missed) t.equal(attemptsOf(d.guid), 2, `${d.guid}: the miss and one redelivery`);
    t.equal(attemptsOf(live.guid), 1, 'the push that arrived was never asked for again');
    await orchestrator.stop();
    orchestrator = null;
  });
});
