// Single sign-on at a real relay on real PostgreSQL, against a real certified OpenID Provider
// (`oidc-provider`, started here on 127.0.0.1 with its people and groups): the sign-in page offers
// the provider; a sign-in runs the authorization code flow with PKCE, state and nonce over real
// HTTP and opens a session of the person with the roles their groups map to; a refused action
// names the role; a device login (`svc login --device`'s protocol) through the provider yields a
// token with a refresh token; a refresh asks the provider again, and a person disabled there fails
// it and loses every token at once; forged and replayed callbacks are refused; bad provider config
// stops the relay at start with the provider's name.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { createPat } from '../../../kernel/relay/pats/index.ts';
import { csrfTokenFor } from '../../../kernel/relay/sessions/index.ts';
import { startRelay } from '../../../kernel/relay/index.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { CookieJars, freePort, signInThrough, startTestIdp, type TestIdp } from '../../fixtures/oidc-idp.ts';
import { TestBrowser, decide, newDeviceCode, pollToken } from './browser.ts';
import { newOrg, quietLogger, startTestRelay } from './harness.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-sso-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

async function configFile(name: string, sso: unknown): Promise<string> {
  const path = join(dir, `${name}.yaml`);
  await writeFile(path, stringify({ relay: { sso } }));
  return path;
}

function ssoConfig(idp: TestIdp, extra: Record<string, unknown> = {}) {
  return {
    providers: {
      corp: {
        kind: 'oidc',
        displayName: 'Corp Login',
        issuer: idp.url,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
        // oidc-provider grants offline_access (a refresh token) only with a consent prompt.
        prompt: 'consent',
        groupRoles: { 'ci-viewers': ['acme:viewer'], 'ci-release': ['acme:approver'], 'ci-devs': ['acme:developer'] },
        ...extra,
      },
    },
    tokenTtlSeconds: 600,
  };
}

await eachDatabase(t, async (t, db) => {
  await newOrg(db.pool, 'acme');
  await newOrg(db.pool, 'umbrella');
  const port = await freePort();
  const relayUrl = `http://127.0.0.1:${port}`;
  const idp = await startTestIdp({
    redirectUris: [`${relayUrl}/signin/corp/callback`],
    users: {
      alice: { name: 'Alice Example', email: 'alice@example.com', groups: ['ci-viewers'] },
      bob: { name: 'Bob Builder', email: 'bob@example.com', groups: ['ci-viewers', 'ci-release'] },
      carol: { name: 'Carol NoRole', groups: ['marketing'] },
    },
  });
  t.teardown(() => idp.close());
  const file = await configFile('good', ssoConfig(idp));
  const relay = await startTestRelay(t, db.url, { deviceIntervalSeconds: 1, env: { SVC_CONFIG_FILE: file, SVC_RELAY_PORT: String(port) } });
  t.equal(relay.url, relayUrl);

  await t.test('the sign-in page offers the provider next to the token form', async (t) => {
    const page = await new TestBrowser(relayUrl).get('/signin?next=/ui');
    t.equal(page.status, 200);
    t.match(page.html, /<a class="provider" href="\/signin\/corp\?next=%2Fui">Sign in with Corp Login<\/a>/);
    t.match(page.html, /name="token"/, 'PAT sign-in stays');
    const start = await fetch(`${relayUrl}/signin/corp?next=/ui`, { redirect: 'manual' });
    t.equal(start.status, 303);
    const to = new URL(start.headers.get('location')!);
    t.equal(to.origin, idp.url, 'sent to the provider');
    t.equal(to.searchParams.get('code_challenge_method'), 'S256', 'PKCE');
    t.match(to.searchParams.get('code_challenge'), /^[A-Za-z0-9_-]{43}$/);
    t.ok(to.searchParams.get('state'), 'state');
    t.ok(to.searchParams.get('nonce'), 'nonce');
    t.equal(to.searchParams.get('redirect_uri'), `${relayUrl}/signin/corp/callback`);
    t.match(start.headers.get('set-cookie'), /^svc_sso_state=[^;]+; Path=\/signin\/; HttpOnly; SameSite=Lax; Max-Age=600$/);
    const unknown = await fetch(`${relayUrl}/signin/nope`, { redirect: 'manual' });
    t.equal(unknown.status, 404);
    t.match(await unknown.text(), /SVC_ERR_RELAY_SSO_PROVIDER_UNKNOWN/);
  });

  await t.test('a viewer signs in, sees runs, and is told approving needs the approver role', async (t) => {
    const result = await signInThrough(`${relayUrl}/signin/corp?next=/ui`, idp.url, 'alice');
    t.equal(result.status, 200, result.html.slice(0, 300));
    t.match(result.html, /Signed in as Alice Example in org acme/);
    t.match(result.html, /<meta http-equiv="refresh" content="0;url=\/ui">/);
    t.ok(result.session, 'a session cookie');
    const cookie = result.session!;
    const who = await (await fetch(`${relayUrl}/v1/whoami`, { headers: { cookie } })).json();
    t.same(who, { orgId: 'acme', kind: 'pat', user: 'alice' });
    const person = await db.pool.one(sql.unsafe`select provider, subject, login, display_name, email, groups from relay_people where login = 'alice'`);
    t.same(person, { provider: 'corp', subject: 'alice', login: 'alice', display_name: 'Alice Example', email: 'alice@example.com', groups: ['ci-viewers'] });
    const runs = await fetch(`${relayUrl}/v1/orgs/acme/runs`, { headers: { cookie } });
    t.equal(runs.status, 200, 'a viewer lists runs');
    const page = await fetch(`${relayUrl}/ui/orgs/acme/runs`, { headers: { cookie } });
    t.equal(page.status, 200, 'and sees the runs page');
    const approve = await fetch(`${relayUrl}/v1/orgs/acme/runs/${randomUUID()}/approve`, {
      method: 'POST',
      headers: { cookie, origin: relayUrl, 'x-csrf-token': csrfTokenFor(cookie.split('=')[1]!), 'content-type': 'application/json' },
      body: '{}',
    });
    t.equal(approve.status, 403);
    const body = (await approve.json()) as { error: { code: string; message: string } };
    t.equal(body.error.code, 'SVC_ERR_RELAY_ROLE_REQUIRED');
    t.match(body.error.message, /needs the approver role in org acme \(runs\.approve\); you have the role\(s\) viewer/);
    const other = await fetch(`${relayUrl}/v1/orgs/umbrella/runs`, { headers: { cookie } });
    t.equal(other.status, 403, 'another org stays closed');
  });

  await t.test('a person without any role is refused at sign-in, and nothing opens', async (t) => {
    const result = await signInThrough(`${relayUrl}/signin/corp?next=/ui`, idp.url, 'carol');
    t.equal(result.status, 403);
    t.match(result.html, /SVC_ERR_RELAY_SSO_NO_ROLE/);
    t.match(result.html, /carol signed in with Corp Login but has no role in any org.*\(marketing\)/s);
    t.equal(result.session, undefined);
  });

  await t.test('forged, replayed and cross-browser callbacks are refused', async (t) => {
    const forged = await fetch(`${relayUrl}/signin/corp/callback?code=x&state=y`, { redirect: 'manual' });
    t.equal(forged.status, 401);
    t.match(await forged.text(), /SVC_ERR_RELAY_SSO_CALLBACK_INVALID/);
    // A callback reached by another browser (no state cookie): login CSRF.
    const jars = new CookieJars();
    const start = await fetch(`${relayUrl}/signin/corp?next=/ui`, { redirect: 'manual' });
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const stray = await fetch(`${relayUrl}/signin/corp/callback?code=x&state=${state}`, { redirect: 'manual', headers: { cookie: 'svc_sso_state=other' } });
    t.equal(stray.status, 401);
    t.match(await stray.text(), /this browser did not start this sign-in/);
    // Replaying a finished sign-in's callback with its state cookie: used once.
    const done = await signInThrough(`${relayUrl}/signin/corp?next=/ui`, idp.url, 'alice', jars);
    t.equal(done.status, 200);
    const callback = done.visited.find((v) => v.includes('/signin/corp/callback'))!.replace(/^GET /, '');
    const replayState = new URL(callback).searchParams.get('state')!;
    const replay = await fetch(callback, { redirect: 'manual', headers: { cookie: `svc_sso_state=${replayState}` } });
    t.equal(replay.status, 401);
    t.match(await replay.text(), /expired or was already used/);
    const rows = (await db.pool.oneFirst(sql.unsafe`select count(*)::int from relay_sso_logins where expires_at > now() and provider = 'corp'`)) as number;
    t.ok(rows >= 1, 'the unfinished sign-in is still waiting; finished ones are gone');
  });

  await t.test('device login through the provider: a working token, refresh, and the person disabled at the provider', async (t) => {
    const code = await newDeviceCode(relayUrl);
    const jars = new CookieJars();
    const signedIn = await signInThrough(`${relayUrl}/signin/corp?next=${encodeURIComponent(`/device?user_code=${code.user_code}`)}`, idp.url, 'bob', jars);
    t.equal(signedIn.status, 200);
    const browser = new TestBrowser(relayUrl);
    browser.cookie = signedIn.session;
    const approved = await decide(browser, code.user_code, 'approve');
    t.equal(approved.status, 200);
    // The poll interval is moved, not waited out: no earlier poll counts against this one.
    await db.pool.query(sql.unsafe`update relay_device_codes set last_polled_at = null`);
    const polled = await pollToken(relayUrl, code.device_code);
    t.equal(polled.status, 200, JSON.stringify(polled.body));
    const { access_token: token, refresh_token: refresh, expires_at: expiresAt, user, org } = polled.body as Record<string, string>;
    t.equal(user, 'bob');
    t.equal(org, 'acme');
    t.match(refresh, /^svcrt_[A-Za-z0-9_-]{43}$/);
    const lifetime = Date.parse(expiresAt!) - Date.now();
    t.ok(lifetime > 590_000 && lifetime <= 600_000, 'lives tokenTtlSeconds');
    const bearer = (value: string) => ({ authorization: `Bearer ${value}` });
    t.equal((await fetch(`${relayUrl}/v1/orgs/acme/runs`, { headers: bearer(token!) })).status, 200, 'the token works');

    const refresh1 = await fetch(`${relayUrl}/v1/token/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: refresh }) });
    t.equal(refresh1.status, 200);
    const renewed = (await refresh1.json()) as Record<string, string>;
    t.not(renewed['access_token'], token);
    t.not(renewed['refresh_token'], refresh);
    t.equal((await fetch(`${relayUrl}/v1/whoami`, { headers: bearer(token!) })).status, 401, 'the old token stops');
    t.equal((await fetch(`${relayUrl}/v1/whoami`, { headers: bearer(renewed['access_token']!) })).status, 200, 'the new one works');
    const reused = await fetch(`${relayUrl}/v1/token/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: refresh }) });
    t.equal(reused.status, 401, 'a refresh token works once');
    t.equal(((await reused.json()) as { error: { code: string } }).error.code, 'SVC_ERR_RELAY_REFRESH_INVALID');

    // The directory disables bob: the next refresh asks the provider, which refuses.
    idp.users.get('bob')!.disabled = true;
    const refused = await fetch(`${relayUrl}/v1/token/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: renewed['refresh_token'] }) });
    t.equal(refused.status, 401);
    const error = ((await refused.json()) as { error: { code: string; message: string } }).error;
    t.equal(error.code, 'SVC_ERR_RELAY_REFRESH_REFUSED');
    t.match(error.message, /the identity provider corp no longer accepts bob: invalid_grant/);
    t.equal((await fetch(`${relayUrl}/v1/whoami`, { headers: bearer(renewed['access_token']!) })).status, 401, "the person's token stops at once");
    t.equal((await fetch(`${relayUrl}/v1/whoami`, { headers: { cookie: signedIn.session! } })).status, 401, '… and their browser session');
    const again = await signInThrough(`${relayUrl}/signin/corp?next=/ui`, idp.url, 'bob');
    t.not(again.status, 200, 'signing in again is refused while the provider refuses');
    t.equal(again.session, undefined);

    // Enabled again at the provider: a new sign-in works and clears the mark.
    idp.users.get('bob')!.disabled = false;
    const back = await signInThrough(`${relayUrl}/signin/corp?next=/ui`, idp.url, 'bob');
    t.equal(back.status, 200);
    t.equal((await fetch(`${relayUrl}/v1/whoami`, { headers: { cookie: back.session! } })).status, 200);
  });

  await t.test('refresh input is checked before anything is looked up', async (t) => {
    for (const body of ['{}', '{"refresh_token":"svcpat_x"}', '{"refresh_token":"svcrt_x","extra":1}', 'not json']) {
      const answer = await fetch(`${relayUrl}/v1/token/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      t.equal(answer.status, 400, body);
    }
    const unknown = await fetch(`${relayUrl}/v1/token/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: `svcrt_${'a'.repeat(43)}` }) });
    t.equal(unknown.status, 401);
  });

  await t.test('a flood of sign-in starts from one address is cut off (last: it spends this address\'s budget)', async (t) => {
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 40 && refused === undefined; i++) {
      const answer = await fetch(`${relayUrl}/signin/corp?next=/ui`, { redirect: 'manual' });
      statuses.push(answer.status);
      if (answer.status === 429) refused = answer;
      else await answer.body?.cancel();
    }
    t.ok(refused, `refused after ${statuses.length - 1} starts`);
    t.ok(statuses.length <= 31, 'at most the per-minute budget passes');
    t.match(refused!.headers.get('retry-after'), /^\d+$/);
    t.match(await refused!.text(), /SVC_ERR_RELAY_SSO_RATE_LIMITED/);
  });

  await t.test('a token narrowed by scopes: an operator token with scope viewer cannot approve', async (t) => {
    const scoped = await createPat(db.pool, 'acme', 'ci-bot', 'bot', { scopes: ['viewer'] });
    const headers = { authorization: `Bearer ${scoped.token}`, 'content-type': 'application/json' };
    t.equal((await fetch(`${relayUrl}/v1/orgs/acme/runs`, { headers })).status, 200);
    const approve = await fetch(`${relayUrl}/v1/orgs/acme/runs/${randomUUID()}/approve`, { method: 'POST', headers, body: '{}' });
    t.equal(approve.status, 403);
    t.match(((await approve.json()) as { error: { message: string } }).error.message, /needs the approver role/);
    const wider = await fetch(`${relayUrl}/v1/pats`, { method: 'POST', headers, body: JSON.stringify({ scopes: ['admin'] }) });
    t.equal(wider.status, 403, 'a scoped token cannot mint a wider one');
    const unscoped = await fetch(`${relayUrl}/v1/pats`, { method: 'POST', headers, body: JSON.stringify({ name: 'child' }) });
    t.equal(unscoped.status, 201);
    const child = (await unscoped.json()) as { token: string };
    const childApprove = await fetch(`${relayUrl}/v1/orgs/acme/runs/${randomUUID()}/approve`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${child.token}` }, body: '{}' });
    t.equal(childApprove.status, 403, "the child keeps the parent's scopes");
  });
});

await t.test('bad provider config stops the relay at start, naming the provider', async (t) => {
  const idp = await startTestIdp({ redirectUris: ['http://127.0.0.1:1/signin/corp/callback'], users: {} });
  t.teardown(() => idp.close());
  const base = { kind: 'oidc', clientId: 'c', clientSecret: 's' };
  const cases: Array<[string, unknown, RegExp]> = [
    ['no issuer', { providers: { corp: base } }, /relay\.sso\.providers\.corp: an oidc provider needs "issuer"/],
    ['http issuer elsewhere', { providers: { corp: { ...base, issuer: 'http://login.example.com' } } }, /the issuer must be https/],
    ['github field on oidc', { providers: { corp: { ...base, issuer: idp.url, apiUrl: 'https://api.github.com' } } }, /"apiUrl" is for kind github only/],
    ['oidc field on github', { providers: { gh: { kind: 'github', clientId: 'c', clientSecret: 's', issuer: 'https://github.com' } } }, /relay\.sso\.providers\.gh: "issuer" is for kind oidc only/],
    ['unknown role', { providers: { corp: { ...base, issuer: idp.url, groupRoles: { g: ['acme:owner'] } } } }, /groupRoles/],
    ['unknown field', { providers: { corp: { ...base, issuer: idp.url, clientSecrett: 'x' } } }, /clientSecrett/],
    ['unreachable issuer', { providers: { corp: { ...base, issuer: 'http://127.0.0.1:1/realm' } } }, /relay\.sso\.providers\.corp: the provider could not be reached or its discovery is not valid/],
    ['issuer mismatch', { providers: { corp: { ...base, issuer: `${idp.url}/other` } } }, /relay\.sso\.providers\.corp: the provider could not be reached or its discovery is not valid/],
    ['mapping to a missing org', { providers: { corp: { ...base, issuer: idp.url, groupRoles: { g: ['nosuch:viewer'] } } } }, /maps group "g" to org "nosuch", which does not exist/],
  ];
  await eachDatabase(t, async (t, db) => {
    await newOrg(db.pool, 'acme');
    for (const [name, sso, expected] of cases) {
      const file = await configFile(name.replace(/\W/g, '-'), sso);
      await t.rejects(
        startRelay({ logger: quietLogger, env: { SVC_CONFIG_FILE: file, SVC_RELAY_DATABASE_URL: db.url, SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: '/nonexistent' } }),
        { message: expected },
        name,
      );
    }
  });
});
