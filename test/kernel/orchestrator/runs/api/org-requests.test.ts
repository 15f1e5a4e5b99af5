// Orchestrator-side answers to the relayed org requests of the developer CLI, on real PostgreSQL:
// `org.secret.set.request` writes only test contexts of the org and never logs the value (the
// log lines are captured), `org.secrets.list.request` shows names and no values, a missing master
// key is an internal error without details, and `org.notifications.request` is scoped to the org.
import { randomBytes, randomUUID } from 'node:crypto';
import type { MasterKeys } from '../../../../../kernel/services/crypto/master-keys.ts';
import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../../kernel/orchestrator/app.ts';
import { answerOrgRequest, contextVisibleTo } from '../../../../../kernel/orchestrator/runs/api/org-requests.ts';
import { createContext, openContextSecrets } from '../../../../../kernel/orchestrator/secrets/index.ts';
import { migrate, sql } from '../../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../../fixtures/db.ts';
import { insertRun } from '../../../../fixtures/runs.ts';

t.test('contexts an org sees: bound to it, or to no org', async (t) => {
  t.ok(contextVisibleTo({ orgs: [] }, 'acme'));
  t.ok(contextVisibleTo({ orgs: ['acme', 'b'] }, 'acme'));
  t.notOk(contextVisibleTo({ orgs: ['umbrella'] }, 'acme'));
});

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  let logged = '';
  const logger = pino({ level: 'trace' }, new Writable({ write: (chunk, _enc, done) => ((logged += chunk.toString()), done()) }));
  const key = randomBytes(32);
  const deps: { pool: typeof db.pool; logger: typeof logger; masterKeys: MasterKeys } = { pool: db.pool, logger, masterKeys: { current: key, all: [{ name: 'current', key }] } };
  await createContext(db.pool, { name: 'test', allowLocalExecution: true });
  await createContext(db.pool, { name: 'prod', orgs: ['acme'] });
  await createContext(db.pool, { name: 'theirs', allowLocalExecution: true, orgs: ['umbrella'] });
  const set = (context: string, name: string, value: string, d = deps) =>
    answerOrgRequest(d, { type: 'org.secret.set.request', requestId: randomUUID(), orgId: 'acme', actor: 'alice', context, key: name, value });

  await t.test('set: test context sealed, others refused, the value never logged', async (t) => {
    const value = `value-${randomBytes(10).toString('hex')}`;
    t.match(await set('test', 'TOKEN', value), { type: 'org.secret.set.response', result: { context: 'test', key: 'TOKEN', replaced: false } });
    t.same(await openContextSecrets(db.pool, [{ name: 'current', key }], ['test']), { test: { TOKEN: value } });
    t.match(await set('prod', 'TOKEN', value), { error: { code: 'SVC_ERR_SECRETS_CONTEXT_NOT_TEST', status: 403 } });
    t.match(await set('theirs', 'TOKEN', value), { error: { code: 'SVC_ERR_SECRETS_CONTEXT_NOT_TEST', status: 403, message: /not a context of org acme/ } });
    t.match(await set('nope', 'TOKEN', value), { error: { code: 'SVC_ERR_SECRETS_CONTEXT_NOT_FOUND', status: 404 } });
    t.match(await set('test', '9x', value), { error: { code: 'SVC_ERR_SECRETS_KEY', status: 400 } });
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`select count(*) from secret_values where context = 'prod'`)), 0, 'prod unchanged');
    const noKey = await set('test', 'OTHER', value, { ...deps, masterKeys: { all: [] } });
    t.match(noKey, { error: { code: 'SVC_ERR_INTERNAL', status: 500 } });
    t.match(logged, /test-context secret set through the Platform/);
    t.notMatch(logged, value, 'the value is in no log line');
  });

  await t.test('list: names, never values', async (t) => {
    const answer = await answerOrgRequest(deps, { type: 'org.secrets.list.request', requestId: randomUUID(), orgId: 'acme' });
    t.same(answer.type === 'org.secrets.list.response' && answer.contexts?.map((c) => c.name), ['prod', 'test']);
    t.notMatch(JSON.stringify(answer), /value-/);
  });

  await t.test('notifications: holds and deliveries of the org only', async (t) => {
    const mine = await insertRun(db.pool, { orgId: 'acme', status: 'held', jobs: [{ name: 'a' }] });
    const theirs = await insertRun(db.pool, { orgId: 'umbrella', status: 'held', jobs: [{ name: 'a' }] });
    for (const [org, run] of [['acme', mine], ['umbrella', theirs]] as const) {
      await db.pool.query(sql.unsafe`insert into approval_holds (id, org_id, run_id, level, clauses) values (${randomUUID()}, ${org}, ${run.runId}, 'workflow', ${sql.jsonb([])})`);
      await db.pool.query(sql.unsafe`insert into forge_status_deliveries (id, org_id, run_id, feed_seq, changed_at, target, source_id, provider_kind, run_status, state, status)
        values (${randomUUID()}, ${org}, ${run.runId}, 1, now(), 'provider', ${randomUUID()}, 'github', 'held', 'queued', 'delivered')`);
    }
    const answer = await answerOrgRequest(deps, { type: 'org.notifications.request', requestId: randomUUID(), orgId: 'acme', limit: 10 });
    if (answer.type !== 'org.notifications.response' || answer.notifications === undefined) throw new Error('no notifications');
    t.same(answer.notifications.approvals.map((a) => a.runId), [mine.runId]);
    t.match(answer.notifications.approvals[0], { level: 'workflow', job: null, workflow: 'ci', repository: 'acme/widgets' });
    t.same(answer.notifications.deliveries.map((d) => d.runId), [mine.runId]);
  });
});
