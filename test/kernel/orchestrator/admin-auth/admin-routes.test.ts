// Every operator admin route of a whole in-process orchestrator (real fastify listening, real
// PostgreSQL) behind the one admin authentication: per route, a good request with a token that
// holds exactly the route's scope, 401 without a token and with an unknown one, 403 with a token
// lacking the scope (the answer names the scope), and 400 for an unknown query or body field
// where the route takes one. Also: signing keys need an unrestricted token (a restricted token
// with secret.read is refused, an unrestricted one is not), revoked and expired tokens are
// refused, use is recorded, and the public routes (plan catalogue, OpenAPI document) need no
// token; the OpenAPI document passes a validator and lists every admin route with its scope.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import t from 'tap';
import type { RouteOptions } from 'fastify';
import { Value } from 'typebox/value';
import { adminScopeOf, createAdminToken, type AdminScope } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator, type Orchestrator } from '../../../../kernel/orchestrator/app.ts';
import type { Subsystem } from '../../../../kernel/orchestrator/context.ts';
import { clusterServiceRef } from '../../../../kernel/orchestrator/service-refs.ts';
import { MAX_EVENT_PAYLOAD_BYTES } from '../../../../kernel/orchestrator/events/emit.ts';
import { TOKEN_LIFETIME_SECONDS } from '../../../../kernel/orchestrator/identity/mint.ts';
import { RERUN_COOLDOWN_MS } from '../../../../kernel/orchestrator/runs/api/rerun.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../../../kernel/orchestrator/subsystems.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { MAX_WEBHOOK_BYTES } from '../../../../kernel/webhook/parse-request.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { PlanCatalogue } from '../../../../schemas/http/billing.ts';
import { eachDatabase, testLogger, type TestDb } from '../../../fixtures/db.ts';


const BOOTSTRAP = 'bootstrap-admin-token-0123456789';

interface AdminRoute {
  method: 'GET' | 'POST';
  path: string;
  scope: AdminScope;
  /** The status a well-formed request gets past authentication (404 for a well-formed unknown id). */
  ok: number;
  body?: Record<string, unknown>;
  /** The same request with one unknown field (query, or body for POST); absent when the route takes neither. */
  strict?: { path: string; body?: Record<string, unknown> };
}

function adminRoutes(runId: string): AdminRoute[] {
  const ghost = randomUUID();
  return [
    { method: 'GET', path: '/api/v1/admin/signing-keys', scope: 'secret.read', ok: 200 },
    { method: 'GET', path: '/api/v1/admin/runs', scope: 'runs.read', ok: 200, strict: { path: '/api/v1/admin/runs?colour=red' } },
    { method: 'GET', path: `/api/v1/admin/runs/${runId}`, scope: 'runs.read', ok: 200 },
    { method: 'GET', path: '/api/v1/admin/events/dlq', scope: 'events.read', ok: 200, strict: { path: '/api/v1/admin/events/dlq?colour=red' } },
    { method: 'POST', path: '/api/v1/admin/events/dlq/retry', scope: 'events.write', ok: 200, body: { all: true }, strict: { path: '/api/v1/admin/events/dlq/retry', body: { all: true, force: true } } },
    {
      method: 'POST',
      path: '/api/v1/admin/events/dlq/discard',
      scope: 'events.write',
      ok: 200,
      body: { all: true, reason: 'test' },
      strict: { path: '/api/v1/admin/events/dlq/discard', body: { all: true, reason: 'test', force: true } },
    },
    { method: 'GET', path: '/api/v1/admin/deliveries', scope: 'deliveries.read', ok: 200, strict: { path: '/api/v1/admin/deliveries?colour=red' } },
    { method: 'GET', path: '/api/v1/admin/deliveries/acme/d-1', scope: 'deliveries.read', ok: 404, strict: { path: '/api/v1/admin/deliveries/acme/d-1?colour=red' } },
    { method: 'GET', path: '/api/v1/admin/forge-status', scope: 'forge-status.read', ok: 200, strict: { path: '/api/v1/admin/forge-status?colour=red' } },
    { method: 'GET', path: `/api/v1/admin/forge-status/${ghost}`, scope: 'forge-status.read', ok: 404 },
    { method: 'GET', path: '/api/v1/admin/cluster/nodes', scope: 'cluster.read', ok: 200 },
  ];
}

async function boot(t: Parameters<Parameters<typeof eachDatabase>[1]>[0], db: TestDb, routes: RouteOptions[]): Promise<Orchestrator> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-admin-auth-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  // Records every route as it is added, to check the OpenAPI document against the real set.
  const recorder: Subsystem = {
    id: 'route-recorder',
    async start(ctx) {
      ctx.http.addHook('onRoute', (route) => void routes.push(route));
    },
  };
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: db.url,
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: 'c'.repeat(64),
      SVC_AGENT_AUTH: 'none',
      SVC_BOOTSTRAP_ADMIN_TOKEN: BOOTSTRAP,
      SVC_INSTANCE_ID: 'admin-auth-node',
    },
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    subsystems: [recorder, ...ORCHESTRATOR_SUBSYSTEMS],
  });
  t.teardown(() => orch.stop());
  return orch;
}

async function insertRun(db: TestDb): Promise<string> {
  const id = randomUUID();
  await db.pool.query(sql.unsafe`
    INSERT INTO runs (id, org_id, provider, repository, workflow_repository, workflow, workflow_sha, sha, event_name, subject_kind, status, content_hash, lock_entry, event)
    VALUES (${id}, 'acme', 'github', 'acme/app', 'acme/app', 'ci', 's', 's', 'push', 'ref', 'queued', 'h', '{}', '{}')`);
  return id;
}

type Call = (method: string, path: string, options?: { token?: string; body?: unknown; authorization?: string }) => Promise<{ status: number; body: any }>;

function caller(orch: Orchestrator): Call {
  return async (method, path, options = {}) => {
    const headers: Record<string, string> = {};
    if (options.authorization !== undefined) headers['authorization'] = options.authorization;
    else if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${orch.url}${path}`, { method, headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }) });
    const text = await response.text();
    return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
  };
}

await eachDatabase(t, async (t, db) => {
  const routes: RouteOptions[] = [];
  const orch = await boot(t, db, routes);
  const call = caller(orch);
  const runId = await insertRun(db);
  const mint = async (name: string, scopes: AdminScope[], extra: { unrestricted?: boolean; ttlMs?: number } = {}) =>
    (await createAdminToken(db.pool, { name, scopes, unrestricted: extra.unrestricted ?? false, createdBy: 'test', ...(extra.ttlMs === undefined ? {} : { ttlMs: extra.ttlMs }) })).token;
  // A scope no route below needs: every route refuses it with 403.
  const outsider = await mint('outsider', ['sources.write']);

  for (const route of adminRoutes(runId)) {
    await t.test(`${route.method} ${route.path.replace(/[0-9a-f-]{36}/, ':id')}`, async (t) => {
      const body = route.body;
      const holder = await mint(`holder-${route.method}-${route.path}`, [route.scope]);
      const good = await call(route.method, route.path, { token: route.scope === 'secret.read' ? BOOTSTRAP : holder, body });
      t.equal(good.status, route.ok, `good request: ${JSON.stringify(good.body).slice(0, 300)}`);
      if (route.scope !== 'secret.read') t.equal((await call(route.method, route.path, { token: BOOTSTRAP, body })).status, route.ok, 'the bootstrap token holds every scope');

      const none = await call(route.method, route.path, { body });
      t.equal(none.status, 401, 'no token');
      t.match(none.body, { error: { code: 'SVC_ERR_ADMIN_UNAUTHORIZED', message: new RegExp(`scope ${route.scope.replace('.', '\\.')}`) } }, 'names the scope');
      const unknown = await call(route.method, route.path, { token: 'svcadm_not-a-token', body });
      t.equal(unknown.status, 401, 'unknown token');
      t.equal(unknown.body.error.code, 'SVC_ERR_ADMIN_TOKEN_INVALID');
      const basic = await call(route.method, route.path, { authorization: 'Basic dXNlcjpwYXNz', body });
      t.match(basic, { status: 401, body: { error: { code: 'SVC_ERR_ADMIN_TOKEN_MISSING' } } }, 'not a bearer');

      const lacking = await call(route.method, route.path, { token: outsider, body });
      t.equal(lacking.status, 403, 'a token without the scope');
      t.equal(lacking.body.error.code, 'SVC_ERR_ADMIN_SCOPE_MISSING');
      t.match(lacking.body.error.message, `lacks scope ${route.scope}`);

      if (route.strict) {
        const strict = await call(route.method, route.strict.path, { token: holder, body: route.strict.body });
        t.equal(strict.status, 400, 'an unknown field is refused');
        t.match(strict.body, { error: { code: /^SVC_ERR_HTTP_INVALID_(QUERY|BODY)$/ } });
        t.equal((await call(route.method, route.strict.path, { token: outsider, body: route.strict.body })).status, 403, 'the scope is checked before the input');
        t.equal((await call(route.method, route.strict.path, { body: route.strict.body })).status, 401, 'the token is checked before the input');
      }
    });
  }

  await t.test('signing keys: a scope-restricted token cannot read them even with secret.read; an unrestricted one can', async (t) => {
    const restricted = await mint('keys-restricted', ['secret.read', 'runs.read']);
    const refused = await call('GET', '/api/v1/admin/signing-keys', { token: restricted });
    t.equal(refused.status, 403);
    t.equal(refused.body.error.code, 'SVC_ERR_ADMIN_TOKEN_RESTRICTED');
    t.match(refused.body.error.message, /without scope restrictions that has secret\.read/);
    const unrestricted = await mint('keys-unrestricted', [], { unrestricted: true });
    const allowed = await call('GET', '/api/v1/admin/signing-keys', { token: unrestricted });
    t.equal(allowed.status, 200);
    t.same(Object.keys(allowed.body), ['keys']);
    t.equal((await call('GET', '/api/v1/admin/runs', { token: unrestricted })).status, 200, 'unrestricted holds every scope');
    t.equal((await call('GET', '/api/v1/admin/runs', { token: restricted })).status, 200, 'the restricted token works where its scopes reach');
  });

  await t.test('revoked and expired tokens are refused; use is recorded', async (t) => {
    const token = await mint('short-lived', ['runs.read']);
    t.equal((await call('GET', '/api/v1/admin/runs', { token })).status, 200);
    // The use is recorded without holding up the answer: poll for it, with a bound far from any real delay.
    let lastUsed: unknown = null;
    for (const deadline = Date.now() + 60_000; lastUsed === null && Date.now() < deadline; ) {
      lastUsed = await db.pool.oneFirst(sql.unsafe`SELECT last_used_at FROM admin_tokens WHERE name = 'short-lived'`);
      if (lastUsed === null) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.not(lastUsed, null, 'last_used_at set');
    await db.pool.query(sql.unsafe`UPDATE admin_tokens SET revoked_at = now() WHERE name = 'short-lived'`);
    const revoked = await call('GET', '/api/v1/admin/runs', { token });
    t.equal(revoked.status, 401);
    t.equal(revoked.body.error.code, 'SVC_ERR_ADMIN_TOKEN_REVOKED');

    const expiring = await mint('expiring', ['runs.read'], { ttlMs: 3_600_000 });
    t.equal((await call('GET', '/api/v1/admin/runs', { token: expiring })).status, 200, 'valid before its expiry');
    await db.pool.query(sql.unsafe`UPDATE admin_tokens SET expires_at = now() - interval '1 second' WHERE name = 'expiring'`);
    const expired = await call('GET', '/api/v1/admin/runs', { token: expiring });
    t.equal(expired.status, 401);
    t.equal(expired.body.error.code, 'SVC_ERR_ADMIN_TOKEN_EXPIRED');
    const stored = await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM admin_tokens WHERE token_hash = ${token}`);
    t.equal(stored, 0, 'the token itself is not stored, only its hash');
  });

  await t.test('GET /api/v1/billing/plans: public, the self-hosted tier with the limits the code enforces', async (t) => {
    const plans = await call('GET', '/api/v1/billing/plans');
    t.equal(plans.status, 200);
    t.ok(Value.Check(PlanCatalogue, plans.body), 'matches its schema');
    t.equal(plans.body.catalogue, 'self-hosted');
    const [plan] = plans.body.plans as PlanCatalogue['plans'];
    t.match(plan, { id: 'self-hosted', price: { amount: 0 } });
    const config = orch.ctx.config;
    t.same(plan?.limits, {
      webhookBodyBytes: MAX_WEBHOOK_BYTES,
      eventPayloadBytes: MAX_EVENT_PAYLOAD_BYTES,
      eventLogPayloadBytes: config.eventLog.maxPayloadBytes,
      eventLogWarmRetentionDays: config.eventLog.warmRetentionDays,
      cacheTtlDays: config.cache.ttlDays,
      eventDispatchAttempts: orch.get(clusterServiceRef).settings.current().maxDispatchAttempts,
      rerunCooldownSeconds: RERUN_COOLDOWN_MS / 1000,
      identityTokenLifetimeSeconds: TOKEN_LIFETIME_SECONDS,
    });
    t.equal(plan?.limits.webhookBodyBytes, 25 * 1024 * 1024, 'spec Limits: 25 MiB webhook body');
  });

  await t.test('GET /api/v1/openapi.json: public, valid OpenAPI 3, every admin route with its scope', async (t) => {
    const served = await call('GET', '/api/v1/openapi.json');
    t.equal(served.status, 200);
    const doc = served.body as { openapi: string; paths: Record<string, Record<string, { security?: Array<Record<string, string[]>>; 'x-svc-scope'?: string; 'x-svc-unrestricted'?: boolean }>> };
    t.match(doc.openapi, /^3\./);
    await t.resolves(SwaggerParser.validate(structuredClone(doc) as never), 'passes @apidevtools/swagger-parser validation');

    const guarded = routes.flatMap((route) => {
      const hooks = Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
      const guard = hooks.map((hook) => adminScopeOf(hook)).find((g) => g !== undefined);
      const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((m) => m !== 'HEAD');
      return methods.map((method) => ({ method: method.toLowerCase(), url: route.url, guard }));
    });
    const admin = guarded.filter((r) => r.url.startsWith('/api/v1/admin/') || r.url.startsWith('/admin/') || r.guard !== undefined);
    t.ok(admin.length >= adminRoutes(runId).length, `${admin.length} admin routes registered`);
    for (const route of admin) {
      t.ok(route.guard, `${route.method} ${route.url} is guarded by requireScope`);
      const op = doc.paths[route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')]?.[route.method];
      t.ok(op, `${route.method} ${route.url} is in the document`);
      if (!op || !route.guard) continue;
      t.same(op.security, route.guard.scopes.map((scope) => ({ adminToken: [scope] })), `${route.url}: bearer security naming its scope`);
      t.equal(op['x-svc-scope'], route.guard.scope);
    }
    for (const route of adminRoutes(runId)) {
      const path = route.path.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/, '{id}').replace('/deliveries/acme/d-1', '/deliveries/{orgId}/{deliveryId}');
      const key = path.replace('/runs/{id}', '/runs/{runId}');
      t.equal(doc.paths[key]?.[route.method.toLowerCase()]?.['x-svc-scope'], route.scope, `${route.method} ${key} listed with scope ${route.scope}`);
    }
    t.equal(doc.paths['/api/v1/admin/signing-keys']?.['get']?.['x-svc-unrestricted'], true, 'signing keys: unrestricted noted');
    t.notOk(doc.paths['/api/v1/billing/plans']?.['get']?.security, 'the plan catalogue is public');
  });
});
