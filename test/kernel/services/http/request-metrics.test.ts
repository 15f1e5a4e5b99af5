// HTTP request metrics on createHttpServer (the orchestrator's and the relay's factory): every
// answered request counted with its method, route pattern (never the raw URL) and status class,
// and its duration observed; requests no route matched share one label value.
import t from 'tap';
import { createHttpServer, listen } from '../../../../kernel/services/http/index.ts';
import { createMetrics } from '../../../../kernel/services/metrics.ts';
import { InputError } from '../../../../core/errors.ts';
import { testCode } from '../../../fixtures/error-codes.ts';
import { labelValues, sampleOf, scrape } from '../../../fixtures/prom-text.ts';
import { testLogger } from '../../../fixtures/db.ts';

t.test('requests by method, route pattern and status class, over a real socket', async (t) => {
  const metrics = createMetrics({ defaultMetrics: false });
  const app = createHttpServer({ logger: testLogger, metrics });
  app.get('/api/v1/things/:id', async (request) => ({ id: (request.params as { id: string }).id }));
  app.post('/api/v1/things', async () => {
    throw new InputError(testCode('SVC_ERR_TEST_BAD_THING'), 'bad thing');
  });
  app.get('/boom', async () => {
    throw new Error('unexpected');
  });
  const bound = await listen(app, { port: 0 });
  t.teardown(() => app.close());

  for (const id of ['a', 'b', 'c']) t.equal((await fetch(`${bound.url}/api/v1/things/${id}?token=secret`)).status, 200);
  t.equal((await fetch(`${bound.url}/api/v1/things`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 400);
  t.equal((await fetch(`${bound.url}/boom`)).status, 500);
  for (const path of ['/nope/1', '/nope/2', '/wp-admin.php']) t.equal((await fetch(`${bound.url}${path}`)).status, 404);

  const text = await scrape(bound.url);
  t.equal(sampleOf(text, 'svc_http_requests_total', { method: 'GET', route: '/api/v1/things/:id', status_class: '2xx' }), 3, 'three ids, one series');
  t.equal(sampleOf(text, 'svc_http_requests_total', { method: 'POST', route: '/api/v1/things', status_class: '4xx' }), 1);
  t.equal(sampleOf(text, 'svc_http_requests_total', { method: 'GET', route: '/boom', status_class: '5xx' }), 1);
  t.equal(sampleOf(text, 'svc_http_requests_total', { method: 'GET', route: 'unmatched', status_class: '4xx' }), 3, 'unmatched URLs share one series');
  t.equal(sampleOf(text, 'svc_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/things/:id', status_class: '2xx' }), 3, 'duration observed per request');
  t.equal(sampleOf(text, 'svc_http_request_duration_seconds_bucket', { method: 'GET', route: '/api/v1/things/:id', status_class: '2xx', le: '+Inf' }), 3);
  const routes = labelValues(text, 'svc_http_requests_total', 'route');
  t.notOk(routes.some((r) => /things\/[abc]|nope|wp-admin|token/.test(r)), `no raw URL in a label (${routes.join(', ')})`);
});

t.test('methods outside the usual set are one label value', async (t) => {
  const metrics = createMetrics({ defaultMetrics: false });
  const app = createHttpServer({ logger: testLogger, metrics });
  app.get('/dav', async () => ({ ok: true }));
  const bound = await listen(app, { port: 0 });
  t.teardown(() => app.close());
  // Methods node's parser knows but fastify routes none of (answered 404).
  for (const method of ['PROPFIND', 'MKCOL', 'LOCK']) t.equal((await fetch(`${bound.url}/dav`, { method })).status, 404, method);
  const text = await metrics.text();
  t.same(labelValues(text, 'svc_http_requests_total', 'method'), ['OTHER'], 'three odd methods, one label value');
  t.equal(sampleOf(text, 'svc_http_requests_total', { method: 'OTHER', route: 'unmatched', status_class: '4xx' }), 3);
});

t.test('a server without a registry records nothing and serves no /metrics', async (t) => {
  const app = createHttpServer({ logger: testLogger });
  t.teardown(() => app.close());
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
});
