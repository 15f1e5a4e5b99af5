// The front door's request parsing: paths, routing keys, delivery ids and forwarded headers, with
// the spec's X-Provider-* names and GitHub's real ones.
import t from 'tap';
import {
  MAX_WEBHOOK_BYTES,
  declaredLength,
  deliveryIdOf,
  eventTypeOf,
  forwardedHeaders,
  isValidOrgId,
  isValidSourcePath,
  routingKeyOf,
} from '../../../kernel/webhook/parse-request.ts';

t.test('the body limit is the spec\'s 25 MiB', async (t) => {
  t.equal(MAX_WEBHOOK_BYTES, 25 * 1024 * 1024);
});

t.test('routing keys from spec and GitHub header names', async (t) => {
  t.equal(routingKeyOf('github', undefined, { 'x-provider-hook-installation-target-id': '42' }), 'github:42');
  t.equal(routingKeyOf('github', undefined, { 'x-github-hook-installation-target-id': ' 43 ' }), 'github:43');
  t.equal(routingKeyOf('github', undefined, { 'x-provider-hook-installation-target-id': '1', 'x-github-hook-installation-target-id': '2' }), 'github:1', 'the spec name wins');
  t.equal(routingKeyOf('git', undefined, {}), 'git:');
  t.equal(routingKeyOf('generic', 'src-1', { 'x-provider-hook-installation-target-id': '42' }), 'generic:src-1');
});

t.test('paths: org ids and generic source ids are plain segments; kinds are lower-case names', async (t) => {
  for (const ok of ['acme', 'A1', 'a.b_c-d', 'x'.repeat(100)]) t.ok(isValidOrgId(ok), ok);
  for (const bad of ['', '-acme', 'bad org', 'x'.repeat(101), 'a/b', 'ünï']) t.notOk(isValidOrgId(bad), JSON.stringify(bad));
  t.ok(isValidSourcePath({ orgId: 'acme', providerKind: 'github' }));
  t.ok(isValidSourcePath({ orgId: 'acme', providerKind: 'my-forge2' }));
  t.notOk(isValidSourcePath({ orgId: 'acme', providerKind: 'GitHub!' }));
  t.notOk(isValidSourcePath({ orgId: 'acme', providerKind: 'generic' }), 'generic needs a source id');
  t.notOk(isValidSourcePath({ orgId: 'acme' }));
  t.ok(isValidSourcePath({ orgId: 'acme', sourceId: 'alerts.v2' }));
  t.notOk(isValidSourcePath({ orgId: 'acme', sourceId: 'has space' }));
});

t.test('declared length: a number, or NaN without Content-Length', async (t) => {
  t.equal(declaredLength({ 'content-length': '12' }), 12);
  t.ok(Number.isNaN(declaredLength({})));
  t.notOk(declaredLength({}) > MAX_WEBHOOK_BYTES, 'no declared length never refuses by itself');
});

t.test('delivery ids: provider header, else a UUID; unusable values replaced', async (t) => {
  t.same(deliveryIdOf({ 'x-provider-delivery': 'abc' }, false), { deliveryId: 'abc', fromProvider: true });
  t.same(deliveryIdOf({ 'x-github-delivery': 'gh' }, false), { deliveryId: 'gh', fromProvider: true });
  t.equal(deliveryIdOf({ 'idempotency-key': 'k' }, false).fromProvider, false, 'idempotency keys only for generic sources');
  t.same(deliveryIdOf({ 'x-gitea-delivery': 'g-1' }, false, 'gitea'), { deliveryId: 'g-1', fromProvider: true }, "a forge's own X-<Kind>-Delivery (a provider plugin the front door does not know)");
  t.equal(deliveryIdOf({ 'x-gitea-delivery': 'g-1' }, false, 'github').fromProvider, false, "another kind's header is not taken");
  t.same(deliveryIdOf({ 'x-provider-delivery': 'p', 'x-gitea-delivery': 'g' }, false, 'gitea'), { deliveryId: 'p', fromProvider: true }, 'the spec header wins');
  t.equal(deliveryIdOf({ 'x-gitea-delivery': 'g-1' }, true, 'gitea').fromProvider, false, 'not for generic sources');

  t.same(deliveryIdOf({ 'idempotency-key': 'k' }, true), { deliveryId: 'k', fromProvider: true });
  t.same(deliveryIdOf({ 'x-delivery-id': 'x' }, true), { deliveryId: 'x', fromProvider: true });
  for (const bad of ['', 'has space', 'x'.repeat(201), 'ünï']) {
    const id = deliveryIdOf({ 'x-provider-delivery': bad }, false);
    t.equal(id.fromProvider, false, JSON.stringify(bad));
    t.match(id.deliveryId, /^[0-9a-f-]{36}$/);
  }
  t.equal(eventTypeOf({ 'x-github-event': 'push' }), 'push');
  t.equal(eventTypeOf({ 'x-provider-event': 'pull_request' }), 'pull_request');
  t.equal(eventTypeOf({}), undefined);
});

t.test('forwarded headers drop hop-by-hop ones and join repeats', async (t) => {
  t.same(
    forwardedHeaders({ host: 'h', connection: 'keep-alive', 'content-length': '3', 'transfer-encoding': 'chunked', 'x-hub-signature-256': 'sha256=1', authorization: 'Bearer b', 'x-multi': ['a', 'b'] }),
    { 'x-hub-signature-256': 'sha256=1', authorization: 'Bearer b', 'x-multi': 'a, b' },
  );
});
