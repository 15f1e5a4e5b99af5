// GET / PATCH /trust-policy on a real listening server and real PostgreSQL: the admin bearer and
// its scopes (config.read reads, trust-policy.write writes), the org named by query or body, and
// a strict body: each value removed in 0.9 (per-member overrides, fork policy reject, boolean
// dashboard-write values, trust tiers) is a 400 naming the field and what replaced it, an unknown
// field or value is a 400, and a refused PATCH writes nothing and notifies nobody.
import t from 'tap';
import { createLogger } from '../../../../core/logging.ts';
import { createAdminAuth } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { createAdminToken } from '../../../../kernel/orchestrator/admin-auth/tokens.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { trustPolicyRoutes } from '../../../../kernel/orchestrator/trust-policy/routes.ts';
import { TRUST_POLICY_CHANNEL } from '../../../../kernel/orchestrator/trust-policy/store.ts';
import { createListener, migrate, sql } from '../../../../kernel/services/db/index.ts';
import { createHttpServer } from '../../../../kernel/services/http/index.ts';
import { createMetrics } from '../../../../kernel/services/metrics.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';
import { isBarrier, notifyBarrier } from '../../../fixtures/notify-barrier.ts';


const ADMIN = 'admin-token-trust-0123456789';

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const app = createHttpServer({ logger: createLogger({ level: 'silent', name: 'trust-policy-routes-test' }), metrics: createMetrics({ defaultMetrics: false }) });
  t.teardown(() => app.close());
  await app.register(trustPolicyRoutes({ pool: db.pool, nodeId: 'node-t', auth: createAdminAuth({ pool: db.pool, bootstrapToken: () => ADMIN }) }));
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const notified: string[] = [];
  const listener = await createListener({ url: db.url, logger: testLogger });
  t.teardown(() => listener.close());
  await listener.listen(TRUST_POLICY_CHANNEL, (payload) => notified.push(payload));

  const call = async (method: 'GET' | 'PATCH', query: string, body?: unknown, token: string | null = ADMIN): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${base}/trust-policy${query}`, {
      method,
      headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: await res.json() };
  };
  const rows = async () => db.pool.any(sql.unsafe`SELECT org_id, fork_policy, updated_at::text AS at FROM org_trust_policies ORDER BY org_id`);

  await t.test('default policy, bearer and scopes', async (t) => {
    const got = await call('GET', '?org=acme');
    t.equal(got.status, 200);
    t.same(got.body, { org: 'acme', forkPolicy: null, effective: { forkPolicy: 'run' }, updatedAt: null, updatedBy: null });
    t.equal((await call('GET', '?org=acme', undefined, null)).status, 401);
    t.equal((await call('PATCH', '?org=acme', { forkPolicy: 'ignore' }, null)).status, 401);
    const reader = await createAdminToken(db.pool, { name: 'config-reader', scopes: ['config.read'], unrestricted: false, createdBy: 'test' });
    t.equal((await call('GET', '?org=acme', undefined, reader.token)).status, 200, 'config.read reads');
    const refused = await call('PATCH', '?org=acme', { forkPolicy: 'ignore' }, reader.token);
    t.equal(refused.status, 403);
    t.equal(refused.body.error.code, 'SVC_ERR_ADMIN_SCOPE_MISSING');
    const writer = await createAdminToken(db.pool, { name: 'trust-writer', scopes: ['trust-policy.write'], unrestricted: false, createdBy: 'test' });
    const written = await call('PATCH', '', { org: 'writer-org', forkPolicy: 'ignore' }, writer.token);
    t.equal(written.status, 200);
    t.equal(written.body.updatedBy, 'admin token "trust-writer" via node node-t');
    t.equal((await call('GET', '', undefined)).status, 400, 'GET needs ?org=');
    t.equal((await call('GET', '?org=bad/org', undefined)).status, 400, 'org ids are one path segment');
  });

  await t.test('PATCH by query or body org; null clears; other orgs untouched', async (t) => {
    const byQuery = await call('PATCH', '?org=acme', { forkPolicy: 'ignore' });
    t.equal(byQuery.status, 200);
    t.match(byQuery.body, { org: 'acme', forkPolicy: 'ignore', effective: { forkPolicy: 'ignore' }, updatedBy: 'bootstrap admin token via node node-t' });
    t.match(byQuery.body.updatedAt, /^\d{4}-\d\d-\d\dT/);
    t.same((await call('GET', '?org=acme')).body.forkPolicy, 'ignore');
    await until('the change was notified', () => (notified.includes('acme') ? true : undefined));
    const byBody = await call('PATCH', '', { org: 'acme', forkPolicy: 'run' });
    t.same([byBody.status, byBody.body.forkPolicy], [200, 'run']);
    const same = await call('PATCH', '?org=acme', { org: 'acme', forkPolicy: null });
    t.same([same.status, same.body.forkPolicy, same.body.effective], [200, null, { forkPolicy: 'run' }], 'null clears; query and body agreeing is fine');
    t.same((await call('GET', '?org=other')).body.forkPolicy, null, 'another org keeps the default');
  });

  await t.test('refused bodies: 400 naming the removed field and its replacement, nothing written', async (t) => {
    await call('PATCH', '?org=acme', { forkPolicy: 'ignore' });
    // That PATCH's own NOTIFY may still be on its way: count from after a barrier, not from now.
    await notifyBarrier(db.pool, TRUST_POLICY_CHANNEL, (id) => notified.some((p) => isBarrier(p, id)));
    const before = await rows();
    const notes = notified.length;
    const removed: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ forkPolicy: 'reject' }, 'forkPolicy', /"forkPolicy": "reject" was removed in 0\.9: use "ignore"/],
      [{ memberOverrides: { alice: 'trusted' } }, 'memberOverrides', /"memberOverrides" was removed: per-member trust overrides were removed in 0\.9.*required reviewers/],
      [{ forkPolicy: 'run', perMemberOverrides: [] }, 'perMemberOverrides', /per-member trust overrides were removed/],
      [{ dashboardWrite: true }, 'dashboardWrite', /"dashboardWrite" was removed: boolean dashboard-write policy values were removed in 0\.9.*Platform/],
      [{ dashboardWrite: false }, 'dashboardWrite', /boolean dashboard-write policy values were removed/],
      [{ trustTier: 'collaborator' }, 'trustTier', /trust tiers were reduced to trusted and unknown/],
      [{ defaultTrustTier: 'member' }, 'defaultTrustTier', /trust tiers were reduced to trusted and unknown.*minTrust/],
      [{ tiers: ['trusted', 'contributor', 'unknown'] }, 'tiers', /trust tiers were reduced/],
    ];
    for (const [body, field, message] of removed) {
      const res = await call('PATCH', '?org=acme', body);
      t.equal(res.status, 400, JSON.stringify(body));
      t.equal(res.body.error.code, 'SVC_ERR_TRUST_POLICY_FIELD_REMOVED', JSON.stringify(body));
      t.match(res.body.error.message, message, JSON.stringify(body));
      t.match(res.body.error.message, new RegExp(`"${field}"`), 'names the field');
      t.match(res.body.error.message, /nothing was changed/);
    }
    const invalid: Array<[string, unknown, string, RegExp]> = [
      ['?org=acme', { forkPolicy: 'block' }, 'SVC_ERR_HTTP_INVALID_BODY', /forkPolicy/],
      ['?org=acme', { forkPolicy: true }, 'SVC_ERR_HTTP_INVALID_BODY', /forkPolicy/],
      ['?org=acme', { forkPolicy: 'run', requireApproval: true }, 'SVC_ERR_HTTP_INVALID_BODY', /requireApproval: unknown field/],
      ['?org=acme&extra=1', { forkPolicy: 'run' }, 'SVC_ERR_HTTP_INVALID_QUERY', /extra/],
      ['?org=acme', {}, 'SVC_ERR_TRUST_POLICY_EMPTY', /changes nothing/],
      ['', { forkPolicy: 'run' }, 'SVC_ERR_TRUST_POLICY_ORG', /name the org/],
      ['?org=other', { org: 'acme', forkPolicy: 'run' }, 'SVC_ERR_TRUST_POLICY_ORG', /names org "acme" and the query org "other"/],
      ['', { org: '../etc', forkPolicy: 'run' }, 'SVC_ERR_HTTP_INVALID_BODY', /org/],
    ];
    for (const [query, body, code, message] of invalid) {
      const res = await call('PATCH', query, body);
      t.equal(res.status, 400, `${query} ${JSON.stringify(body)}`);
      t.equal(res.body.error.code, code, `${query} ${JSON.stringify(body)}`);
      t.match(res.body.error.message, message, `${query} ${JSON.stringify(body)}`);
    }
    t.same(await rows(), before, 'no row written or touched');
    // A NOTIFY of our own after the refused PATCHes answered: once it arrives, any they sent has.
    await notifyBarrier(db.pool, TRUST_POLICY_CHANNEL, (id) => notified.some((p) => isBarrier(p, id)));
    t.same(notified.slice(notes).filter((p) => !isBarrier(p)), [], 'nothing notified');
  });
});
