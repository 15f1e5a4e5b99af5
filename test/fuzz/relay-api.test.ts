// Fuzzing the relay's management API over real HTTP (fast-check): a real relay linked to a real
// orchestrator (test/fixtures/platform-stack.ts). Generated requests go to the routes that take
// a body or write — personal access tokens (create, revoke), the device flow (code, token), test
// secrets, remote-run uploads and runs, approve and reject of a real run — and the org reads with
// generated query strings and path parameters; mostly with a personal access token, some with the
// org's platform token, another org's, a wrong one or none. Every answer is a 2xx the route allows
// or a 4xx naming a catalogued error code (the device token endpoint names it in `code`, RFC 8628
// style); never a 5xx. Both databases are read before and after each request: a refusal or a read
// changes nothing, an accepted write changed what it asked for. The relay still serves after.
// Cases: SVC_FUZZ_RUNS (default 500 requests per database).
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import t from 'tap';
import { errorCodeEntry } from '../../core/error-codes.ts';
import { createContext } from '../../kernel/orchestrator/secrets/index.ts';
import { createPat } from '../../kernel/relay/pats/index.ts';
import { sql, type DatabasePool } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../fixtures/platform-stack.ts';
import { until } from '../fixtures/runs.ts';
import { describeTally, fuzzDatabase, fuzzRuns, fuzzTimeout, progress, tally } from './arbitraries.ts';
import { askedJson, bodyCase, fill, hostileString, queryString, segment, type BodyCase } from './bodies.ts';

t.setTimeout(fuzzTimeout());

const REQUESTS = fuzzRuns(500);
const TEST_CONTEXT = 'fuzz-test';
const OPS_CONTEXT = 'fuzz-ops';

type Auth = 'pat' | 'org' | 'other' | 'wrong' | 'none';
type Kind = 'read' | 'pat.create' | 'pat.revoke' | 'device.code' | 'device.token' | 'secret.set' | 'upload' | 'remote.run' | 'decision';

interface RelayRequest {
  method: string;
  path: string;
  kind: Kind;
  body?: BodyCase;
  auth: Auth;
}

const orgSegment = fc.oneof({ weight: 6, arbitrary: fc.constant(ORG) }, { weight: 1, arbitrary: segment(fc.constantFrom(OTHER_ORG, 'nobody')) });
/** `@run` is the real run, `@0`… the sacrificial tokens: filled in when the case runs. */
const runSegment = fc.oneof({ weight: 4, arbitrary: fc.constant('@run') }, { weight: 1, arbitrary: segment(fc.uuid()) });
const sha = fc.stringMatching(/^[0-9a-f]{40}$/);

const VALID = {
  pat: fc.record({ name: fc.string({ maxLength: 40 }), expiresInDays: fc.integer({ min: 1, max: 366 }) }, { requiredKeys: [] }),
  deviceToken: fc.record({ device_code: fc.oneof(fc.string({ maxLength: 60 }), fc.base64String({ maxLength: 60 })), grant_type: fc.constant('urn:ietf:params:oauth:grant-type:device_code') }, { requiredKeys: ['device_code'] }),
  secret: fc.record({ value: fc.string({ minLength: 1, maxLength: 200 }) }),
  remoteRun: fc.record(
    {
      uploadId: fc.uuid(),
      fixture: fc.string({ minLength: 1, maxLength: 20 }),
      repository: fc.constantFrom('acme/widgets', 'o/r'),
      sha,
      ref: fc.constantFrom('refs/heads/main', null),
      event: fc.constant({ kind: 'push' }),
      changedFiles: fc.constantFrom(null, ['a.ts']),
      workflows: fc.constant([{ name: 'ci' }]),
      lockfileHash: fc.constant(null),
    },
    { requiredKeys: ['uploadId', 'fixture', 'repository', 'sha', 'ref', 'event', 'changedFiles', 'workflows', 'lockfileHash'] },
  ),
  decision: fc.record({ comment: fc.string({ maxLength: 100 }), job: fc.constantFrom('build', 'test', 'nope') }, { requiredKeys: [] }),
};

const write = (method: string, path: fc.Arbitrary<string>, kind: Kind, valid: fc.Arbitrary<Record<string, unknown>>) =>
  fc.record({ method: fc.constant(method), path, kind: fc.constant(kind), body: bodyCase(valid) });
const read = (path: fc.Arbitrary<string>) => fc.record({ method: fc.constant('GET'), path, kind: fc.constant<Kind>('read') });

const route = fc.oneof(
  { weight: 4, arbitrary: write('POST', fc.constant('/v1/pats'), 'pat.create', VALID.pat) },
  { weight: 2, arbitrary: fc.record({ method: fc.constant('DELETE'), path: fc.oneof(fc.constantFrom('@0', '@1'), segment(fc.uuid())).map((id) => `/v1/pats/${id}`), kind: fc.constant<Kind>('pat.revoke') }) },
  { weight: 1, arbitrary: write('POST', fc.constant('/v1/device/code'), 'device.code', fc.constant({})) },
  { weight: 3, arbitrary: write('POST', fc.constant('/v1/device/token'), 'device.token', VALID.deviceToken) },
  {
    weight: 4,
    arbitrary: write(
      'POST',
      fc.tuple(orgSegment, segment(fc.constantFrom(TEST_CONTEXT, OPS_CONTEXT, 'nope')), segment(fc.constantFrom('API_KEY', 'TOKEN', 'bad key', '9X'))).map(([o, c, k]) => `/v1/orgs/${o}/secrets/${c}/${k}`),
      'secret.set',
      VALID.secret,
    ),
  },
  { weight: 1, arbitrary: write('POST', orgSegment.map((o) => `/v1/orgs/${o}/remote-runs/uploads`), 'upload', fc.constant({})) },
  { weight: 3, arbitrary: write('POST', orgSegment.map((o) => `/v1/orgs/${o}/remote-runs`), 'remote.run', VALID.remoteRun) },
  {
    weight: 3,
    arbitrary: write('POST', fc.tuple(fc.constantFrom('', '/v1'), orgSegment, runSegment, fc.constantFrom('approve', 'reject')).map(([p, o, r, d]) => `${p}/orgs/${o}/runs/${r}/${d}`), 'decision', VALID.decision),
  },
  {
    weight: 4,
    arbitrary: fc.oneof(
      read(fc.constantFrom('/v1/pats', '/v1/whoami')),
      read(fc.tuple(orgSegment, queryString({ limit: fc.integer({ min: 0, max: 600 }).map(String), status: fc.constantFrom('success', 'failed', 'x'), repository: fc.constantFrom('o/r'), cursor: hostileString })).map(([o, q]) => `/v1/orgs/${o}/runs${q}`)),
      read(fc.tuple(orgSegment, queryString({ days: fc.integer({ min: -1, max: 400 }).map(String) })).map(([o, q]) => `/v1/orgs/${o}/report${q}`)),
      read(fc.tuple(orgSegment, queryString({ limit: fc.integer({ min: -1, max: 600 }).map(String) })).map(([o, q]) => `/v1/orgs/${o}/notifications${q}`)),
      read(fc.tuple(orgSegment, runSegment, queryString({ after: hostileString })).map(([o, r, q]) => `/v1/orgs/${o}/runs/${r}/logs${q}`)),
      read(fc.tuple(orgSegment, runSegment, segment(fc.constantFrom('dist', 'x')), queryString({ offset: fc.constantFrom('0', '-1', '1e3', '99999999999999999') })).map(([o, r, n, q]) => `/v1/orgs/${o}/runs/${r}/artifacts/${n}${q}`)),
      read(fc.tuple(orgSegment, runSegment).map(([o, r]) => `/v1/orgs/${o}/runs/${r}`)),
    ),
  },
);
const auth = fc.oneof({ weight: 10, arbitrary: fc.constant<Auth>('pat') }, { weight: 2, arbitrary: fc.constant<Auth>('org') }, { weight: 1, arbitrary: fc.constantFrom<Auth>('other', 'wrong', 'none') });
const request: fc.Arbitrary<RelayRequest> = fc.record({ r: route, auth }).map(({ r, auth }) => ({ ...r, auth }));

interface Snapshot {
  pats: Array<{ id: string; name: string; revoked_at: string | null; expires_at: string | null; user_name: string }>;
  relay: unknown;
  secrets: Array<{ context: string; key: string; value_sealed: string }>;
  votes: Array<{ id: string; decision: string; comment: string; via: string }>;
  orchestrator: unknown;
}

async function snapshot(relayDb: DatabasePool, orchDb: DatabasePool): Promise<Snapshot> {
  // last_used_at is written by any authenticated request: not a change of the API's.
  const relay = (await relayDb.one(sql.unsafe`select json_build_object(
    'pats', coalesce((select json_agg(to_jsonb(p) - 'last_used_at' order by id) from relay_pats p), '[]'),
    'relay', json_build_object('devices', (select count(*) from relay_device_codes), 'sessions', (select count(*) from relay_sessions), 'buffer', (select count(*) from relay_buffer),
      'runs', (select json_agg(json_build_object('run', run_id, 'rerun', last_rerun_at, 'cancelled', cancelled_by) order by run_id) from relay_runs))
  ) as s`)) as { s: Pick<Snapshot, 'pats' | 'relay'> };
  const orch = (await orchDb.one(sql.unsafe`select json_build_object(
    'secrets', coalesce((select json_agg(json_build_object('context', context, 'key', key, 'value_sealed', value_sealed) order by context, key) from secret_values), '[]'),
    'votes', coalesce((select json_agg(json_build_object('id', id, 'decision', decision, 'comment', comment, 'via', via) order by id) from approval_votes), '[]'),
    'orchestrator', json_build_object('runs', (select count(*) from runs), 'jobs', (select json_agg(json_build_object('id', id, 'status', status) order by id) from jobs),
      'contexts', (select json_agg(to_jsonb(c) order by name) from secret_contexts c))
  ) as s`)) as { s: Pick<Snapshot, 'secrets' | 'votes' | 'orchestrator'> };
  return { ...relay.s, ...orch.s };
}

/** The answer's shape: never 5xx; a refusal names a catalogued code; authentication first. */
function answerProblem(r: RelayRequest, status: number, body: unknown): string | undefined {
  if (body === undefined) return `status ${status} without a JSON body`;
  const error = (body as { error?: unknown }).error;
  // The spec's one 5xx here: the other org has no orchestrator connected (routes.ts "Order of checks").
  const unlinked = status === 503 && r.path.startsWith(`/v1/orgs/${OTHER_ORG}/`) && (error as { code?: unknown } | undefined)?.code === 'SVC_ERR_RELAY_NO_ORCHESTRATOR';
  if (status >= 500 && !unlinked) return `status ${status}`;
  // The device token endpoint answers its own refusals RFC 8628 style (`error` a word, `code` ours).
  const code = typeof error === 'string' && r.kind === 'device.token' ? (body as { code?: unknown }).code : (error as { code?: unknown } | undefined)?.code;
  if (status < 400 || unlinked) return undefined;
  if (typeof code !== 'string' || errorCodeEntry(code) === undefined) return `status ${status} without a catalogued error code`;
  const open = r.kind === 'device.code' || r.kind === 'device.token';
  // The relay's routes check the token in the handler: what the router and the body parser refuse
  // (no route, a bad path, a body too large, not JSON, another content type) comes first.
  const beforeHandler = ['SVC_ERR_HTTP_NOT_FOUND', 'SVC_ERR_HTTP_INVALID_PARAMS', 'SVC_ERR_HTTP_BODY_TOO_LARGE', 'SVC_ERR_HTTP_MALFORMED_JSON', 'SVC_ERR_HTTP_UNSUPPORTED_MEDIA_TYPE', 'SVC_ERR_HTTP_HEADERS_TOO_LARGE'];
  if (!open && (r.auth === 'wrong' || r.auth === 'none') && status !== 401 && !beforeHandler.includes(code)) return `${r.auth} token answered ${status} ${code}`;
  return undefined;
}

const without = <T extends object>(s: T, ...keys: Array<keyof T>): Partial<T> => Object.fromEntries(Object.entries(s).filter(([k]) => !keys.includes(k as keyof T))) as Partial<T>;

/** What an accepted request must have changed; undefined when it changed that and nothing else. */
function acceptedProblem(r: RelayRequest, asked: unknown, answer: Record<string, unknown>, before: Snapshot, after: Snapshot, ids: { sacrificial: string[] }): string | undefined {
  const a = (asked ?? {}) as Record<string, unknown>;
  const same = (...keys: Array<keyof Snapshot>) => isDeepStrictEqual(without(before, ...keys), without(after, ...keys));
  switch (r.kind) {
    case 'pat.create': {
      const added = after.pats.filter((p) => !before.pats.some((b) => b.id === p.id));
      const pat = added[0];
      if (!same('pats') || added.length !== 1 || pat === undefined || after.pats.length !== before.pats.length + 1) return `${added.length} tokens added`;
      const expiry = a['expiresInDays'] === undefined ? pat.expires_at === null : pat.expires_at !== null && answer['expiresAt'] !== null;
      return pat.id === answer['id'] && pat.name === (a['name'] ?? '') && pat.user_name === 'fuzzer' && expiry ? undefined : `token ${JSON.stringify(pat)} for ${JSON.stringify(a)}`;
    }
    case 'pat.revoke': {
      const id = answer['id'];
      const changed = after.pats.filter((p, i) => !isDeepStrictEqual(p, before.pats[i]));
      const fine = same('pats') && ids.sacrificial.includes(id as string) && changed.every((p) => p.id === id && p.revoked_at !== null) && changed.length <= 1;
      return fine ? undefined : `revoking ${String(id)} changed ${JSON.stringify(changed)}`;
    }
    case 'device.code':
      return same('relay') && (after.relay as { devices: number }).devices === (before.relay as { devices: number }).devices + 1 ? undefined : 'a device code is not one new row';
    case 'secret.set': {
      const [context, key] = r.path.split('/').slice(5).map(decodeURIComponent);
      const changed = after.secrets.filter((s) => !before.secrets.some((b) => isDeepStrictEqual(b, s)));
      const fine = same('secrets') && changed.length === 1 && changed[0]?.context === context && changed[0]?.key === key && context === TEST_CONTEXT && answer['replaced'] === before.secrets.some((s) => s.key === key && s.context === context);
      return fine ? undefined : `set ${context}/${key}: changed ${JSON.stringify(changed.map((s) => `${s.context}/${s.key}`))}, answer ${JSON.stringify(answer)}`;
    }
    case 'decision': {
      const decision = r.path.endsWith('/approve') ? 'approve' : 'reject';
      const added = after.votes.filter((v) => !before.votes.some((b) => b.id === v.id));
      const fine = same('votes') && added.every((v) => v.decision === decision && v.comment === (a['comment'] ?? '') && v.via === (r.path.startsWith('/v1') ? 'cli' : 'dashboard'));
      return fine ? undefined : `votes ${JSON.stringify(added)} for ${decision} ${JSON.stringify(a)}`;
    }
    case 'upload':
    case 'device.token':
    case 'remote.run':
    case 'read':
      return same() ? undefined : `${r.kind} answered ${JSON.stringify(answer).slice(0, 200)} and changed the tables`;
  }
}

await eachDatabase(t, async (t, db) => {
  if (!fuzzDatabase(db.kind)) return void t.pass(`not fuzzed on the ${db.kind} database (SVC_FUZZ_DATABASES)`);
  // A busy machine must not turn a slow answer into the spec's 504.
  const stack = await startPlatformStack(t, db, { dashboardTimeoutMs: 120_000 });
  const pat = await stack.pat('fuzzer');
  const { runId } = await stack.pushRun();
  // The relay's run index learns of the run on its own time: settled before the first snapshot.
  await until('the run in the relay index', async () => ((await stack.relayDb.oneFirst(sql.unsafe`select count(*)::int from relay_runs where run_id = ${runId}`)) === 1 ? true : undefined), 60_000, 100);
  await createContext(db.pool, { name: TEST_CONTEXT, allowLocalExecution: true, orgs: [ORG] });
  await createContext(db.pool, { name: OPS_CONTEXT, orgs: [ORG] });
  const sacrificial = [(await createPat(stack.relayDb, ORG, 'fuzzer', 'spare-1')).id, (await createPat(stack.relayDb, ORG, 'fuzzer', 'spare-2')).id];
  const tokens: Record<Auth, string | undefined> = { pat, org: stack.orgToken, other: stack.otherOrgToken, wrong: `svcpat_${randomBytes(24).toString('base64url')}`, none: undefined };

  await t.test(`${REQUESTS} generated relay API requests`, async (t) => {
    const statuses = new Map<string, number>();
    const tick = progress(`relay API ${db.kind} requests`, REQUESTS, statuses);
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const path = r.path.replace('@run', runId).replace(/@(\d)/, (_w, n: string) => sacrificial[Number(n)] ?? 'x');
        const text = fill(r.body?.text, sacrificial);
        const headers: Record<string, string> = {};
        if (r.body?.contentType !== undefined) headers['content-type'] = r.body.contentType;
        if (tokens[r.auth] !== undefined) headers['authorization'] = `Bearer ${tokens[r.auth]}`;
        const before = await snapshot(stack.relayDb, db.pool);
        const response = await fetch(`${stack.relayUrl}${path}`, { method: r.method, headers, ...(text === undefined ? {} : { body: text }) });
        const raw = await response.text();
        let answer: unknown;
        try {
          answer = JSON.parse(raw);
        } catch {
          answer = undefined;
        }
        const after = await snapshot(stack.relayDb, db.pool);
        tally(statuses, `${r.kind} ${response.status}`);
        tick();
        const where = `${r.method} ${path.slice(0, 200)} (${r.auth}, ${r.body?.contentType}): ${response.status} ${raw.slice(0, 300)}`;
        const shape = answerProblem(r, response.status, answer);
        if (shape !== undefined) throw new Error(`${where}: ${shape}`);
        if (response.status >= 400) {
          if (!isDeepStrictEqual(before, after)) throw new Error(`${where}: a refusal changed the tables: ${JSON.stringify(before).slice(0, 2_000)} → ${JSON.stringify(after).slice(0, 2_000)}`);
          return;
        }
        const changed = acceptedProblem({ ...r, path }, askedJson(text), answer as Record<string, unknown>, before, after, { sacrificial });
        if (changed !== undefined) throw new Error(`${where}: ${changed}`);
      }),
      { numRuns: REQUESTS, endOnFailure: true },
    );
    t.comment(`requests tried: ${REQUESTS}; answers by route and status: ${describeTally(statuses)}; 5xx other than 503 for the org without an orchestrator: ${[...statuses].filter(([k]) => / 5\d\d$/.test(k) && !k.endsWith(' 503')).reduce((n, [, v]) => n + v, 0)}`);
    t.equal((await fetch(`${stack.relayUrl}/healthz`)).status, 200, 'the relay still serves');
    t.equal((await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs/${runId}`, { headers: stack.auth(pat) })).status, 200, 'and still forwards to its orchestrator');
  });
});
