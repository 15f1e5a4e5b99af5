// The github provider's reading of the App's webhook log and its redelivery, against the fake
// GitHub API over real HTTP with App JWT auth: attempts since a time across cursor pages, newest
// first; a redelivery makes GitHub send the same delivery id again; a bad or unknown id is refused.
import t from 'tap';
import { createPluginHost } from '../../../../core/plugins/index.ts';
import type { ProviderSource } from '../../../../core/extension-points/provider.ts';
import { githubProvider } from '../../../../plugins/providers/github/index.ts';
import { nextCursor } from '../../../../plugins/providers/github/hook-deliveries.ts';
import { generateAppKeyPair, startFakeGithub, type FakeHookDelivery } from '../../../fixtures/fake-github.ts';

const APP_ID = '4343';
const keys = generateAppKeyPair();

t.test('nextCursor reads rel="next" of a Link header', async (t) => {
  t.equal(nextCursor('<https://api.github.com/app/hook/deliveries?per_page=100&cursor=v1_9>; rel="next"'), 'v1_9');
  t.equal(nextCursor('<https://x/?cursor=a>; rel="prev", <https://x/?cursor=b>; rel="next"'), 'b');
  t.equal(nextCursor(undefined), null);
  t.equal(nextCursor('<https://x/?cursor=a>; rel="prev"'), null);
});

t.test('attempts since a time, across pages; redelivery; refusals', async (t) => {
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  const host = createPluginHost({ config: { 'provider:github': {} } });
  await host.signInAll({ builtIns: [githubProvider] });
  t.teardown(() => host.close());
  const github = host.get('provider', 'github');
  const source: ProviderSource = { id: 'src-1', orgId: 'org-1', routingKey: `github:${APP_ID}`, settings: { appId: APP_ID, apiBaseUrl: fake.url }, credentials: { privateKey: keys.privateKeyPem } };

  // 250 logged attempts, one a minute, newest first as GitHub keeps them.
  const now = Date.now();
  for (let i = 0; i < 250; i++) {
    const entry: FakeHookDelivery = {
      id: 1000 + i, guid: `guid-${i}`, delivered_at: new Date(now - i * 60_000).toISOString(), redelivery: false, duration: 0.1,
      status: i % 2 === 0 ? 'OK' : 'failed to connect to host', status_code: i % 2 === 0 ? 200 : 0, event: 'push', action: null,
      installation_id: null, repository_id: null, response: '',
    };
    fake.hookDeliveries.push(entry);
  }
  const since = new Date(now - 150.5 * 60_000);
  const attempts = await github.listDeliveryAttempts!({ source, since });
  t.equal(attempts.length, 151, 'every attempt since the time, from two pages');
  t.same(attempts.slice(0, 2).map((a) => [a.id, a.deliveryId, a.statusCode, a.event, a.redelivery]), [['1000', 'guid-0', 200, 'push', false], ['1001', 'guid-1', 0, 'push', false]]);
  t.ok(attempts.every((a) => a.deliveredAt >= since));
  t.equal(fake.log.filter((l) => l.startsWith('GET /app/hook/deliveries')).length, 2, 'stopped at the page that reached past the time');

  // Redelivery: GitHub sends the stored body again under the same guid.
  const received: string[] = [];
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    received.push(String(req.headers['x-github-delivery']));
    req.resume();
    req.on('end', () => res.end('{"status":"accepted"}'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  fake.hook = { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/webhook/acme/github`, secret: 's'.repeat(32) };
  const first = await fake.sendWebhook('push', { ref: 'refs/heads/main' });
  await github.redeliver!({ source, id: String(first.id) });
  // A hang guard only: GitHub redelivers after it answered 202.
  for (const deadline = Date.now() + 60_000; received.length < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
  t.same(received, [first.guid, first.guid], 'sent again under its delivery id');

  await t.rejects(github.redeliver!({ source, id: 'abc' }), { code: 'SVC_ERR_GITHUB_HOOK_DELIVERY_ID' });
  await t.rejects(github.redeliver!({ source, id: '424242' }), { code: 'SVC_ERR_GITHUB_NOT_FOUND' });
});
