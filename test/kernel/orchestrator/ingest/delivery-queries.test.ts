// Reading the event log on real PostgreSQL: records written straight into webhook_deliveries are
// listed newest first (received time), narrowed by org, source (id or routing key), status, time
// (ISO or a duration back from now) and repository, limited (default 50, at most 1000); bad filter
// values are refused with SVC_ERR_DELIVERY_FILTER_INVALID. One record comes back with every column,
// its steps in order and its payload fields. The admin routes: bearer first (401), strict query
// (400), unknown delivery 404, and the same answers as the queries.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createLogger } from '../../../../core/logging.ts';
import { createAdminAuth } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { getDelivery, listDeliveries, parseDeliveryFilter, parseTime } from '../../../../kernel/orchestrator/ingest/record/queries.ts';
import { deliveryRoutes } from '../../../../kernel/orchestrator/ingest/record/routes.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { createHttpServer } from '../../../../kernel/services/http/index.ts';
import { createMetrics } from '../../../../kernel/services/metrics.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';


const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };

interface Row {
  org: string;
  id: string;
  status: string;
  minutesAgo: number;
  sourceId?: string | null;
  routingKey?: string;
  providerKind?: string;
  eventType?: string | null;
  action?: string | null;
  eventName?: string | null;
  repository?: string | null;
  ref?: string | null;
  sha?: string | null;
  runIds?: string[];
  steps?: unknown;
  payload?: { key: string | null; bytes: number | null; omitted: boolean; reason: string | null };
  shedReason?: string | null;
  message?: string | null;
}

async function insertDelivery(pool: DatabasePool, r: Row): Promise<void> {
  const p = r.payload ?? { key: null, bytes: null, omitted: false, reason: null };
  await pool.query(sql.unsafe`
    INSERT INTO webhook_deliveries (org_id, delivery_id, source_id, routing_key, provider_kind, status, shed_reason, message,
      event_type, action, event_name, repository, ref, sha, sender, trust_tier, run_ids, steps,
      payload_key, payload_bytes, payload_omitted, payload_omitted_reason, node_id, received_at)
    VALUES (${r.org}, ${r.id}, ${r.sourceId ?? null}, ${r.routingKey ?? 'github:100'}, ${r.providerKind ?? 'github'}, ${r.status},
      ${r.shedReason ?? null}, ${r.message ?? null}, ${r.eventType ?? null}, ${r.action ?? null}, ${r.eventName ?? null},
      ${r.repository ?? null}, ${r.ref ?? null}, ${r.sha ?? null}, ${r.eventType ? 'octocat' : null}, ${r.eventType ? 'trusted' : null},
      ${sql.array(r.runIds ?? [], 'uuid')}, ${sql.jsonb((r.steps ?? []) as never)}, ${p.key}, ${p.bytes}, ${p.omitted}, ${p.reason},
      'node-a', now() - ${r.minutesAgo} * interval '1 minute')`);
}

const S1 = randomUUID();
const S2 = randomUUID();
const R1 = randomUUID();
const R2 = randomUUID();
const R3 = randomUUID();
const PUSH_STEPS = [
  { step: 'admission', outcome: 'ok' },
  { step: 'verify-signature', outcome: 'ok', detail: 'current secret' },
  { step: 'dedup', outcome: 'new' },
  { step: 'match', outcome: 'matched', detail: '2 workflows: ci, lint' },
  { step: 'dispatch', outcome: 'ok', detail: '2 runs' },
];

// Newest first: d6, d1, d2, d3, d5, d4, d7.
const ROWS: Row[] = [
  {
    org: 'acme', id: 'd-push-1', status: 'matched', minutesAgo: 1, sourceId: S1, eventType: 'push', eventName: 'push', repository: 'Acme/App',
    ref: 'refs/heads/main', sha: 'a'.repeat(40), runIds: [R1, R2], steps: PUSH_STEPS,
    payload: { key: 'event-log/acme/d-push-1.json.gz', bytes: 1234, omitted: false, reason: null },
  },
  {
    org: 'acme', id: 'd-pr-2', status: 'no_lock_file', minutesAgo: 10, sourceId: S1, eventType: 'pull_request', action: 'opened',
    eventName: 'pull_request', repository: 'acme/lib', ref: 'refs/pull/7/head', sha: 'b'.repeat(40),
    steps: [{ step: 'admission', outcome: 'ok' }, { step: 'lock-fetch', outcome: 'no_lock_file', detail: 'no .svc/lock.json at bbbbbbb' }],
    payload: { key: null, bytes: 30_000_000, omitted: true, reason: 'size_exceeded' },
  },
  { org: 'acme', id: 'd-shed-3', status: 'shed', minutesAgo: 90, shedReason: 'in-flight limit 256 reached', steps: [{ step: 'admission', outcome: 'shed_retry_later' }] },
  {
    org: 'other', id: 'dep/loy#4', status: 'matched', minutesAgo: 3 * 24 * 60, sourceId: S2, routingKey: 'generic:hooks', providerKind: 'generic',
    eventType: 'deploy', eventName: 'deploy', repository: 'other/svc', ref: 'refs/tags/v1.2.0', sha: 'c'.repeat(40), runIds: [R3],
    // An entry with a key the reader does not know, and one without an outcome: shown as found.
    steps: [{ step: 'admission', outcome: 'ok', elapsedMs: 3 }, { step: 'match' }],
  },
  { org: 'other', id: 'd-sig-5', status: 'rejected_signature', minutesAgo: 120, message: 'signature does not verify', steps: [{ step: 'verify-signature', outcome: 'rejected_signature' }] },
  { org: 'acme', id: 'd-proc-6', status: 'processing', minutesAgo: 0.5, sourceId: S1 },
  { org: 'other', id: 'd-push-1', status: 'no_match', minutesAgo: 10 * 24 * 60, sourceId: S2, routingKey: 'generic:hooks', providerKind: 'generic', eventType: 'ping' },
];

const ids = (list: ReadonlyArray<{ orgId: string; deliveryId: string }>) => list.map((d) => `${d.orgId}/${d.deliveryId}`);
const ALL = ['acme/d-proc-6', 'acme/d-push-1', 'acme/d-pr-2', 'acme/d-shed-3', 'other/d-sig-5', 'other/dep/loy#4', 'other/d-push-1'];

t.test('times: ISO timestamps and durations back from now; anything else refused', async (t) => {
  const now = new Date('2024-05-10T12:00:00.000Z');
  t.equal(parseTime('since', '1h', now).toISOString(), '2024-05-10T11:00:00.000Z');
  t.equal(parseTime('since', '30m', now).toISOString(), '2024-05-10T11:30:00.000Z');
  t.equal(parseTime('since', '7d', now).toISOString(), '2024-05-03T12:00:00.000Z');
  t.equal(parseTime('since', '90s', now).toISOString(), '2024-05-10T11:58:30.000Z');
  t.equal(parseTime('since', '2w', now).toISOString(), '2024-04-26T12:00:00.000Z');
  t.equal(parseTime('since', '2024-05-01T08:30:00Z', now).toISOString(), '2024-05-01T08:30:00.000Z');
  t.equal(parseTime('since', '2024-05-01T08:30:00+02:00', now).toISOString(), '2024-05-01T06:30:00.000Z');
  t.equal(parseTime('since', '2024-05-01T08:30', now).toISOString(), '2024-05-01T08:30:00.000Z', 'no zone: UTC');
  t.equal(parseTime('since', '2024-05-01 08:30:00.250', now).toISOString(), '2024-05-01T08:30:00.250Z');
  t.equal(parseTime('since', '2024-05-01', now).toISOString(), '2024-05-01T00:00:00.000Z');
  for (const bad of ['', 'yesterday', '1y', '-1h', '1.5h', 'h', '1 h', '2024-02-30', '2024-13-01', '2024-05-01T25:00:00Z', '2024-05-01T08:61Z', '1715342400', '99999999w']) {
    t.throws(() => parseTime('since', bad, now), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID', message: /^since ".*" is not valid: give an ISO timestamp .* or a duration back from now \(30m, 1h, 7d\)$/ }, `"${bad}" refused`);
  }
});

t.test('filters: checked before any query', async (t) => {
  t.same(parseDeliveryFilter({}), { limit: 50 }, 'default limit 50');
  t.same(parseDeliveryFilter({ sourceId: S1.toUpperCase() }).source, { id: S1 }, 'a source id (any case)');
  t.same(parseDeliveryFilter({ sourceId: 'github:100' }).source, { routingKey: 'github:100' }, 'else a routing key');
  t.throws(() => parseDeliveryFilter({ status: 'bogus' }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID', message: /^status "bogus" is not valid: use one of processing, matched, no_match, .*approval_command, retrying, failed$/ });
  t.throws(() => parseDeliveryFilter({ status: 'Matched' }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID' }, 'statuses are exact');
  for (const limit of [0, 1001, 1.5, -3, Number.NaN]) t.throws(() => parseDeliveryFilter({ limit }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID', message: /^limit ".*" is not valid: use a whole number from 1 to 1000$/ }, `limit ${limit}`);
  t.throws(() => parseDeliveryFilter({ since: '1h', until: '2h' }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID', message: /^since "1h" is not valid: it is after until/ });
  t.throws(() => parseDeliveryFilter({ until: 'soon' }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID', message: /^until "soon"/ });
  t.throws(() => parseDeliveryFilter({ repository: '  ' }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID' });
  t.throws(() => parseDeliveryFilter({ sourceId: '' }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID' });
});

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  for (const r of ROWS) await insertDelivery(db.pool, r);

  await t.test('list: newest first, every filter', async (t) => {
    const all = await listDeliveries(db.pool);
    t.same(ids(all), ALL, 'received time, newest first');
    t.same(Object.keys(all[1]!).sort(), [
      'action', 'archivedAt', 'attempts', 'createdAt', 'deliveryId', 'duplicates', 'eventName', 'eventType', 'generation', 'message', 'nodeId', 'orgId',
      'payloadBytes', 'payloadKey', 'payloadOmitted', 'payloadOmittedReason', 'providerKind', 'receivedAt', 'ref', 'repository', 'routingKey',
      'runIds', 'sender', 'sha', 'shedReason', 'sourceId', 'status', 'trustTier', 'updatedAt', 'workflowModified',
    ].sort(), 'every column but the steps');
    t.match(all[1], { orgId: 'acme', deliveryId: 'd-push-1', sourceId: S1, status: 'matched', runIds: [R1, R2], payloadKey: 'event-log/acme/d-push-1.json.gz', payloadBytes: 1234, payloadOmitted: false, receivedAt: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/ });

    t.same(ids(await listDeliveries(db.pool, { orgId: 'acme' })), ['acme/d-proc-6', 'acme/d-push-1', 'acme/d-pr-2', 'acme/d-shed-3'], 'org');
    t.same(ids(await listDeliveries(db.pool, { sourceId: S1 })), ['acme/d-proc-6', 'acme/d-push-1', 'acme/d-pr-2'], 'source id');
    t.same(ids(await listDeliveries(db.pool, { sourceId: 'generic:hooks' })), ['other/dep/loy#4', 'other/d-push-1'], 'routing key');
    t.same(ids(await listDeliveries(db.pool, { sourceId: 'github:100', status: 'rejected_signature' })), ['other/d-sig-5'], 'a rejected delivery has a routing key but no source');
    t.same(ids(await listDeliveries(db.pool, { status: 'matched' })), ['acme/d-push-1', 'other/dep/loy#4'], 'status');
    t.same(ids(await listDeliveries(db.pool, { status: 'processing' })), ['acme/d-proc-6'], 'processing is a status of the table');
    t.same(await listDeliveries(db.pool, { status: 'approval_command' }), [], 'a known status without records');
    t.same(ids(await listDeliveries(db.pool, { since: '1h' })), ['acme/d-proc-6', 'acme/d-push-1', 'acme/d-pr-2'], 'since a duration');
    t.same(ids(await listDeliveries(db.pool, { since: '7d' })), ALL.slice(0, 6), 'since 7d');
    t.same(ids(await listDeliveries(db.pool, { until: '1h' })), ['acme/d-shed-3', 'other/d-sig-5', 'other/dep/loy#4', 'other/d-push-1'], 'until');
    t.same(ids(await listDeliveries(db.pool, { since: '3h', until: '1h' })), ['acme/d-shed-3', 'other/d-sig-5'], 'a window');
    const fiveMinutesAgo = new Date(Date.now() - 5 * 60_000).toISOString();
    t.same(ids(await listDeliveries(db.pool, { since: fiveMinutesAgo })), ['acme/d-proc-6', 'acme/d-push-1'], 'since an ISO time');
    t.same(ids(await listDeliveries(db.pool, { since: fiveMinutesAgo.replace('Z', '') })), ['acme/d-proc-6', 'acme/d-push-1'], 'no zone is UTC');
    t.same(ids(await listDeliveries(db.pool, { until: '2000-01-01' })), [], 'nothing before 2000');
    t.same(ids(await listDeliveries(db.pool, { repository: 'acme/app' })), ['acme/d-push-1'], 'repository, any case');
    t.same(ids(await listDeliveries(db.pool, { orgId: 'acme', status: 'no_lock_file', since: '1h', repository: 'acme/lib' })), ['acme/d-pr-2'], 'filters combine');
    t.same(ids(await listDeliveries(db.pool, { orgId: 'acme', status: 'matched', since: '5m', repository: 'acme/lib' })), [], 'all must hold');
  });

  await t.test('list: limits', async (t) => {
    t.same(ids(await listDeliveries(db.pool, { limit: 2 })), ALL.slice(0, 2));
    t.same(ids(await listDeliveries(db.pool, { orgId: 'acme', limit: 1 })), ['acme/d-proc-6']);
    await db.pool.query(sql.unsafe`
      INSERT INTO webhook_deliveries (org_id, delivery_id, routing_key, provider_kind, status, received_at)
      SELECT 'bulk', 'b-' || lpad(n::text, 4, '0'), 'github:200', 'github', 'no_match', now() - n * interval '1 second'
      FROM generate_series(1, 1005) AS n`);
    const page = await listDeliveries(db.pool, { orgId: 'bulk' });
    t.equal(page.length, 50, 'default 50');
    t.same([page[0]!.deliveryId, page[49]!.deliveryId], ['b-0001', 'b-0050']);
    const most = await listDeliveries(db.pool, { orgId: 'bulk', limit: 1000 });
    t.equal(most.length, 1000, 'at most 1000');
    t.equal(most[999]!.deliveryId, 'b-1000');
    await t.rejects(listDeliveries(db.pool, { limit: 1001 }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID' });
    await t.rejects(listDeliveries(db.pool, { status: 'done' }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID' });
    await t.rejects(listDeliveries(db.pool, { since: 'last week' }), { code: 'SVC_ERR_DELIVERY_FILTER_INVALID' });
    await db.pool.query(sql.unsafe`DELETE FROM webhook_deliveries WHERE org_id = 'bulk'`);
  });

  await t.test('one record: every column, the steps in order, the payload fields', async (t) => {
    const d = await getDelivery(db.pool, 'acme', 'd-push-1');
    t.ok(d);
    t.match(d, {
      orgId: 'acme', deliveryId: 'd-push-1', sourceId: S1, routingKey: 'github:100', providerKind: 'github', status: 'matched', shedReason: null,
      message: null, eventType: 'push', action: null, eventName: 'push', repository: 'Acme/App', ref: 'refs/heads/main', sha: 'a'.repeat(40),
      sender: 'octocat', trustTier: 'trusted', workflowModified: false, runIds: [R1, R2], payloadKey: 'event-log/acme/d-push-1.json.gz',
      payloadBytes: 1234, payloadOmitted: false, payloadOmittedReason: null, duplicates: 0, generation: 0, attempts: 1, nodeId: 'node-a',
    });
    t.same(d!.steps, PUSH_STEPS, 'steps as an array, in order');
    t.match(await getDelivery(db.pool, 'acme', 'd-pr-2'), { payloadKey: null, payloadBytes: 30_000_000, payloadOmitted: true, payloadOmittedReason: 'size_exceeded', action: 'opened' });
    t.match(await getDelivery(db.pool, 'acme', 'd-shed-3'), { status: 'shed', shedReason: 'in-flight limit 256 reached', payloadBytes: null, steps: [{ step: 'admission', outcome: 'shed_retry_later' }] });
    t.same((await getDelivery(db.pool, 'other', 'dep/loy#4'))!.steps, [{ step: 'admission', outcome: 'ok' }, { step: 'match', outcome: '?' }], 'steps normalized to step, outcome, detail');
    t.match(await getDelivery(db.pool, 'other', 'd-push-1'), { orgId: 'other', status: 'no_match', steps: [] }, 'the same id in another org is another record');
    t.equal(await getDelivery(db.pool, 'acme', 'nope'), null);
    t.equal(await getDelivery(db.pool, 'nobody', 'd-push-1'), null);
  });

  await t.test('routes', async (t) => {
    const app = createHttpServer({ logger: createLogger({ level: 'silent', name: 'delivery-routes-test' }), metrics: createMetrics({ defaultMetrics: false }) });
    t.teardown(() => app.close());
    await app.register(deliveryRoutes({ pool: db.pool, auth: createAdminAuth({ pool: db.pool, bootstrapToken: () => ADMIN_TOKEN }) }));
    const get = (url: string, headers: Record<string, string> = auth) => app.inject({ method: 'GET', url, headers });

    for (const url of ['/api/v1/admin/deliveries', '/api/v1/admin/deliveries/acme/d-push-1', '/api/v1/admin/deliveries?colour=red', '/api/v1/admin/deliveries/acme/nope']) {
      const none = await get(url, {});
      t.equal(none.statusCode, 401, `${url} without a bearer`);
      t.equal(none.json().error.code, 'SVC_ERR_ADMIN_UNAUTHORIZED');
      t.equal((await get(url, { authorization: 'Bearer not-the-admin-token' })).statusCode, 401, `${url} with a wrong bearer`);
    }

    const listed = await get('/api/v1/admin/deliveries');
    t.equal(listed.statusCode, 200);
    const body = listed.json() as { deliveries: Array<{ orgId: string; deliveryId: string }> };
    t.same(Object.keys(body), ['deliveries']);
    t.same(ids(body.deliveries), ALL);
    t.same(body.deliveries, JSON.parse(JSON.stringify(await listDeliveries(db.pool))), 'the query, as JSON');
    const filtered = (await get('/api/v1/admin/deliveries?org=acme&source=' + S1 + '&status=no_lock_file&since=1h&until=1m&repository=ACME/lib&limit=5')).json() as typeof body;
    t.same(ids(filtered.deliveries), ['acme/d-pr-2'], 'every filter as a parameter');
    t.same(ids(((await get('/api/v1/admin/deliveries?source=generic:hooks&limit=1')).json() as typeof body).deliveries), ['other/dep/loy#4']);
    t.same(ids(((await get(`/api/v1/admin/deliveries?since=${encodeURIComponent(new Date(Date.now() - 5 * 60_000).toISOString())}`)).json() as typeof body).deliveries), ['acme/d-proc-6', 'acme/d-push-1']);

    for (const [query, code] of [
      ['colour=red', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['org=acme&payload=1', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['limit=0', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['limit=1001', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['limit=ten', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['org=', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['org=a&org=b', 'SVC_ERR_HTTP_INVALID_QUERY'],
      ['status=bogus', 'SVC_ERR_DELIVERY_FILTER_INVALID'],
      ['since=yesterday', 'SVC_ERR_DELIVERY_FILTER_INVALID'],
      ['until=2024-02-30', 'SVC_ERR_DELIVERY_FILTER_INVALID'],
      ['since=1h&until=2h', 'SVC_ERR_DELIVERY_FILTER_INVALID'],
    ] as const) {
      const response = await get(`/api/v1/admin/deliveries?${query}`);
      t.equal(response.statusCode, 400, query);
      t.equal(response.json().error.code, code, query);
    }
    t.match((await get('/api/v1/admin/deliveries?status=bogus')).json(), { error: { message: /^status "bogus" is not valid: use one of processing, matched/ } });

    const shown = await get('/api/v1/admin/deliveries/acme/d-push-1');
    t.equal(shown.statusCode, 200);
    t.same(shown.json(), JSON.parse(JSON.stringify(await getDelivery(db.pool, 'acme', 'd-push-1'))));
    t.same(shown.json().steps, PUSH_STEPS);
    const encoded = await get(`/api/v1/admin/deliveries/other/${encodeURIComponent('dep/loy#4')}`);
    t.equal(encoded.statusCode, 200, 'an id with / and # in the path, encoded');
    t.match(encoded.json(), { orgId: 'other', deliveryId: 'dep/loy#4', runIds: [R3] });
    const missing = await get('/api/v1/admin/deliveries/acme/nope');
    t.equal(missing.statusCode, 404);
    t.same(missing.json(), { error: { code: 'SVC_ERR_DELIVERY_NOT_FOUND', message: 'no delivery nope in org acme' } });
    t.equal((await get('/api/v1/admin/deliveries/nobody/d-push-1')).statusCode, 404, 'ids are per org');
    const query = await get('/api/v1/admin/deliveries/acme/d-push-1?x=1');
    t.equal(query.statusCode, 400, 'the record route takes no query');
    t.equal(query.json().error.code, 'SVC_ERR_HTTP_INVALID_QUERY');
  });

  await t.test('without a bootstrap token, a bearer that is no minted token is refused', async (t) => {
    const app = createHttpServer({ logger: createLogger({ level: 'silent', name: 'delivery-routes-test' }), metrics: createMetrics({ defaultMetrics: false }) });
    t.teardown(() => app.close());
    await app.register(deliveryRoutes({ pool: db.pool, auth: createAdminAuth({ pool: db.pool, bootstrapToken: () => undefined }) }));
    const response = await app.inject({ method: 'GET', url: '/api/v1/admin/deliveries', headers: auth });
    t.equal(response.statusCode, 401);
    t.match(response.json(), { error: { code: 'SVC_ERR_ADMIN_TOKEN_INVALID', message: /SVC_BOOTSTRAP_ADMIN_TOKEN/ } });
  });
});
