// `metrics.port` (docs/config.md): /metrics moves to a listener of its own; the public listener
// no longer serves it. Real orchestrator, real sockets.
import t from 'tap';
import { eachDatabase } from '../../fixtures/db.ts';
import { startNode } from './dispatch/harness.ts';

t.test('metrics.port: /metrics on its own listener, not on the server port', async (t) => {
  await eachDatabase(t, async (t, db) => {
    // Port 0: the system picks a free one (as for server.port); the orchestrator reports it.
    const node = await startNode(t, db.url, { SVC_METRICS_PORT: '0' });
    const metricsUrl = node.orch.metricsUrl;
    t.ok(metricsUrl, 'the metrics listener is up');
    t.not(new URL(metricsUrl!).port, new URL(node.url).port, 'another port than the server');
    const scraped = await fetch(`${metricsUrl}/metrics`);
    t.equal(scraped.status, 200);
    t.match(scraped.headers.get('content-type'), /text\/plain/);
    const text = await scraped.text();
    t.match(text, /svc_orch_config_version/, 'the orchestrator registry');
    t.match(text, /svc_orch_agents_connected/, 'subsystem metrics too');
    t.equal((await fetch(`${node.url}/metrics`)).status, 404, 'the server port no longer serves /metrics');
    t.equal((await fetch(`${node.url}/healthz`)).status, 200, 'the server port still serves the rest');
    t.equal((await fetch(`${metricsUrl}/other`)).status, 404, 'the metrics listener serves /metrics only (and /healthz)');
  });
});

t.test('without metrics.port: /metrics on the server port, no second listener', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    t.equal(node.orch.metricsUrl, undefined);
    t.equal((await fetch(`${node.url}/metrics`)).status, 200);
  });
});
