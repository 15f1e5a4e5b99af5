// The relay side of dashboard requests with orchestrators that misbehave, over real sockets: one
// that never answers (504 after the timeout) and one that drops its socket mid-request (503 at
// once, not after the timeout). Orchestrators are the real relay link without the runs/api.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createPat } from '../../../../kernel/relay/pats/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { fakeOrchestrator, newOrg, startTestRelay } from '../harness.ts';


await eachDatabase(t, async (t, db) => {
  const orgToken = await newOrg(db.pool, 'acme');
  const pat = (await createPat(db.pool, 'acme', 'alice')).token;
  const relay = await startTestRelay(t, db.url, { dashboardTimeoutMs: 800 });
  const headers = { authorization: `Bearer ${pat}` };

  await t.test('an orchestrator that never answers: 504 after the timeout', async (t) => {
    const orch = await fakeOrchestrator(t, relay.url, orgToken, { id: 'silent' });
    const started = Date.now();
    const res = await fetch(`${relay.url}/v1/orgs/acme/runs/${randomUUID()}`, { headers });
    t.equal(res.status, 504);
    t.match(await res.json(), { error: { code: 'SVC_ERR_RELAY_ORCHESTRATOR_TIMEOUT' } });
    t.ok(Date.now() - started >= 700);
    await orch.close();
  });

  // Found by test/fuzz/relay-api.test.ts: an empty key (`…/secrets/ctx/`) went out in a frame the
  // orchestrator refuses without answering, so the caller waited for the 504.
  await t.test('a request the orchestrator would refuse unanswered is a 400 at once, not a 504 after the timeout', async (t) => {
    const relaySlow = await startTestRelay(t, db.url, { dashboardTimeoutMs: 3_600_000 });
    const orch = await fakeOrchestrator(t, relaySlow.url, orgToken, { id: 'strict' });
    const started = Date.now();
    for (const path of ['/v1/orgs/acme/secrets/ctx/', '/v1/orgs/acme/secrets//KEY']) {
      const res = await fetch(`${relaySlow.url}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ value: 'do-not-echo-1234' }) });
      t.equal(res.status, 400, path);
      const body = (await res.json()) as { error: { code: string; message: string } };
      t.equal(body.error.code, 'SVC_ERR_HTTP_BAD_REQUEST');
      t.match(body.error.message, /the link refuses (key|context)/);
      t.notMatch(body.error.message, 'do-not-echo-1234', 'the value is not quoted');
    }
    t.ok(Date.now() - started < 300_000, 'hang guard: refused, not after the hour-long timeout (which would be a 504)');
    await orch.close();
  });

  await t.test('an orchestrator that disconnects mid-request: 503 without waiting out the timeout', async (t) => {
    const relaySlow = await startTestRelay(t, db.url, { dashboardTimeoutMs: 3_600_000 });
    // It leaves once the request reached it (mid-request), not after a fixed time.
    let leave!: () => void;
    const orch = await fakeOrchestrator(t, relaySlow.url, orgToken, { id: 'leaving', onMessage: () => leave() });
    leave = () => void orch.close();
    const started = Date.now();
    const pending = fetch(`${relaySlow.url}/orgs/acme/runs/${randomUUID()}/rerun`, { method: 'POST', headers });
    const res = await pending;
    t.equal(res.status, 503);
    t.match(await res.json(), { error: { code: 'SVC_ERR_RELAY_ORCHESTRATOR_GONE' } });
    t.ok(Date.now() - started < 300_000, 'hang guard: failed, not after the hour-long timeout (which would be a 504)');
  });
});
