import t from 'tap';
import { deliveryIdOf, eventTypeOf, forwardedHeaders, routingKeyOf } from '../../../kernel/relay/webhook-request.ts';

t.test('routing keys from spec and GitHub header names', async (t) => {
  t.equal(routingKeyOf('github', undefined, { 'x-provider-hook-installation-target-id': '42' }), 'github:42');
  t.equal(routingKeyOf('github', undefined, { 'x-github-hook-installation-target-id': ' 43 ' }), 'github:43');
  t.equal(routingKeyOf('git', undefined, {}), 'git:');
  t.equal(routingKeyOf('generic', 'src-1', { 'x-provider-hook-installation-target-id': '42' }), 'generic:src-1');
});

t.test('delivery ids: provider header, else a UUID; unusable values replaced', async (t) => {
  t.same(deliveryIdOf({ 'x-provider-delivery': 'abc' }, false), { deliveryId: 'abc', fromProvider: true });
  t.same(deliveryIdOf({ 'x-github-delivery': 'gh' }, false), { deliveryId: 'gh', fromProvider: true });
  t.equal(deliveryIdOf({ 'idempotency-key': 'k' }, false).fromProvider, false, 'idempotency keys only for generic sources');
  t.same(deliveryIdOf({ 'idempotency-key': 'k' }, true), { deliveryId: 'k', fromProvider: true });
  for (const bad of ['', 'has space', 'x'.repeat(201), 'ünï']) {
    const id = deliveryIdOf({ 'x-provider-delivery': bad }, false);
    t.equal(id.fromProvider, false, JSON.stringify(bad));
    t.match(id.deliveryId, /^[0-9a-f-]{36}$/);
  }
  t.equal(eventTypeOf({ 'x-github-event': 'push' }), 'push');
  t.equal(eventTypeOf({}), undefined);
});

t.test('forwarded headers drop hop-by-hop ones and join repeats', async (t) => {
  t.same(
    forwardedHeaders({ host: 'h', connection: 'keep-alive', 'content-length': '3', 'x-hub-signature-256': 'sha256=1', authorization: 'Bearer b', 'x-multi': ['a', 'b'] }),
    { 'x-hub-signature-256': 'sha256=1', authorization: 'Bearer b', 'x-multi': 'a, b' },
  );
});
