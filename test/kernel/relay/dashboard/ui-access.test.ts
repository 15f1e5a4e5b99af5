// Access to the web dashboard's routes over plain HTTP, against a real relay and orchestrator
// (startPlatformStack): every page, stream and action refuses a request without credentials (a
// page GET is sent to sign in; the rest answer 401) and a token of another org (403); a session
// cookie's action needs the CSRF token and the relay's own origin; with them it acts. A page
// never carries the token; pages carry the Content-Security-Policy. The event log lists a
// delivery relayed by the orchestrator, with its steps and payload, and the same delivery sent
// again past the relay's one-minute window (its clock moved) as duplicate; the streams send events.
import t from 'tap';
import { eachDatabase } from '../../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { until } from '../../../fixtures/runs.ts';
import { DEDUP_WINDOW_MS } from '../../../../kernel/relay/index.ts';


await eachDatabase(t, async (t, db) => {
  let relayClockOffset = 0;
  const stack = await startPlatformStack(t, db, { relayDedupNow: () => performance.now() + relayClockOffset });
  const base = stack.relayUrl;
  const alicePat = await stack.pat('alice');
  const alice = stack.auth(alicePat);
  const mallory = stack.auth(await stack.pat('mallory', OTHER_ORG));
  const { runId, deliveryId, body } = await stack.pushRun();
  const org = `/ui/orgs/${ORG}`;

  const pages = [`${org}/runs`, `${org}/runs/${runId}`, `${org}/runs/${runId}/logs`, `${org}/events`, `${org}/agents`, `${org}/events/${encodeURIComponent(deliveryId)}/payload`];
  const streams = [`${org}/runs/events`, `${org}/runs/${runId}/logs/stream`];
  const actions = ['approve', 'reject', 'rerun', 'cancel'].map((a) => `${org}/runs/${runId}/${a}`);
  // Refused before any orchestrator is asked, so an id no attestation has does (ui-run-detail.test.ts reads a real one).
  const downloads = [`${org}/runs/${runId}/attestations/00000000-0000-4000-8000-000000000000`];

  await t.test('without credentials: pages go to sign-in, streams and actions answer 401', async (t) => {
    for (const path of [...pages, ...downloads]) {
      const res = await fetch(base + path, { redirect: 'manual' });
      t.equal(res.status, 303, `GET ${path}`);
      t.equal(res.headers.get('location'), `/signin?next=${encodeURIComponent(path)}`);
    }
    for (const path of streams) t.equal((await fetch(base + path)).status, 401, `GET ${path}`);
    for (const path of actions) t.equal((await fetch(base + path, { method: 'POST', redirect: 'manual' })).status, 401, `POST ${path}`);
    const bad = await fetch(base + `${org}/runs`, { headers: { authorization: 'Bearer svcpat_not-a-token' } });
    t.equal(bad.status, 401, 'an unknown bearer token is 401, not a redirect');
  });

  await t.test("another org's token: 403 on every route and action, nothing done", async (t) => {
    for (const path of [...pages, ...streams, ...downloads]) t.equal((await fetch(base + path, { headers: mallory })).status, 403, `GET ${path}`);
    for (const path of actions) t.equal((await fetch(base + path, { method: 'POST', headers: mallory, redirect: 'manual' })).status, 403, `POST ${path}`);
    const row = await db.pool.one(await import('../../../../kernel/services/db/index.ts').then(({ sql }) => sql.unsafe`select status, cancelled_by from runs where id = ${runId}`));
    t.not((row as { status: string }).status, 'cancelled', 'the run was not cancelled');
  });

  await t.test('the org token reads every page; no page carries the token; CSP on pages', async (t) => {
    for (const path of pages) {
      const res = await fetch(base + path, { headers: alice });
      const text = await res.text();
      t.equal(res.status, 200, `GET ${path}`);
      t.match(res.headers.get('content-security-policy'), /default-src 'self'/);
      t.notOk(text.includes(alicePat), `${path} does not carry the token`);
    }
    const events = await (await fetch(base + `${org}/events`, { headers: alice })).text();
    t.match(events, new RegExp(`data-delivery="${deliveryId}" data-outcome="matched"`), 'the delivery is in the event log as matched');
    t.match(events, /class="pipeline"/, 'with its pipeline steps');
    const payload = await (await fetch(base + `${org}/events/${encodeURIComponent(deliveryId)}/payload`, { headers: alice })).text();
    t.match(payload, /&quot;ref&quot;/, 'the payload is shown, escaped');
  });

  await t.test('the same delivery sent again past the relay window shows as duplicate', async (t) => {
    // Inside the minute the relay answers the repeat itself; its clock moved past the window, the
    // repeat reaches the orchestrator, which counts it on the delivery's one record.
    relayClockOffset += DEDUP_WINDOW_MS + 1_000;
    const again = await stack.pushRun(deliveryId, body);
    t.equal(again.runId, runId, 'no second run');
    const row = await until('the event log to count the repeat', async () => {
      const events = await (await fetch(base + `${org}/events`, { headers: alice })).text();
      const li = new RegExp(`<li class="delivery" data-delivery="${deliveryId}"[^]*?</li>`).exec(events)?.[0];
      return li?.includes('s-duplicate') ? li : undefined;
    }, 20_000, 100);
    t.match(row, /duplicate ×1/, 'the delivery shows as duplicate, counted once');
    t.match(row, /<dt>Received again<\/dt><dd>1 time\(s\)<\/dd>/);
  });

  await t.test('the streams send the rows and the log status as Server-Sent Events', async (t) => {
    /** Reads events from a stream until `want` is seen (or 20 s), then closes it. */
    const read = async (path: string, want: string): Promise<string> => {
      const abort = new AbortController();
      const res = await fetch(base + path, { headers: alice, signal: abort.signal });
      t.equal(res.headers.get('content-type'), 'text/event-stream; charset=utf-8');
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = '';
      const deadline = Date.now() + 20_000;
      while (!text.includes(want) && Date.now() < deadline) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      abort.abort();
      return text;
    };
    // The relay's run index learns of the run from the orchestrator's status messages: the
    // stream sends the rows again when they change.
    const rows = await read(`${org}/runs/events`, `data-run=\\"${runId}\\"`);
    t.match(rows, /event: runs\ndata: \{"html":"/, 'the rows, rendered');
    t.ok(rows.includes(`data-run=\\"${runId}\\"`), 'with the pushed run');
    t.equal((await fetch(`${base}${org}/runs/events?status=bogus`, { headers: alice })).status, 400, 'a bad filter is refused before the stream opens');
    const log = await read(`${org}/runs/${runId}/logs/stream`, 'event: status');
    t.match(log, /event: status\ndata: \{"status":"[a-z_]+","terminal":(true|false)\}/, 'the log stream says the run status');
  });

  await t.test('a session acts only with its CSRF token from the relay origin', async (t) => {
    const signin = await fetch(`${base}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
      body: new URLSearchParams({ token: alicePat, next: `${org}/runs` }).toString(),
    });
    t.equal(signin.status, 303);
    const cookie = signin.headers.get('set-cookie')!.split(';')[0]!;
    const runPage = await (await fetch(base + `${org}/runs/${runId}`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(runPage)?.[1];
    t.ok(csrf, 'the run page carries the session CSRF token in its forms');
    const cancel = `${base}${org}/runs/${runId}/cancel`;
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    const headers = { cookie, 'content-type': 'application/x-www-form-urlencoded' };
    t.equal((await fetch(cancel, { method: 'POST', redirect: 'manual', headers: { ...headers, origin: base }, body: form({}) })).status, 403, 'no CSRF token: 403');
    t.equal((await fetch(cancel, { method: 'POST', redirect: 'manual', headers: { ...headers, origin: base }, body: form({ csrf: 'x'.repeat(43) }) })).status, 403, 'a wrong CSRF token: 403');
    t.equal((await fetch(cancel, { method: 'POST', redirect: 'manual', headers: { ...headers, origin: 'http://evil.example' }, body: form({ csrf: csrf! }) })).status, 403, 'another origin: 403');
    const done = await fetch(cancel, { method: 'POST', redirect: 'manual', headers: { ...headers, origin: base }, body: form({ csrf: csrf! }) });
    t.equal(done.status, 303, 'with both it acts');
    t.match(done.headers.get('location'), new RegExp(`${org}/runs/${runId}\\?notice=Cancel`));
    const json = await fetch(cancel, { method: 'POST', headers: { ...headers, origin: base, accept: 'application/json', 'x-csrf-token': csrf! }, body: form({}) });
    t.equal(json.status, 200, 'the fetch form (X-CSRF-Token header, JSON answer) works too');
    t.match(await json.json(), { ok: true });
  });
});
