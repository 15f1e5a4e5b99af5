// Cluster settings on real PostgreSQL with two in-process orchestrators: the first node seeds the
// row from its config and a node with another config follows the row; GET/PATCH
// /api/v1/admin/cluster-settings need the admin bearer (cluster.read / cluster.write); a PATCH
// with an unknown field, a value out of range, a wrong type or nothing in it is a 400 and writes
// nothing; an accepted PATCH reaches the other node by NOTIFY, without a restart.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { adminAuthSubsystem } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { createAdminToken } from '../../../../kernel/orchestrator/admin-auth/tokens.ts';
import { startOrchestrator, type Orchestrator } from '../../../../kernel/orchestrator/app.ts';
import { clusterSubsystem } from '../../../../kernel/orchestrator/cluster/subsystem.ts';
import { clusterServiceRef } from '../../../../kernel/orchestrator/service-refs.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger, type Test } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';


const ADMIN = 'admin-token-settings-0123456789';

async function startNode(t: Test, dbUrl: string, env: Record<string, string>): Promise<Orchestrator> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-settings-'));
  const orch = await startOrchestrator({
    env: { SVC_DATABASE_URL: dbUrl, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN, ...env },
    cwd: dataDir,
    logger: testLogger,
    plugins: () => ({ builtIns: [], config: {}, selection: {} }),
    subsystems: [adminAuthSubsystem, clusterSubsystem],
  });
  t.teardown(async () => {
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return orch;
}

async function call(orch: Orchestrator, method: 'GET' | 'PATCH', body?: unknown, token: string | null = ADMIN): Promise<{ status: number; body: any }> {
  const res = await fetch(`${orch.url}/api/v1/admin/cluster-settings`, {
    method,
    headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json() };
}

await eachDatabase(t, async (t, db) => {
  const a = await startNode(t, db.url, { SVC_INSTANCE_ID: 'node-a', SVC_CLUSTER_MAX_DISPATCH_ATTEMPTS: '7', SVC_SEALED_SECRETS_RETRY_BACKOFF_MS: '45000' });
  const b = await startNode(t, db.url, { SVC_INSTANCE_ID: 'node-b', SVC_CLUSTER_MAX_DISPATCH_ATTEMPTS: '9' });
  const settingsOf = (o: Orchestrator) => o.get(clusterServiceRef).settings.current();

  await t.test('the first node seeds the row; a node with another config follows it', async (t) => {
    const got = await call(a, 'GET');
    t.equal(got.status, 200);
    t.same(got.body.settings, { maxDispatchAttempts: 7, sealedSecretsRetryBackoffMs: 45_000 });
    t.equal(got.body.updatedBy, 'config of node node-a');
    t.same(settingsOf(b), { maxDispatchAttempts: 7, sealedSecretsRetryBackoffMs: 45_000 }, "node-b's config (9, default back-off) does not apply");
    t.same((await call(b, 'GET')).body.settings, got.body.settings);
  });

  await t.test('admin bearer and scopes', async (t) => {
    t.equal((await call(a, 'GET', undefined, null)).status, 401);
    t.equal((await call(a, 'PATCH', { maxDispatchAttempts: 3 }, null)).status, 401);
    t.equal((await call(a, 'PATCH', { maxDispatchAttempts: 3 }, 'wrong-token-0123456789')).status, 401);
    const reader = await createAdminToken(db.pool, { name: 'reader', scopes: ['cluster.read'], unrestricted: false, createdBy: 'test' });
    t.equal((await call(a, 'GET', undefined, reader.token)).status, 200, 'cluster.read reads');
    const refused = await call(a, 'PATCH', { maxDispatchAttempts: 3 }, reader.token);
    t.equal(refused.status, 403, 'cluster.read does not write');
    t.equal(refused.body.error.code, 'SVC_ERR_ADMIN_SCOPE_MISSING');
    t.equal(settingsOf(a).maxDispatchAttempts, 7, 'nothing written');
  });

  await t.test('strict body: refused with 400, nothing written', async (t) => {
    const before = (await db.pool.one(sql.unsafe`SELECT max_dispatch_attempts, sealed_secrets_retry_backoff_ms, updated_at::text AS at FROM cluster_settings`)) as Record<string, unknown>;
    const cases: Array<[unknown, RegExp]> = [
      [{ maxDispatchAttempts: 3, heartbeatMs: 1000 }, /heartbeatMs: unknown field/],
      [{ leaseDurationMs: 30_000 }, /leaseDurationMs: unknown field/],
      [{ maxDispatchAttempts: 0 }, /maxDispatchAttempts/],
      [{ maxDispatchAttempts: 101 }, /maxDispatchAttempts/],
      [{ maxDispatchAttempts: 2.5 }, /maxDispatchAttempts/],
      [{ maxDispatchAttempts: '3' }, /maxDispatchAttempts/],
      [{ sealedSecretsRetryBackoffMs: 999 }, /sealedSecretsRetryBackoffMs/],
      [{ sealedSecretsRetryBackoffMs: 3_600_001 }, /sealedSecretsRetryBackoffMs/],
      [{ sealedSecretsRetryBackoffMs: null }, /sealedSecretsRetryBackoffMs/],
      [{}, /./],
      [[], /./],
    ];
    for (const [body, message] of cases) {
      const res = await call(a, 'PATCH', body);
      t.equal(res.status, 400, JSON.stringify(body));
      t.equal(res.body.error.code, 'SVC_ERR_HTTP_INVALID_BODY', JSON.stringify(body));
      t.match(res.body.error.message, message, JSON.stringify(body));
    }
    const malformed = await call(a, 'PATCH', '{"maxDispatchAttempts": 3');
    t.equal(malformed.status, 400);
    const after = (await db.pool.one(sql.unsafe`SELECT max_dispatch_attempts, sealed_secrets_retry_backoff_ms, updated_at::text AS at FROM cluster_settings`)) as Record<string, unknown>;
    t.same(after, before, 'the row is untouched');
    t.same(settingsOf(b), { maxDispatchAttempts: 7, sealedSecretsRetryBackoffMs: 45_000 });
  });

  await t.test('a PATCH on one node reaches the other by NOTIFY', async (t) => {
    const res = await call(a, 'PATCH', { maxDispatchAttempts: 3 });
    t.equal(res.status, 200);
    t.same(res.body.settings, { maxDispatchAttempts: 3, sealedSecretsRetryBackoffMs: 45_000 }, 'a field left out keeps its value');
    t.equal(res.body.updatedBy, 'bootstrap admin token via node node-a');
    t.same(settingsOf(a), res.body.settings, 'this node at once');
    await until('node-b picked the change up', () => (settingsOf(b).maxDispatchAttempts === 3 ? true : undefined), 20_000);
    t.same(settingsOf(b), { maxDispatchAttempts: 3, sealedSecretsRetryBackoffMs: 45_000 });

    const back = await call(b, 'PATCH', { sealedSecretsRetryBackoffMs: 120_000 });
    t.equal(back.status, 200);
    await until('node-a picked the change up', () => (settingsOf(a).sealedSecretsRetryBackoffMs === 120_000 ? true : undefined), 20_000);
    t.same((await call(a, 'GET')).body.settings, { maxDispatchAttempts: 3, sealedSecretsRetryBackoffMs: 120_000 });
  });

  await t.test('a node started later follows the stored row, not its config', async (t) => {
    const c = await startNode(t, db.url, { SVC_INSTANCE_ID: 'node-c', SVC_CLUSTER_MAX_DISPATCH_ATTEMPTS: '11' });
    t.same(settingsOf(c), { maxDispatchAttempts: 3, sealedSecretsRetryBackoffMs: 120_000 });
  });
});
