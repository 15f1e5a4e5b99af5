import t from 'tap';
import { Writable } from 'node:stream';
import type { InjectOptions } from 'fastify';
import { Type } from 'typebox';
import { ErrorResponse } from '../../../../schemas/http/error.ts';
import { compileSchema } from '../../../../schemas/validate.ts';
import {
  AuthenticationError,
  ConflictError,
  InputError,
  NotAllowedError,
  NotFoundError,
  SvcError,
  UnavailableError,
} from '../../../../core/errors.ts';
import { createLogger } from '../../../../core/logging.ts';
import { testCode } from '../../../fixtures/error-codes.ts';
import { createMetrics } from '../../../../kernel/services/metrics.ts';
import { scrubUrl } from '../../../../kernel/services/http/server.ts';
import { checkFor, createHttpServer, KEEP_ALIVE_TIMEOUT_MS, listen, type SvcHttpServer } from '../../../../kernel/services/http/index.ts';
import { unstorableText } from '../../../../kernel/services/http/validator.ts';

const checkError = compileSchema(ErrorResponse);

function memoryLogger() {
  let text = '';
  const stream = new Writable({
    write(chunk, _e, done) {
      text += chunk.toString();
      done();
    },
  });
  return { logger: createLogger({ level: 'info', name: 'http-test', destination: stream }), text: () => text };
}

const Thing = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    spec: Type.Object({ size: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

function build(options: { bodyLimit?: number } = {}) {
  const log = memoryLogger();
  const metrics = createMetrics({ defaultMetrics: false });
  const app = createHttpServer({ logger: log.logger, metrics, ...options });
  app.post('/things', { schema: { body: Thing } }, async (request) => ({ got: request.body.name, size: request.body.spec.size }));
  app.get('/items/:id', { schema: { params: Type.Object({ id: Type.Integer({ minimum: 1 }) }), querystring: Type.Object({ limit: Type.Optional(Type.Integer({ maximum: 10 })) }) } }, async (request) => ({
    id: request.params.id,
    limit: request.query.limit ?? null,
  }));
  const errors: Record<string, () => unknown> = {
    input: () => new InputError(testCode('SVC_ERR_TEST_INPUT'), 'bad input here'),
    authentication: () => new AuthenticationError(testCode('SVC_ERR_TEST_AUTH'), 'who are you'),
    not_allowed: () => new NotAllowedError(testCode('SVC_ERR_TEST_FORBIDDEN'), 'not you'),
    not_found: () => new NotFoundError(testCode('SVC_ERR_TEST_MISSING'), 'no such run'),
    conflict: () => new ConflictError(testCode('SVC_ERR_TEST_CONFLICT'), 'already exists'),
    unavailable: () => new UnavailableError(testCode('SVC_ERR_TEST_BUSY'), 'try later', { details: { retryAfterSeconds: 4.2 } }),
    internal: () => new SvcError(testCode('SVC_ERR_TEST_BROKEN'), 'db password is hunter2'),
    foreign: () => new Error('connection string postgres://u:hunter2@h/db failed'),
    thrown_string: () => 'hunter2',
  };
  app.get('/fail/:kind', async (request) => {
    throw errors[(request.params as { kind: string }).kind]!();
  });
  return { app, log, metrics };
}

async function json(app: SvcHttpServer, options: InjectOptions) {
  const response = await app.inject(options);
  return { response, body: response.json() as Record<string, any> };
}

t.test('healthz, metrics, request ids', async (t) => {
  const { app, metrics } = build();
  t.teardown(() => app.close());
  metrics.configVersion.set(3);
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(health.statusCode, 200);
  t.same(health.json(), { status: 'ok' });
  t.match(health.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  const given = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-123' } });
  t.equal(given.headers['x-request-id'], 'trace-123', 'a plain caller id is kept');
  const hostile = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'bad id\nwith newline' } });
  t.match(hostile.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'a hostile caller id is replaced');
  const m = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(m.statusCode, 200);
  t.match(m.headers['content-type'], /^text\/plain/);
  t.match(m.body, 'svc_orch_config_version 3');
  t.equal(app.server.keepAliveTimeout, KEEP_ALIVE_TIMEOUT_MS);
  t.equal(KEEP_ALIVE_TIMEOUT_MS, 130_000);
});

t.test('SvcError kinds map to statuses', async (t) => {
  const { app, log } = build();
  t.teardown(() => app.close());
  const expected: Record<string, [number, string]> = {
    input: [400, 'SVC_ERR_TEST_INPUT'],
    authentication: [401, 'SVC_ERR_TEST_AUTH'],
    not_allowed: [403, 'SVC_ERR_TEST_FORBIDDEN'],
    not_found: [404, 'SVC_ERR_TEST_MISSING'],
    conflict: [409, 'SVC_ERR_TEST_CONFLICT'],
    unavailable: [503, 'SVC_ERR_TEST_BUSY'],
  };
  for (const [kind, [status, code]] of Object.entries(expected)) {
    const { response, body } = await json(app, { method: 'GET', url: `/fail/${kind}` });
    t.equal(response.statusCode, status, kind);
    t.equal(body.error.code, code);
    t.ok(checkError.check(body), 'body matches ErrorResponse');
    t.match(response.headers['content-type'], /^application\/json/);
  }
  const busy = await app.inject({ method: 'GET', url: '/fail/unavailable' });
  t.equal(busy.headers['retry-after'], '5');
  t.notMatch(log.text(), 'hunter2');
});

t.test('internal errors: logged with stack, response says only internal error', async (t) => {
  const { app, log } = build();
  t.teardown(() => app.close());
  const cases: [string, string][] = [
    ['internal', 'SVC_ERR_TEST_BROKEN'],
    ['foreign', 'SVC_ERR_INTERNAL'],
    ['thrown_string', 'SVC_ERR_INTERNAL'],
  ];
  for (const [kind, code] of cases) {
    const { response, body } = await json(app, { method: 'GET', url: `/fail/${kind}` });
    t.equal(response.statusCode, 500, kind);
    t.equal(body.error.code, code);
    t.equal(body.error.message, `internal error (request ${response.headers['x-request-id']})`);
    t.notMatch(response.body, 'hunter2');
    t.ok(checkError.check(body));
  }
  const lines = log.text().split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const logged = lines.filter((l) => l.msg === 'internal error');
  t.ok(logged.length >= 2);
  t.match(logged[0].err.stack, /SvcError: db password/, 'stack logged');
});

t.test('request validation', async (t) => {
  const { app, log } = build();
  t.teardown(() => app.close());
  const good = await json(app, { method: 'POST', url: '/things', payload: { name: 'a', spec: { size: 2 } } });
  t.equal(good.response.statusCode, 200);
  t.same(good.body, { got: 'a', size: 2 });

  const bad = await json(app, { method: 'POST', url: '/things', payload: { name: '', spec: { size: 'big', extra: 1 }, stray: true } });
  t.equal(bad.response.statusCode, 400);
  t.equal(bad.body.error.code, 'SVC_ERR_HTTP_INVALID_BODY');
  t.match(bad.body.error.message, /^invalid request body: /);
  const paths = bad.body.error.issues.map((i: { path: string }) => i.path).sort();
  t.same(paths, ['name', 'spec.extra', 'spec.size', 'stray']);
  t.ok(checkError.check(bad.body));

  const missing = await json(app, { method: 'POST', url: '/things', payload: { spec: {} } });
  t.match(missing.body.error.issues, [{ path: 'name', message: 'is required' }, { path: 'spec.size', message: 'is required' }]);

  const notObject = await json(app, { method: 'POST', url: '/things', payload: '[1,2]', headers: { 'content-type': 'application/json' } });
  t.equal(notObject.body.error.code, 'SVC_ERR_HTTP_INVALID_BODY');

  const item = await json(app, { method: 'GET', url: '/items/7?limit=3&token=SECRET-QUERY-VALUE&x_api_key=k' });
  t.same(item.body, { id: 7, limit: 3 }, 'params and query coerced from strings');
  const badParam = await json(app, { method: 'GET', url: '/items/zero' });
  t.equal(badParam.response.statusCode, 400);
  t.equal(badParam.body.error.code, 'SVC_ERR_HTTP_INVALID_PARAMS');
  t.match(badParam.body.error.issues, [{ path: 'id' }]);
  const badQuery = await json(app, { method: 'GET', url: '/items/1?limit=99' });
  t.equal(badQuery.body.error.code, 'SVC_ERR_HTTP_INVALID_QUERY');
  t.equal(checkFor(Thing), checkFor(Thing), 'one compiled check per schema');
  t.notMatch(log.text(), 'SECRET-QUERY-VALUE', 'query secrets are not logged');
  t.match(log.text(), '/items/7?limit=3&token=***REDACTED***&x_api_key=***REDACTED***');
});

t.test('malformed, oversized, unsupported and unknown requests', async (t) => {
  const { app } = build({ bodyLimit: 100 });
  t.teardown(() => app.close());
  const malformed = await json(app, { method: 'POST', url: '/things', payload: '{"name": ', headers: { 'content-type': 'application/json' } });
  t.equal(malformed.response.statusCode, 400);
  t.equal(malformed.body.error.code, 'SVC_ERR_HTTP_MALFORMED_JSON');
  const empty = await json(app, { method: 'POST', url: '/things', payload: '', headers: { 'content-type': 'application/json' } });
  t.equal(empty.body.error.code, 'SVC_ERR_HTTP_MALFORMED_JSON');
  const proto = await json(app, { method: 'POST', url: '/things', payload: '{"__proto__":{"x":1}}', headers: { 'content-type': 'application/json' } });
  t.equal(proto.response.statusCode, 400);
  t.equal(proto.body.error.code, 'SVC_ERR_HTTP_MALFORMED_JSON');

  const large = await json(app, { method: 'POST', url: '/things', payload: { name: 'x'.repeat(200), spec: { size: 1 } } });
  t.equal(large.response.statusCode, 413);
  t.equal(large.body.error.code, 'SVC_ERR_HTTP_BODY_TOO_LARGE');
  t.match(large.body.error.message, 'limit of 100 bytes');

  const media = await json(app, { method: 'POST', url: '/things', payload: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(media.response.statusCode, 415);
  t.equal(media.body.error.code, 'SVC_ERR_HTTP_UNSUPPORTED_MEDIA_TYPE');

  const missing = await json(app, { method: 'GET', url: '/nope?token=abc' });
  t.equal(missing.response.statusCode, 404);
  t.same(missing.body, { error: { code: 'SVC_ERR_HTTP_NOT_FOUND', message: 'no route for GET /nope' } });
  for (const r of [malformed, empty, proto, large, media, missing]) t.ok(checkError.check(r.body));
});

// Found by test/fuzz/admin-api.test.ts: a NUL in a path parameter reached PostgreSQL (500).
t.test('text PostgreSQL cannot store (NUL, unpaired surrogates) is refused by validation', async (t) => {
  const { app } = build();
  t.teardown(() => app.close());
  for (const name of ['a\u0000b', '\ud800', 'x\udfff']) {
    const { response, body } = await json(app, { method: 'POST', url: '/things', payload: `{"name":${JSON.stringify(name)},"spec":{"size":1}}`, headers: { 'content-type': 'application/json' } });
    t.equal(response.statusCode, 400, JSON.stringify(name));
    t.equal(body.error.code, 'SVC_ERR_HTTP_INVALID_BODY');
    t.same(body.error.issues, [{ path: 'name', message: 'must not contain NUL characters or unpaired surrogates' }]);
  }
  t.equal((await app.inject({ method: 'POST', url: '/things', payload: { name: 'ünïcode 💥', spec: { size: 1 } } })).statusCode, 200, 'well-formed unicode passes');
  t.same(unstorableText({ a: [{ ['k\u0000']: 1 }] }), { path: 'a.0.k\u0000', message: 'a key must not contain NUL characters or unpaired surrogates' });
  t.equal(unstorableText({ a: ['fine', 1, null, { b: 'also' }] }), undefined);
});

// Found by test/fuzz/admin-api.test.ts: the router answered these itself, with fastify's bare body.
t.test("the router's refusals get the error body: a path parameter too long or not decodable", async (t) => {
  const { app } = build();
  t.teardown(() => app.close());
  const long = await json(app, { method: 'GET', url: `/items/${'9'.repeat(500)}` });
  t.equal(long.response.statusCode, 414);
  t.same(long.body, { error: { code: 'SVC_ERR_HTTP_INVALID_PARAMS', message: 'a path parameter is longer than the server accepts' } });
  const bad = await json(app, { method: 'GET', url: '/items/%ZZ' });
  t.equal(bad.response.statusCode, 400);
  t.same(bad.body, { error: { code: 'SVC_ERR_HTTP_INVALID_PARAMS', message: 'a path parameter is not valid percent-encoding' } });
  for (const r of [long, bad]) {
    t.ok(checkError.check(r.body));
    t.match(r.response.headers['content-type'], /^application\/json/);
    t.match(r.response.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  }
});

t.test('scrubUrl', async (t) => {
  t.equal(scrubUrl('/a/b'), '/a/b');
  t.equal(scrubUrl('/cb?code=abc&state=s&next=/x'), '/cb?code=***REDACTED***&state=***REDACTED***&next=/x');
  t.equal(scrubUrl('/x?flag&access%5Ftoken=t'), '/x?flag&access%5Ftoken=***REDACTED***');
  t.equal(scrubUrl('/x?%E0%A4%A=1'), '/x?%E0%A4%A=1', 'undecodable names are kept as they are');
});

t.test('real socket: listen, keep-alive, port in use', async (t) => {
  const { app } = build();
  const bound = await listen(app, { port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  t.equal(bound.host, '127.0.0.1');
  t.ok(bound.port > 0);
  t.equal(bound.url, `http://127.0.0.1:${bound.port}`);
  const response = await fetch(`${bound.url}/healthz`);
  t.equal(response.status, 200);
  t.same(await response.json(), { status: 'ok' });
  t.equal(response.headers.get('keep-alive'), 'timeout=130');
  const posted = await fetch(`${bound.url}/things`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"n","spec":{"size":1}}' });
  t.same(await posted.json(), { got: 'n', size: 1 });

  const other = build().app;
  t.teardown(() => other.close());
  await t.rejects(listen(other, { port: bound.port, host: '127.0.0.1' }), {
    code: 'SVC_ERR_HTTP_LISTEN_FAILED',
    message: `port ${bound.port} on 127.0.0.1 is already in use`,
  });
});
