// WebSocket connection metrics at every endpoint, through the real servers: the orchestrator's
// agent endpoint (a test agent), the relay's orchestrator endpoint and the orchestrator's relay
// link (connectRelay against a real relay). Connects, disconnects, the open gauge and messages
// in/out move where the sockets open, talk and close.
import t from 'tap';
import { connectRelay } from '../../../kernel/orchestrator/relay-link/index.ts';
import { createMetrics } from '../../../kernel/services/metrics.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { sampleOf, scrape } from '../../fixtures/prom-text.ts';
import { TestAgent } from '../../fixtures/test-agent.ts';
import { startNode } from '../orchestrator/dispatch/harness.ts';
import { githubSource, newOrg, quietLogger, sendWebhook, startTestRelay, until } from '../relay/harness.ts';

await eachDatabase(t, async (t, db) => {
  await t.test('agent endpoint: an agent connecting, registering and leaving', async (t) => {
    const node = await startNode(t, db.url);
    const ws = async (name: string, labels: Record<string, string> = {}) => sampleOf(await scrape(node.url), name, { endpoint: 'agent', ...labels }) ?? 0;
    const before = { connects: await ws('svc_ws_connects_total'), open: await ws('svc_ws_connections_open') };
    const agent = await TestAgent.online({ url: node.url, agentId: 'metrics-agent' });
    t.equal(await ws('svc_ws_connects_total'), before.connects + 1, 'connect counted');
    t.equal(await ws('svc_ws_connections_open'), before.open + 1, 'open gauge up');
    t.ok((await ws('svc_ws_messages_total', { direction: 'in' })) >= 1, 'agent.register counted in');
    t.ok((await ws('svc_ws_messages_total', { direction: 'out' })) >= 1, 'agent.registered counted out');
    await agent.close();
    await until(async () => (await ws('svc_ws_disconnects_total')) >= 1, 60_000, 'the disconnect to be counted');
    t.equal(await ws('svc_ws_connections_open'), before.open, 'open gauge back down');
    // The orchestrator's own HTTP traffic is counted too (the scrapes above, by route pattern).
    t.ok((sampleOf(await scrape(node.url), 'svc_http_requests_total', { method: 'GET', route: '/metrics', status_class: '2xx' }) ?? 0) >= 1);
  });

  await t.test('relay orchestrator endpoint and the relay link: both ends of one socket', async (t) => {
    const token = await newOrg(db.pool, 'acme');
    const r = await startTestRelay(t, db.url);
    const linkMetrics = createMetrics({ defaultMetrics: false });
    const link = connectRelay({
      platformUrl: r.url,
      platformToken: token,
      orchestratorId: 'orch-metrics',
      sources: () => [githubSource('100')],
      logger: quietLogger,
      minReconnectDelayMs: 50,
      maxReconnectDelayMs: 500,
      metrics: linkMetrics,
      onDelivery: async () => ({ result: 'accepted' }),
    });
    let closed = false;
    t.teardown(async () => {
      if (!closed) await link.close();
    });
    await link.waitConnected(60_000);
    const relaySide = async (name: string, labels: Record<string, string> = {}) => sampleOf(await scrape(r.url), name, { endpoint: 'relay_orchestrator', ...labels }) ?? 0;
    const linkSide = async (name: string, labels: Record<string, string> = {}) => sampleOf(await linkMetrics.text(), name, { endpoint: 'relay_link', ...labels }) ?? 0;
    t.equal(await relaySide('svc_ws_connects_total'), 1);
    t.equal(await relaySide('svc_ws_connections_open'), 1);
    t.equal(await linkSide('svc_ws_connects_total'), 1);
    t.equal(await linkSide('svc_ws_connections_open'), 1);
    t.ok((await linkSide('svc_ws_messages_total', { direction: 'out' })) >= 1, 'hello sent');
    t.ok((await relaySide('svc_ws_messages_total', { direction: 'in' })) >= 1, 'hello received');

    // A webhook through the relay: one frame each way more on both sides.
    const outBefore = await relaySide('svc_ws_messages_total', { direction: 'out' });
    const inBefore = await linkSide('svc_ws_messages_total', { direction: 'in' });
    const answer = await sendWebhook(r.url, 'acme', { body: JSON.stringify({ hello: 1 }) });
    t.equal(answer.status, 200);
    t.ok((await relaySide('svc_ws_messages_total', { direction: 'out' })) > outBefore, 'webhook.deliver counted out at the relay');
    t.ok((await linkSide('svc_ws_messages_total', { direction: 'in' })) > inBefore, 'and in on the link');
    // The relay's HTTP metrics: the webhook route by its pattern.
    const relayText = await scrape(r.url);
    t.ok((sampleOf(relayText, 'svc_http_requests_total', { method: 'POST', status_class: '2xx' }) ?? 0) >= 1, 'the webhook POST counted');
    t.notMatch(relayText, /route="\/webhook\/acme/, 'no raw webhook URL in a route label');

    await link.close();
    closed = true;
    await until(async () => (await relaySide('svc_ws_disconnects_total')) === 1, 60_000, 'the relay to count the disconnect');
    t.equal(await relaySide('svc_ws_connections_open'), 0);
    t.equal(await linkSide('svc_ws_disconnects_total'), 1);
    t.equal(await linkSide('svc_ws_connections_open'), 0);
  });

  await t.test('a dial that never connects counts nothing', async (t) => {
    const metrics = createMetrics({ defaultMetrics: false });
    const link = connectRelay({
      platformUrl: 'http://127.0.0.1:1',
      platformToken: 'svcrt_nothing',
      orchestratorId: 'orch-nowhere',
      sources: () => [],
      logger: quietLogger,
      minReconnectDelayMs: 50,
      maxReconnectDelayMs: 100,
      metrics,
      onDelivery: async () => ({ result: 'accepted' }),
    });
    // Three dials started: the first two ended without connecting (a dial starts after the last ended).
    await until(() => link.dials >= 3, 60_000, 'three dials');
    await link.close();
    const text = await metrics.text();
    t.equal(sampleOf(text, 'svc_ws_connects_total', { endpoint: 'relay_link' }), undefined);
    t.equal(sampleOf(text, 'svc_ws_disconnects_total', { endpoint: 'relay_link' }), undefined);
  });
});
