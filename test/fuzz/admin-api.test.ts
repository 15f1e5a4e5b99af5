// Fuzzing the orchestrator's admin API over real HTTP (fast-check): a real startOrchestrator on a
// real database with a bootstrap admin token, a scoped minted token and a revoked one. Generated
// requests go to every admin route: bodies for the writes (config versions, rollback, reload,
// dead-letter retry and discard, cluster settings, trust policy) — valid, with fields of the
// wrong type, missing or added, nested junk, huge and unicode strings, broken JSON, other content
// types — and query strings and path parameters for the reads; most with the bootstrap token,
// some with none, a wrong one, a malformed header, a token lacking the scope, a revoked one.
// Every answer is a 4xx whose JSON body names a catalogued error code, or a 2xx the route allows;
// never a 5xx. The tables the routes write are read before and after each request: a refusal or
// a read changes nothing, and an accepted write changed exactly what it asked for. Afterwards
// the orchestrator still serves. Cases: SVC_FUZZ_RUNS (default 600 requests per database).
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import t from 'tap';
import { errorCodeEntry } from '../../core/error-codes.ts';
import { createAdminToken, revokeAdminToken } from '../../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator } from '../../kernel/orchestrator/app.ts';
import { readConfigVersion } from '../../kernel/orchestrator/config/versions.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../kernel/orchestrator/subsystems.ts';
import { sql, type DatabasePool } from '../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../plugins/builtin.ts';
import { eachDatabase, testLogger } from '../fixtures/db.ts';
import { describeTally, fuzzDatabase, fuzzRuns, fuzzTimeout, headerValue, progress, serverEnv, tally } from './arbitraries.ts';
import { askedJson, bodyCase, fill, hostileString, queryString, segment, type BodyCase } from './bodies.ts';

t.setTimeout(fuzzTimeout());

const REQUESTS = fuzzRuns(600);
const BOOTSTRAP = `fuzz-bootstrap-${randomBytes(12).toString('hex')}`;
const ORGS = ['acme', 'zed'];
const NAMES = ['build.done', 'deploy.requested'];

type Auth = 'bootstrap' | 'none' | 'wrong' | 'malformed' | 'scoped' | 'revoked';
type Kind = 'read' | 'config.put' | 'config.rollback' | 'config.reload' | 'dlq.retry' | 'dlq.discard' | 'cluster.patch' | 'trust.patch';

interface AdminRequest {
  method: string;
  path: string;
  kind: Kind;
  /** The scoped token holds runs.read only: these routes admit it. */
  runsRead?: boolean;
  body?: BodyCase;
  auth: Auth;
  header?: string;
}

const int = (min: number, max: number) => fc.integer({ min, max }).map(String);
const orgId = fc.oneof(fc.constantFrom(...ORGS), fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/));
const id = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('@0', '@1', '@2') }, { weight: 1, arbitrary: fc.uuid() }, { weight: 1, arbitrary: hostileString });
const description = fc.string({ minLength: 1, maxLength: 60 });
const filter = { org: fc.constantFrom(...ORGS), name: fc.constantFrom(...NAMES) };

/** Valid bodies per write route (schemas/http/config.ts, admin.ts, settings.ts). */
const VALID = {
  configPut: fc.record(
    { config: fc.record({ queue: fc.record({ maxDepth: fc.integer({ min: 1, max: 100_000 }), timeoutMs: fc.integer({ min: 1, max: 86_400_000 }) }, { requiredKeys: [] }), agentTokenTtlMs: fc.integer({ min: 1, max: 86_400_000 }) }, { requiredKeys: [] }), description },
    { requiredKeys: ['config'] },
  ),
  rollback: fc.record({ version: fc.integer({ min: 1, max: 6 }), description }, { requiredKeys: ['version'] }),
  retry: fc.record({ ids: fc.array(id, { maxLength: 3 }), all: fc.boolean(), ...filter }, { requiredKeys: [] }),
  discard: fc.record({ ids: fc.array(id, { maxLength: 3 }), all: fc.boolean(), ...filter, reason: description }, { requiredKeys: ['reason'] }),
  cluster: fc.record({ maxDispatchAttempts: fc.integer({ min: 1, max: 100 }), sealedSecretsRetryBackoffMs: fc.integer({ min: 1_000, max: 3_600_000 }) }, { requiredKeys: [] }),
  trust: fc.record({ org: orgId, forkPolicy: fc.constantFrom('run', 'ignore', null) }, { requiredKeys: [] }),
};

const write = (method: string, path: fc.Arbitrary<string>, kind: Kind, valid: fc.Arbitrary<Record<string, unknown>>) =>
  fc.record({ method: fc.constant(method), path, kind: fc.constant(kind), body: bodyCase(valid) });
const read = (path: fc.Arbitrary<string>, runsRead = false) => fc.record({ method: fc.constant('GET'), path, kind: fc.constant<Kind>('read'), runsRead: fc.constant(runsRead) });
const at = (prefix: string, query: fc.Arbitrary<string>) => query.map((q) => `${prefix}${q}`);

const route = fc.oneof(
  { weight: 4, arbitrary: write('PUT', fc.constant('/admin/config'), 'config.put', VALID.configPut) },
  { weight: 2, arbitrary: write('POST', fc.constant('/admin/config/rollback'), 'config.rollback', VALID.rollback) },
  { weight: 1, arbitrary: write('POST', at('/admin/config/reload', queryString({ source: fc.constantFrom('http', 'cli') })), 'config.reload', fc.constant({})) },
  { weight: 3, arbitrary: write('POST', fc.constant('/api/v1/admin/events/dlq/retry'), 'dlq.retry', VALID.retry) },
  { weight: 3, arbitrary: write('POST', fc.constant('/api/v1/admin/events/dlq/discard'), 'dlq.discard', VALID.discard) },
  { weight: 3, arbitrary: write('PATCH', fc.constant('/api/v1/admin/cluster-settings'), 'cluster.patch', VALID.cluster) },
  { weight: 3, arbitrary: write('PATCH', at('/trust-policy', queryString({ org: orgId })), 'trust.patch', VALID.trust) },
  {
    weight: 6,
    arbitrary: fc.oneof(
      read(at('/api/v1/admin/runs', queryString({ limit: int(0, 600), org: orgId })), true),
      read(segment(fc.uuid()).map((s) => `/api/v1/admin/runs/${s}`), true),
      read(at('/api/v1/admin/logs/search', queryString({ org: orgId, q: fc.oneof(fc.constantFrom('', 'ab', 'error', 'x'.repeat(300)), hostileString), since: fc.constantFrom('7d', '2026-01-01', 'yesterday'), status: fc.constantFrom('failed', 'x'), limit: int(0, 600), context: int(0, 12) })), true),
      read(at('/api/v1/admin/events/dlq', queryString({ org: orgId, name: filter.name, limit: int(0, 1_001) }))),
      read(at('/api/v1/admin/deliveries', queryString({ org: orgId, source: fc.uuid(), status: fc.constantFrom('matched', 'shed', 'x'), since: fc.constantFrom('30m', '1h', '7d', '2026-01-01T00:00:00Z', '-1h', '99999999d'), until: fc.constantFrom('1h', '2030-01-01'), repository: fc.constantFrom('o/r', ''), limit: int(0, 1_001), archived: fc.constantFrom('true', 'false', '1') }))),
      read(fc.tuple(segment(orgId), segment(fc.uuid())).map(([o, d]) => `/api/v1/admin/deliveries/${o}/${d}`)),
      read(at('/api/v1/admin/forge-status', queryString({ run: fc.uuid(), org: orgId, status: fc.constantFrom('pending', 'x'), target: fc.constantFrom('github', 'x'), limit: int(0, 1_001) }))),
      read(segment(fc.uuid()).map((s) => `/api/v1/admin/forge-status/${s}`)),
      read(fc.constantFrom('/admin/config', '/api/v1/admin/cluster/nodes', '/api/v1/admin/cluster-settings', '/api/v1/admin/debug', '/api/v1/admin/signing-keys')),
      read(at('/admin/config/versions', queryString({ limit: int(0, 1_001) }))),
      read(segment(int(-1, 8)).map((s) => `/admin/config/versions/${s}`)),
      read(at('/admin/config/export', queryString({ redacted: fc.constant('true') }))),
      read(at('/trust-policy', queryString({ org: orgId }))),
    ),
  },
);
const auth = fc.oneof({ weight: 14, arbitrary: fc.constant<Auth>('bootstrap') }, { weight: 1, arbitrary: fc.constantFrom<Auth>('none', 'wrong', 'malformed', 'scoped', 'revoked') });
const request: fc.Arbitrary<AdminRequest> = fc.record({ r: route, auth, header: headerValue }).map(({ r, auth, header }) => ({ ...r, auth, header }));

interface Snapshot {
  versions: number[];
  cluster: unknown;
  policies: Record<string, unknown>;
  dlq: Array<{ id: string; org: string; name: string }>;
  tokens: unknown[];
  counts: unknown;
}

/** One statement, so a case costs two reads of the tables, not a dozen. */
async function snapshot(pool: DatabasePool): Promise<Snapshot> {
  const row = await pool.one(sql.unsafe`select json_build_object(
    'versions', coalesce((select json_agg(version order by version) from config_versions), '[]'),
    'cluster', (select json_build_object('maxDispatchAttempts', max_dispatch_attempts, 'sealedSecretsRetryBackoffMs', sealed_secrets_retry_backoff_ms, 'updated_by', updated_by, 'updated_at', updated_at::text) from cluster_settings),
    'policies', coalesce((select json_object_agg(org_id, json_build_object('fork_policy', fork_policy, 'updated_by', updated_by, 'updated_at', updated_at::text)) from org_trust_policies), '{}'),
    'dlq', coalesce((select json_agg(json_build_object('id', id::text, 'org', org_id, 'name', name) order by dlq_at, id) from internal_events where dlq_reason is not null and processed_at is null), '[]'),
    -- last_used_at is written by any admitted request (at most once a minute): not a change of the API's.
    'tokens', (select json_agg(json_build_object('id', id::text, 'name', name, 'unrestricted', unrestricted, 'scopes', scopes, 'revoked_at', revoked_at::text, 'expires_at', expires_at::text) order by id) from admin_tokens),
    'counts', json_build_object('runs', (select count(*) from runs), 'sources', (select count(*) from sources), 'events', (select count(*) from internal_events))
  ) as s`);
  return (row as { s: Snapshot }).s;
}

async function seedDlq(pool: DatabasePool): Promise<void> {
  for (const org of ORGS) {
    for (const name of NAMES) {
      await pool.query(sql.unsafe`
        INSERT INTO internal_events (id, name, payload, org_id, attempts, last_error, dlq_reason, dlq_at)
        VALUES (${randomUUID()}, ${name}, ${sql.jsonb({})}, ${org}, 5, 'hook answered 500', 'exhausted_retries', now())`);
    }
  }
}

function headersOf(r: AdminRequest, tokens: { scoped: string; revoked: string }): Record<string, string> {
  const headers: Record<string, string> = {};
  if (r.body?.contentType !== undefined) headers['content-type'] = r.body.contentType;
  const bearer = { bootstrap: BOOTSTRAP, scoped: tokens.scoped, revoked: tokens.revoked, wrong: `svcadm_${randomBytes(32).toString('base64url')}` } as Record<Auth, string>;
  if (r.auth === 'malformed') headers['authorization'] = r.header ?? '';
  else if (r.auth !== 'none') headers['authorization'] = `Bearer ${bearer[r.auth]}`;
  return headers;
}

const without = <T extends object>(s: T, ...keys: Array<keyof T>): Partial<T> => Object.fromEntries(Object.entries(s).filter(([k]) => !keys.includes(k as keyof T))) as Partial<T>;

/** What an accepted write must have changed; undefined when it did exactly that (and nothing else). */
async function acceptedProblem(r: AdminRequest, asked: unknown, answer: Record<string, unknown>, before: Snapshot, after: Snapshot, pool: DatabasePool, keys: Parameters<typeof readConfigVersion>[1]): Promise<string | undefined> {
  const a = (asked ?? {}) as Record<string, unknown>;
  const same = (...keys: Array<keyof Snapshot>) => isDeepStrictEqual(without(before, ...keys), without(after, ...keys));
  switch (r.kind) {
    case 'config.put':
    case 'config.rollback': {
      const written = after.versions.at(-1);
      if (!same('versions', 'counts') || after.versions.length !== before.versions.length + 1 || written === undefined || answer['version'] !== written) return `versions ${before.versions} → ${after.versions}, answer ${JSON.stringify(answer)}`;
      const stored = await readConfigVersion(pool, keys, written);
      const wanted = r.kind === 'config.put' ? a['config'] : (await readConfigVersion(pool, keys, a['version'] as number))?.config;
      if (!isDeepStrictEqual(stored?.config, wanted)) return `version ${written} holds ${JSON.stringify(stored?.config)}, asked ${JSON.stringify(wanted)}`;
      return r.kind === 'config.put' && (a['description'] ?? null) !== stored?.summary.description ? `description ${stored?.summary.description}` : undefined;
    }
    case 'config.reload':
      return same() ? undefined : 'a reload changed the tables';
    case 'dlq.retry':
    case 'dlq.discard': {
      const moved = (answer[r.kind === 'dlq.retry' ? 'retried' : 'discarded'] ?? []) as string[];
      const ids = Array.isArray(a['ids']) ? (a['ids'] as string[]).map((i) => i.toLowerCase()) : [];
      const expected = ids.length > 0 ? [...new Set(ids)] : before.dlq.filter((e) => (a['org'] === undefined || e.org === a['org']) && (a['name'] === undefined || e.name === a['name'])).map((e) => e.id);
      const left = before.dlq.filter((e) => !moved.includes(e.id));
      if (!isDeepStrictEqual([...moved].sort(), [...expected].sort())) return `moved ${moved}, expected ${expected}`;
      return same('dlq', 'counts') && isDeepStrictEqual(after.dlq, left) ? undefined : 'the dead-letter queue changed beyond the events named';
    }
    case 'cluster.patch': {
      const values = (s: Snapshot) => ({ ...(s.cluster as Record<string, unknown>), updated_by: undefined, updated_at: undefined });
      const wanted = { ...values(before), ...a };
      const settings = answer['settings'];
      return same('cluster') && isDeepStrictEqual(values(after), wanted) && isDeepStrictEqual({ ...(settings as object), updated_by: undefined, updated_at: undefined }, wanted)
        ? undefined
        : `cluster settings ${JSON.stringify(after.cluster)}, asked ${JSON.stringify(a)}`;
    }
    case 'trust.patch': {
      const org = (a['org'] ?? new URL(r.path, 'http://x').searchParams.get('org')) as string;
      const row = after.policies[org] as { fork_policy: unknown } | undefined;
      const others = (s: Snapshot) => ({ ...s.policies, [org]: undefined });
      return same('policies') && isDeepStrictEqual(others(before), others(after)) && row?.fork_policy === a['forkPolicy'] && answer['forkPolicy'] === a['forkPolicy']
        ? undefined
        : `trust policy of ${org}: ${JSON.stringify(row)}, asked ${JSON.stringify(a)}`;
    }
    case 'read':
      return same() ? undefined : 'a read changed the tables';
  }
}

/** The answer's shape whatever the route: never 5xx; a refusal names a catalogued code; the auth refusals. */
function answerProblem(r: AdminRequest, status: number, body: unknown): string | undefined {
  if (status >= 500) return `status ${status}`;
  if (body === undefined) return `status ${status} without a JSON body`;
  // The HTTP parser and the router answer before any authentication: headers past the server's
  // limit (a huge query string), a path that names no route (fetch folds `..` segments), a path
  // parameter too long or not decodable. None of them tells what a route accepts.
  const error = (body as { error?: { code?: unknown; message?: unknown } }).error;
  if (status === 431 && error?.code === 'SVC_ERR_HTTP_HEADERS_TOO_LARGE') return undefined;
  if (status === 404 && error?.code === 'SVC_ERR_HTTP_NOT_FOUND') return undefined;
  if (error?.code === 'SVC_ERR_HTTP_INVALID_PARAMS' && (status === 414 || error.message === 'a path parameter is not valid percent-encoding')) return undefined;
  if (r.auth === 'none' || r.auth === 'wrong' || r.auth === 'malformed' || r.auth === 'revoked') {
    if (status !== 401) return `${r.auth} token answered ${status}, not 401`;
  } else if (r.auth === 'scoped' && !r.runsRead && status !== 403) return `a token without the scope answered ${status}, not 403`;
  if (status < 400) return undefined;
  // A reload that fails or meets another answers with its outcome (docs/config.md), not an error.
  if (r.kind === 'config.reload' && (status === 409 || status === 422) && typeof (body as { success?: unknown }).success === 'boolean') return undefined;
  const code = (body as { error?: { code?: unknown } }).error?.code;
  return typeof code === 'string' && errorCodeEntry(code) !== undefined ? undefined : `status ${status} without a catalogued error code`;
}

await eachDatabase(t, async (t, db) => {
  if (!fuzzDatabase(db.kind)) return void t.pass(`not fuzzed on the ${db.kind} database (SVC_FUZZ_DATABASES)`);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-fuzz-admin-'));
  const orchestrator = await startOrchestrator({
    env: {
      // SVC_FUZZ_* are the test's, not settings: the orchestrator refuses unknown SVC_ names.
      ...serverEnv(),
      SVC_DATABASE_URL: db.url,
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: randomBytes(32).toString('base64'),
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_INSTANCE_ID: `fuzz-${randomUUID().slice(0, 8)}`,
      SVC_PLATFORM_URL: '',
      SVC_AGENT_AUTH: 'none',
      SVC_BOOTSTRAP_ADMIN_TOKEN: BOOTSTRAP,
    },
    cwd: dataDir,
    logger: testLogger,
    subsystems: ORCHESTRATOR_SUBSYSTEMS,
    plugins: orchestratorPlugins,
  });
  t.teardown(async () => {
    await orchestrator.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const base = orchestrator.url;
  const keys = orchestrator.ctx.masterKeys.all;
  const scoped = (await createAdminToken(db.pool, { name: 'fuzz-runs-reader', scopes: ['runs.read'], unrestricted: false, createdBy: 'fuzz' })).token;
  const revoked = (await createAdminToken(db.pool, { name: 'fuzz-revoked', scopes: [], unrestricted: true, createdBy: 'fuzz' })).token;
  await revokeAdminToken(db.pool, 'fuzz-revoked');
  // A few versions to roll back to, and the cluster settings row (first read seeds it).
  for (const maxDepth of [100, 200]) {
    const put = await fetch(`${base}/admin/config`, { method: 'PUT', headers: { authorization: `Bearer ${BOOTSTRAP}`, 'content-type': 'application/json' }, body: JSON.stringify({ config: { queue: { maxDepth } } }) });
    t.equal(put.status, 201, 'a valid config version is written');
  }
  t.equal((await fetch(`${base}/api/v1/admin/cluster-settings`, { headers: { authorization: `Bearer ${BOOTSTRAP}` } })).status, 200);

  await t.test(`${REQUESTS} generated admin API requests`, async (t) => {
    const statuses = new Map<string, number>();
    const tick = progress(`admin API ${db.kind} requests`, REQUESTS, statuses);
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        if (((await db.pool.oneFirst(sql.unsafe`select count(*)::int from internal_events where dlq_reason is not null and processed_at is null`)) as number) < 4) await seedDlq(db.pool);
        const before = await snapshot(db.pool);
        const text = fill(r.body?.text, before.dlq.map((e) => e.id));
        const response = await fetch(`${base}${r.path}`, { method: r.method, headers: headersOf(r, { scoped, revoked }), ...(text === undefined ? {} : { body: text }) });
        const raw = await response.text();
        let answer: unknown;
        try {
          answer = JSON.parse(raw);
        } catch {
          answer = undefined;
        }
        const after = await snapshot(db.pool);
        tally(statuses, `${r.kind} ${response.status}`);
        tick();
        const where = `${r.method} ${r.path.slice(0, 200)} (${r.auth}, ${r.body?.contentType}): ${response.status} ${raw.slice(0, 300)}`;
        const shape = answerProblem(r, response.status, answer);
        if (shape !== undefined) throw new Error(`${where}: ${shape}`);
        if (response.status >= 400) {
          if (!isDeepStrictEqual(before, after)) throw new Error(`${where}: a refusal changed the tables: ${JSON.stringify(before)} → ${JSON.stringify(after)}`);
          return;
        }
        const changed = await acceptedProblem(r, askedJson(text), answer as Record<string, unknown>, before, after, db.pool, keys);
        if (changed !== undefined) throw new Error(`${where}: ${changed}`);
      }),
      { numRuns: REQUESTS, endOnFailure: true },
    );
    t.comment(`requests tried: ${REQUESTS}; answers by route and status: ${describeTally(statuses)}; 5xx: ${[...statuses].filter(([k]) => / 5\d\d$/.test(k)).reduce((n, [, v]) => n + v, 0)}`);
    t.equal((await fetch(`${base}/healthz`)).status, 200, 'the orchestrator still serves');
    t.equal((await fetch(`${base}/admin/config`, { headers: { authorization: `Bearer ${BOOTSTRAP}` } })).status, 200, 'and still answers its admin API');
  });
});
