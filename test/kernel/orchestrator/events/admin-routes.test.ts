// The operator HTTP routes of the event dead-letter queue and the cluster, on real PostgreSQL:
// the admin bearer is required (401), unknown fields and malformed ids are refused (400) before
// anything changes, unknown ids are 404 with nothing changed, and the OK paths list, count,
// retry and discard exactly what they name. The cluster route is served by a whole in-process
// orchestrator, which lists itself as alive and leader.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { Type } from 'typebox';
import { createLogger } from '../../../../core/logging.ts';
import { createAdminAuth } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE, startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { dlqRoutes } from '../../../../kernel/orchestrator/events/routes.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../../../kernel/orchestrator/subsystems.ts';
import { migrate, sql, sqlTyped, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { createHttpServer } from '../../../../kernel/services/http/index.ts';
import { createMetrics } from '../../../../kernel/services/metrics.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';


const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

async function insertEvent(pool: DatabasePool, e: { org: string; name: string; dlq: boolean; minutesAgo?: number }): Promise<string> {
  const id = randomUUID();
  await pool.query(sql.unsafe`
    INSERT INTO internal_events (id, name, payload, org_id, attempts, last_error, dlq_reason, dlq_at)
    VALUES (${id}, ${e.name}, ${sql.jsonb({})}, ${e.org}, ${e.dlq ? 5 : 0}, ${e.dlq ? 'hook answered 500' : null},
      ${e.dlq ? 'exhausted_retries' : null}, ${e.dlq ? sql.fragment`now() - ${e.minutesAgo ?? 0} * interval '1 minute'` : null})`);
  return id;
}

const Row = Type.Object({
  dlq_reason: Type.Union([Type.String(), Type.Null()]),
  attempts: Type.Number(),
  processed: Type.Boolean(),
  outcome: Type.Union([Type.String(), Type.Null()]),
});
const rowOf = (pool: DatabasePool, id: string) =>
  pool.one(sqlTyped(Row)`SELECT dlq_reason, attempts, processed_at IS NOT NULL AS processed, outcome FROM internal_events WHERE id = ${id}`);

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });

  await t.test('dead-letter queue routes', async (t) => {
    const app = createHttpServer({ logger: createLogger({ level: 'silent', name: 'dlq-routes-test' }), metrics: createMetrics({ defaultMetrics: false }) });
    t.teardown(() => app.close());
    await app.register(dlqRoutes({ pool: db.pool, auth: createAdminAuth({ pool: db.pool, bootstrapToken: () => ADMIN_TOKEN }) }));
    const a1 = await insertEvent(db.pool, { org: 'acme', name: 'deploy-done', dlq: true, minutesAgo: 2 });
    const a2 = await insertEvent(db.pool, { org: 'acme', name: 'build-done', dlq: true, minutesAgo: 1 });
    const o1 = await insertEvent(db.pool, { org: 'other', name: 'deploy-done', dlq: true });
    const pending = await insertEvent(db.pool, { org: 'acme', name: 'deploy-done', dlq: false });

    // Authentication first, on every route.
    for (const [method, url, payload] of [
      ['GET', '/api/v1/admin/events/dlq', undefined],
      ['POST', '/api/v1/admin/events/dlq/retry', { ids: [a1] }],
      ['POST', '/api/v1/admin/events/dlq/discard', { ids: [a1], reason: 'x' }],
    ] as const) {
      const none = await app.inject({ method, url, ...(payload ? { payload } : {}) });
      t.equal(none.statusCode, 401, `${url} without a bearer`);
      t.equal(none.json().error.code, 'SVC_ERR_ADMIN_UNAUTHORIZED');
      const wrong = await app.inject({ method, url, headers: { authorization: 'Bearer not-the-admin-token' }, ...(payload ? { payload } : {}) });
      t.equal(wrong.statusCode, 401, `${url} with a wrong bearer`);
    }
    t.match(await rowOf(db.pool, a1), { dlq_reason: 'exhausted_retries', attempts: 5 }, 'refused requests changed nothing');

    const listed = await app.inject({ method: 'GET', url: '/api/v1/admin/events/dlq', headers: auth });
    t.equal(listed.statusCode, 200);
    const body = listed.json() as { count: number; events: Array<{ id: string }> };
    t.equal(body.count, 3);
    t.same(body.events.map((e) => e.id), [o1, a2, a1], 'DLQ only, newest first');
    t.match(body.events[2], { id: a1, name: 'deploy-done', orgId: 'acme', attempts: 5, dlqReason: 'exhausted_retries', lastError: 'hook answered 500', dlqAt: /Z$/ });
    const filtered = (await app.inject({ method: 'GET', url: '/api/v1/admin/events/dlq?org=acme&name=deploy-done&limit=5', headers: auth })).json() as typeof body;
    t.same([filtered.count, filtered.events.map((e) => e.id)], [1, [a1]]);
    const limited = (await app.inject({ method: 'GET', url: '/api/v1/admin/events/dlq?limit=1', headers: auth })).json() as typeof body;
    t.same([limited.count, limited.events.map((e) => e.id)], [3, [o1]], 'count is the whole queue, the page is limited');

    // Bad requests: 400 with a stable code, nothing changed.
    const badQuery = await app.inject({ method: 'GET', url: '/api/v1/admin/events/dlq?colour=red', headers: auth });
    t.equal(badQuery.statusCode, 400, 'unknown query field');
    t.match(badQuery.json(), { error: { code: /^SVC_ERR_HTTP_/ } });
    t.equal((await app.inject({ method: 'GET', url: '/api/v1/admin/events/dlq?limit=0', headers: auth })).statusCode, 400, 'limit below 1');
    const unknownField = await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/retry', headers: auth, payload: { ids: [a1], force: true } });
    t.equal(unknownField.statusCode, 400, 'unknown body field');
    t.match(unknownField.json(), { error: { code: 'SVC_ERR_HTTP_INVALID_BODY' } });
    const badId = await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/retry', headers: auth, payload: { ids: ['nope'] } });
    t.equal(badId.statusCode, 400, 'malformed id');
    t.match(badId.json(), { error: { code: 'SVC_ERR_HTTP_INVALID_BODY' } });
    const nothing = await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/retry', headers: auth, payload: {} });
    t.equal(nothing.statusCode, 400, 'neither ids nor all');
    t.match(nothing.json(), { error: { code: 'SVC_ERR_EVENT_DLQ_ID_INVALID' } });
    t.equal((await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/discard', headers: auth, payload: { ids: [a1] } })).statusCode, 400, 'discard without a reason');
    t.equal((await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/discard', headers: auth, payload: { ids: [a1], reason: '' } })).statusCode, 400, 'empty reason');

    // Unknown ids: 404, nothing changed (all or nothing).
    const ghost = randomUUID();
    const unknown = await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/retry', headers: auth, payload: { ids: [a1, ghost] } });
    t.equal(unknown.statusCode, 404);
    t.match(unknown.json(), { error: { code: 'SVC_ERR_EVENT_DLQ_UNKNOWN', message: `no event ${ghost} in the dead-letter queue` } });
    const notDlq = await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/discard', headers: auth, payload: { ids: [pending], reason: 'x' } });
    t.equal(notDlq.statusCode, 404, 'a pending event is not in the queue');
    t.match(await rowOf(db.pool, a1), { dlq_reason: 'exhausted_retries', attempts: 5 });
    t.match(await rowOf(db.pool, pending), { dlq_reason: null, processed: false });

    // OK paths.
    const retried = await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/retry', headers: auth, payload: { ids: [a1] } });
    t.equal(retried.statusCode, 200);
    t.same(retried.json(), { retried: [a1] });
    t.same(await rowOf(db.pool, a1), { dlq_reason: null, attempts: 0, processed: false, outcome: null });
    t.match(await rowOf(db.pool, a2), { dlq_reason: 'exhausted_retries', attempts: 5 }, 'not named: untouched');

    const discarded = await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/discard', headers: auth, payload: { all: true, org: 'acme', reason: 'hook retired' } });
    t.equal(discarded.statusCode, 200);
    t.same(discarded.json(), { discarded: [a2] }, '--all narrowed to the org; the retried event is no longer in the queue');
    t.match(await rowOf(db.pool, a2), { processed: true, outcome: /hook retired/ });
    t.match(await rowOf(db.pool, o1), { processed: false, dlq_reason: 'exhausted_retries' });

    const all = await app.inject({ method: 'POST', url: '/api/v1/admin/events/dlq/retry', headers: auth, payload: { all: true } });
    t.same(all.json(), { retried: [o1] });
    t.same((await app.inject({ method: 'GET', url: '/api/v1/admin/events/dlq', headers: auth })).json(), { count: 0, events: [] });
  });

  await t.test('without a bootstrap token, a bearer that is no minted token is refused', async (t) => {
    const app = createHttpServer({ logger: createLogger({ level: 'silent', name: 'dlq-routes-test' }), metrics: createMetrics({ defaultMetrics: false }) });
    t.teardown(() => app.close());
    await app.register(dlqRoutes({ pool: db.pool, auth: createAdminAuth({ pool: db.pool, bootstrapToken: () => undefined }) }));
    const response = await app.inject({ method: 'GET', url: '/api/v1/admin/events/dlq', headers: auth });
    t.equal(response.statusCode, 401);
    t.match(response.json(), { error: { code: 'SVC_ERR_ADMIN_TOKEN_INVALID', message: /SVC_BOOTSTRAP_ADMIN_TOKEN/ } });
  });

  await t.test('cluster nodes route: a running orchestrator lists itself alive and leader', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-admin-routes-'));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const orch = await startOrchestrator({
      env: {
        SVC_DATABASE_URL: db.url,
        SVC_SERVER_PORT: '0',
        SVC_SERVER_HOST: '127.0.0.1',
        SVC_DATA_DIR: dataDir,
        SVC_SECRET_KEY: 'c'.repeat(64),
        SVC_AGENT_AUTH: 'none',
        SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
        SVC_INSTANCE_ID: 'admin-routes-node',
      },
      cwd: dataDir,
      logger: testLogger,
      plugins: orchestratorPlugins,
      subsystems: ORCHESTRATOR_SUBSYSTEMS,
    });
    t.teardown(() => orch.stop());
    const url = `${orch.url}/api/v1/admin/cluster/nodes`;
    t.equal((await fetch(url)).status, 401, 'no bearer');
    t.equal((await fetch(url, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401, 'wrong bearer');

    // The node joins alive at start; it is marked leader once it has won the election and beat.
    type Nodes = { nodes: Array<{ nodeId: string; address: string; alive: boolean; leader: boolean; stoppedAt: string | null; pid: number }> };
    let status = 0;
    let body: Nodes = { nodes: [] };
    // Polled until it is; the bound is a hang guard only.
    for (const deadline = Date.now() + 300_000; Date.now() < deadline; ) {
      const response = await fetch(url, { headers: auth });
      status = response.status;
      body = (await response.json()) as Nodes;
      if (status !== 200 || body.nodes[0]?.leader === true) break;
      await sleep(250);
    }
    t.equal(status, 200);
    t.equal(body.nodes.length, 1);
    t.match(body.nodes[0], { nodeId: 'admin-routes-node', alive: true, leader: true, stoppedAt: null, pid: process.pid });
  });
});
