// Device login and browser sessions of a real relay on real PostgreSQL over real HTTP: sign-in
// with a PAT (cookie flags), the approval page, approve/deny, wrong/used/expired codes, CSRF and
// Origin refusals, slow_down, the session on dashboard read routes and its CSRF on changes,
// sign-out, and a revoked token ending its sessions.
import { sql } from '../../../kernel/services/db/index.ts';
import t from 'tap';
import { createPat, revokePat } from '../../../kernel/relay/pats/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { newOrg, startTestRelay } from './harness.ts';
import { TestBrowser, csrfOf, decide, newDeviceCode, pollToken } from './browser.ts';


const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

await eachDatabase(t, async (t, db) => {
  const platformToken = await newOrg(db.pool, 'acme');
  const alice = await createPat(db.pool, 'acme', 'alice', 'laptop');
  // A long interval: a second poll in the same test is always "too fast".
  const relay = await startTestRelay(t, db.url, { deviceIntervalSeconds: 30 });
  const url = relay.url;

  await t.test('sign-in page and session cookie', async (t) => {
    const browser = new TestBrowser(url);
    const unsigned = await browser.get('/device?user_code=bcdf-ghjk');
    t.equal(unsigned.status, 303, 'not signed in: sent to sign in');
    t.equal(unsigned.location, `/signin?next=${encodeURIComponent('/device?user_code=BCDF-GHJK')}`);
    const form = await browser.get(unsigned.location!);
    t.equal(form.status, 200);
    t.match(form.html, /<label for="token">Personal access token<\/label>/);
    t.notMatch(form.html, /<script|https?:\/\//, 'no script and no outside address on the page');
    const signedIn = await browser.post('/signin', { token: alice.token, next: '/device?user_code=BCDF-GHJK' });
    t.equal(signedIn.status, 303);
    t.equal(signedIn.location, '/device?user_code=BCDF-GHJK');
    t.match(signedIn.setCookie, /^svc_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    t.notMatch(signedIn.setCookie, /Secure/, 'plain http: no Secure flag');
    const page = await browser.get('/device?user_code=BCDF-GHJK');
    t.equal(page.status, 200);
    t.match(page.html, /value="BCDF-GHJK"/);
    t.match(page.html, /Signed in as <strong>alice<\/strong> \(org acme\)/);
    t.notMatch(page.html, alice.token.slice(7), 'the token is not on the page');
    t.notMatch(page.html, browser.cookie!.split('=')[1]!, 'the session value is not on the page');

    // Behind an https proxy the cookie is Secure.
    const proxied = await fetch(`${url}/signin`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-proto': 'https', origin: url.replace('http:', 'https:') },
      body: new URLSearchParams({ token: alice.token }).toString(),
    });
    t.equal(proxied.status, 303);
    t.match(proxied.headers.get('set-cookie'), /; Secure$/);
    t.equal(proxied.headers.get('location'), '/device', 'a missing next goes to /device');

    const firstCookie = browser.cookie!;
    const outside = await browser.post('/signin', { token: alice.token, next: '//evil.example/x' });
    t.equal(outside.location, '/device', 'next is a local path only');
    t.not(browser.cookie, firstCookie, 'signing in again gives a new session');
    const old = await fetch(`${url}/device`, { redirect: 'manual', headers: { cookie: firstCookie } });
    t.equal(old.status, 303, '… and ends the one the browser had');
  });

  await t.test('sign-in refusals store nothing', async (t) => {
    const browser = new TestBrowser(url);
    const bad = await browser.signIn('svcpat_wrong');
    t.equal(bad.status, 401);
    t.match(bad.html, /SVC_ERR_RELAY_SIGNIN_INVALID/);
    t.equal(bad.setCookie, null);
    t.equal((await browser.signIn(platformToken)).status, 401, 'the org platform token is no person');
    const cross = await browser.post('/signin', { token: alice.token }, { origin: 'http://evil.example' });
    t.equal(cross.status, 403);
    t.match(cross.html, /SVC_ERR_RELAY_CROSS_ORIGIN/);
    t.equal(cross.setCookie, null);
    t.equal(browser.cookie, undefined);
  });

  await t.test('device code: shape, pending, slow_down', async (t) => {
    const code = await newDeviceCode(url);
    t.match(code.user_code, USER_CODE);
    t.match(code.device_code, /^[A-Za-z0-9_-]{43}$/);
    t.equal(code.verification_uri, `${url}/device`);
    t.equal(code.verification_uri_complete, `${url}/device?user_code=${code.user_code}`);
    t.equal(code.expires_in, 600);
    t.equal(code.interval, 30);
    const first = await pollToken(url, code.device_code);
    t.equal(first.status, 400);
    t.match(first.body, { error: 'authorization_pending', code: 'SVC_ERR_RELAY_DEVICE_AUTHORIZATION_PENDING' });
    const fast = await pollToken(url, code.device_code);
    t.equal(fast.status, 400);
    t.match(fast.body, { error: 'slow_down', interval: 35, code: 'SVC_ERR_RELAY_DEVICE_SLOW_DOWN' });
    const faster = await pollToken(url, code.device_code);
    t.match(faster.body, { error: 'slow_down', interval: 40 }, 'each slow_down adds 5 s');
    t.match((await pollToken(url, 'A'.repeat(43))).body, { error: 'invalid_grant' });
    const noCode = await fetch(`${url}/v1/device/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"grant_type":"password"}' });
    t.equal(noCode.status, 400);
    t.match(await noCode.json(), { error: 'invalid_request' });
  });

  await t.test('approve: the next poll gets a new token of the approver, once', async (t) => {
    const browser = new TestBrowser(url);
    await browser.signIn(alice.token);
    const code = await newDeviceCode(url);
    // Typed by hand, in lower case and without the dash, on the page without a code.
    const approved = await decide(browser, code.user_code.replace('-', '').toLowerCase(), 'approve', '/device');
    t.equal(approved.status, 200);
    t.match(approved.html, /Approved/);
    const got = await pollToken(url, code.device_code);
    t.equal(got.status, 200);
    t.match(got.body, { token_type: 'bearer', org: 'acme', user: 'alice', expires_at: null });
    t.match(got.body['access_token'], /^svcpat_/);
    const who = await fetch(`${url}/v1/whoami`, { headers: { authorization: `Bearer ${String(got.body['access_token'])}` } });
    t.same(await who.json(), { orgId: 'acme', kind: 'pat', user: 'alice' });
    const audit = await db.pool.any(sql.unsafe`
      select actor_kind, actor_id, actor_name, action, outcome from relay_audit_outbox where target = ${`token:${String(got.body['token_id'])}`}`);
    t.same(audit, [{ actor_kind: 'token', actor_id: alice.id, actor_name: 'alice', action: 'token.create', outcome: 'ok' }], 'one audit record: the token, created by the approving token');
    t.match((await pollToken(url, code.device_code)).body, { error: 'invalid_grant' }, 'the token is handed out once');
    const again = await decide(browser, code.user_code, 'approve');
    t.equal(again.status, 404, 'a used user code cannot be approved again');
    t.match(again.html, /SVC_ERR_RELAY_DEVICE_USER_CODE_INVALID/);
  });

  await t.test('deny, wrong code, malformed decision', async (t) => {
    const browser = new TestBrowser(url);
    await browser.signIn(alice.token);
    const code = await newDeviceCode(url);
    const denied = await decide(browser, code.user_code, 'deny');
    t.equal(denied.status, 200);
    t.match(denied.html, /Denied/);
    const polled = await pollToken(url, code.device_code);
    t.equal(polled.status, 400);
    t.match(polled.body, { error: 'access_denied', code: 'SVC_ERR_RELAY_DEVICE_ACCESS_DENIED' });
    t.equal((await decide(browser, code.user_code, 'approve')).status, 404, 'a denied code cannot be approved after');

    const wrong = await decide(browser, 'BBBB-BBBB', 'approve');
    t.equal(wrong.status, 404);
    t.match(wrong.html, /mistyped, already used, or expired/);
    const page = await browser.get('/device');
    const nonsense = await browser.post('/device', { csrf: csrfOf(page.html), user_code: 'AEIOU-0', decision: 'approve' });
    t.equal(nonsense.status, 404);
    const noDecision = await browser.post('/device', { csrf: csrfOf(page.html), user_code: code.user_code, decision: 'maybe' });
    t.equal(noDecision.status, 400);
    t.match(noDecision.html, /SVC_ERR_RELAY_DEVICE_DECISION_INVALID/);
  });

  await t.test('CSRF and Origin: missing, forged, cross-origin, no origin; the code stays pending', async (t) => {
    const browser = new TestBrowser(url);
    await browser.signIn(alice.token);
    const other = new TestBrowser(url);
    await other.signIn(alice.token);
    const code = await newDeviceCode(url);
    const page = await browser.get(`/device?user_code=${code.user_code}`);
    const csrf = csrfOf(page.html);
    t.not(csrfOf((await other.get('/device')).html), csrf, 'each session has its own CSRF token');

    const missing = await browser.post('/device', { user_code: code.user_code, decision: 'approve' });
    t.equal(missing.status, 403);
    t.match(missing.html, /SVC_ERR_RELAY_CSRF_INVALID/);
    const forged = await browser.post('/device', { csrf: 'x'.repeat(43), user_code: code.user_code, decision: 'approve' });
    t.equal(forged.status, 403);
    const otherSession = await browser.post('/device', { csrf: csrfOf((await other.get('/device')).html), user_code: code.user_code, decision: 'approve' });
    t.equal(otherSession.status, 403, "another session's token does not fit");
    const cross = await browser.post('/device', { csrf, user_code: code.user_code, decision: 'approve' }, { origin: 'http://evil.example' });
    t.equal(cross.status, 403);
    t.match(cross.html, /SVC_ERR_RELAY_CROSS_ORIGIN/);
    const nullOrigin = await browser.post('/device', { csrf, user_code: code.user_code, decision: 'approve' }, { origin: 'null' });
    t.equal(nullOrigin.status, 403);
    const noOrigin = await browser.post('/device', { csrf, user_code: code.user_code, decision: 'approve' }, { origin: undefined });
    t.equal(noOrigin.status, 403, 'neither Origin nor Referer: refused');
    const byReferer = await browser.post('/device', { csrf, user_code: code.user_code, decision: 'approve' }, { origin: undefined, referer: `${url}/device` });
    t.equal(byReferer.status, 200, 'a same-origin Referer stands in for Origin');
  });

  await t.test('unauthenticated: approval refused, pages redirect', async (t) => {
    const code = await newDeviceCode(url);
    const anonymous = new TestBrowser(url);
    const post = await anonymous.post('/device', { csrf: 'x', user_code: code.user_code, decision: 'approve' });
    t.equal(post.status, 401);
    t.match(post.html, /SVC_ERR_RELAY_SESSION_INVALID/);
    anonymous.cookie = 'svc_session=' + 'A'.repeat(43);
    t.equal((await anonymous.post('/device', { csrf: 'x', user_code: code.user_code, decision: 'approve' })).status, 401, 'an unknown session is none');
    t.equal((await anonymous.get('/device')).status, 303);
    t.match((await pollToken(url, code.device_code)).body, { error: 'authorization_pending' }, 'nothing was approved');
  });

  await t.test('the session on dashboard routes: reads with the cookie, changes need CSRF', async (t) => {
    const browser = new TestBrowser(url);
    await browser.signIn(alice.token);
    const who = await fetch(`${url}/v1/whoami`, { headers: { cookie: browser.cookie! } });
    t.same(await who.json(), { orgId: 'acme', kind: 'pat', user: 'alice' });
    const runs = await fetch(`${url}/v1/orgs/acme/runs`, { headers: { cookie: browser.cookie! } });
    t.equal(runs.status, 200);
    const noCsrf = await fetch(`${url}/v1/pats`, { method: 'POST', headers: { cookie: browser.cookie!, origin: url, 'content-type': 'application/json' }, body: '{}' });
    t.equal(noCsrf.status, 403);
    t.match(await noCsrf.json(), { error: { code: 'SVC_ERR_RELAY_CSRF_INVALID' } });
    const csrf = csrfOf((await browser.get('/device')).html);
    const cross = await fetch(`${url}/v1/pats`, { method: 'POST', headers: { cookie: browser.cookie!, origin: 'http://evil.example', 'x-csrf-token': csrf, 'content-type': 'application/json' }, body: '{}' });
    t.equal(cross.status, 403);
    const made = await fetch(`${url}/v1/pats`, { method: 'POST', headers: { cookie: browser.cookie!, origin: url, 'x-csrf-token': csrf, 'content-type': 'application/json' }, body: '{"name":"from the browser"}' });
    t.equal(made.status, 201);
    t.match(await made.json(), { user: 'alice', orgId: 'acme', name: 'from the browser' });
  });

  await t.test('sign-out and revocation end the session', async (t) => {
    const browser = new TestBrowser(url);
    await browser.signIn(alice.token);
    const page = await browser.get('/device');
    const kept = browser.cookie!;
    const noCsrf = await browser.post('/signout', {});
    t.equal(noCsrf.status, 403, 'sign-out is CSRF-checked too');
    const out = await browser.post('/signout', { csrf: csrfOf(page.html) });
    t.equal(out.status, 303);
    t.equal(out.location, '/signin');
    t.match(out.setCookie, /^svc_session=; .*Max-Age=0/);
    t.equal(browser.cookie, undefined);
    browser.cookie = kept;
    t.equal((await browser.get('/device')).status, 303, 'the old cookie no longer signs in');

    const bob = await createPat(db.pool, 'acme', 'bob');
    const bobs = new TestBrowser(url);
    await bobs.signIn(bob.token);
    t.equal((await bobs.get('/device')).status, 200);
    await revokePat(db.pool, bob.id);
    t.equal((await bobs.get('/device')).status, 303, "revoking the token ends the browser's session");
  });

  await t.test('an approval of a token revoked before the poll gives nothing', async (t) => {
    const carol = await createPat(db.pool, 'acme', 'carol');
    const browser = new TestBrowser(url);
    await browser.signIn(carol.token);
    const code = await newDeviceCode(url);
    t.equal((await decide(browser, code.user_code, 'approve')).status, 200);
    await revokePat(db.pool, carol.id);
    t.match((await pollToken(url, code.device_code)).body, { error: 'access_denied' });
  });

  await t.test('expiry: past expires_in the code is neither approvable nor pollable', async (t) => {
    const short = await startTestRelay(t, db.url, { deviceCodeTtlSeconds: 1, deviceIntervalSeconds: 1 });
    const browser = new TestBrowser(short.url);
    await browser.signIn(alice.token);
    const code = await newDeviceCode(short.url);
    t.equal(code.expires_in, 1);
    // Past expires_in: the code's expiry moved back, not waited for.
    await db.pool.query(sql.unsafe`update relay_device_codes set expires_at = now() - interval '1 second' where user_code = ${code.user_code}`);
    const late = await decide(browser, code.user_code, 'approve');
    t.equal(late.status, 404);
    const polled = await pollToken(short.url, code.device_code);
    t.equal(polled.status, 400);
    t.match(polled.body, { error: 'expired_token', code: 'SVC_ERR_RELAY_DEVICE_EXPIRED' });
  });

  await t.test('code creation is rate limited per address', async (t) => {
    const fresh = await startTestRelay(t, db.url);
    const answers: number[] = [];
    for (let i = 0; i < 12; i++) answers.push((await fetch(`${fresh.url}/v1/device/code`, { method: 'POST' })).status);
    t.same(answers.slice(0, 10), Array(10).fill(200));
    t.equal(answers.at(-1), 429);
    const limited = await fetch(`${fresh.url}/v1/device/code`, { method: 'POST' });
    t.equal(limited.status, 429);
    t.ok(Number(limited.headers.get('retry-after')) >= 1);
    t.match(await limited.json(), { error: { code: 'SVC_ERR_RELAY_DEVICE_RATE_LIMITED' } });
  });
});
