// Sign-in with GitHub (an OAuth app) at a real relay on real PostgreSQL, against the fake GitHub
// API speaking GitHub's wire format (test/fixtures/fake-github-oauth.ts): the web flow with state
// and PKCE, the person and their org and team groups from /user, /user/orgs and /user/teams, the
// roles those groups map to, a device login's token and its refresh, which asks GitHub again and
// fails once the authorization is revoked; a code GitHub refuses is a refused sign-in.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { generateAppKeyPair, startFakeGithub } from '../../fixtures/fake-github.ts';
import { freePort, signInThrough } from '../../fixtures/oidc-idp.ts';
import { TestBrowser, decide, newDeviceCode, pollToken } from './browser.ts';
import { newOrg, startTestRelay } from './harness.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-sso-github-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

await eachDatabase(t, async (t, db) => {
  await newOrg(db.pool, 'acme');
  const github = await startFakeGithub({ appId: '1', publicKey: generateAppKeyPair().publicKey });
  t.teardown(() => github.close());
  const port = await freePort();
  const relayUrl = `http://127.0.0.1:${port}`;
  github.oauth.app = { clientId: 'Iv1.fakeclient', clientSecret: 'fake-github-client-secret', callbackUrl: `${relayUrl}/signin/gh/callback` };
  github.oauth.users.set('octocat', { id: 583231, login: 'octocat', name: 'The Octocat', email: null, orgs: ['acme-gh'], teams: ['acme-gh/release'] });
  github.oauth.users.set('hubot', { id: 1000, login: 'hubot', name: null, email: null, orgs: ['other'], teams: [] });
  const file = join(dir, 'relay.yaml');
  await writeFile(
    file,
    stringify({
      relay: {
        sso: {
          providers: {
            gh: { kind: 'github', clientId: 'Iv1.fakeclient', clientSecret: 'fake-github-client-secret', webUrl: github.url, apiUrl: github.url, groupRoles: { 'acme-gh': ['acme:viewer'], 'acme-gh/release': ['acme:approver'] } },
          },
        },
      },
    }),
  );
  await startTestRelay(t, db.url, { deviceIntervalSeconds: 1, env: { SVC_CONFIG_FILE: file, SVC_RELAY_PORT: String(port) } });

  await t.test('the sign-in page offers GitHub; the flow uses state and PKCE', async (t) => {
    const page = await new TestBrowser(relayUrl).get('/signin');
    t.match(page.html, /Sign in with GitHub/);
    const start = await fetch(`${relayUrl}/signin/gh?next=/ui`, { redirect: 'manual' });
    const to = new URL(start.headers.get('location')!);
    t.equal(`${to.origin}${to.pathname}`, `${github.url}/login/oauth/authorize`);
    t.equal(to.searchParams.get('client_id'), 'Iv1.fakeclient');
    t.equal(to.searchParams.get('redirect_uri'), `${relayUrl}/signin/gh/callback`);
    t.equal(to.searchParams.get('code_challenge_method'), 'S256');
    t.ok(to.searchParams.get('state'));
    t.equal(to.searchParams.get('scope'), 'read:user user:email read:org');
  });

  await t.test('octocat signs in: groups from orgs and teams, roles from them', async (t) => {
    github.oauth.signedIn = 'octocat';
    const result = await signInThrough(`${relayUrl}/signin/gh?next=/ui`, github.url, 'octocat');
    t.equal(result.status, 200, result.html.slice(0, 300));
    t.match(result.html, /Signed in as The Octocat in org acme/);
    const person = await db.pool.one(sql.unsafe`select provider, subject, login, display_name, groups from relay_people where provider = 'gh'`);
    t.same(person, { provider: 'gh', subject: '583231', login: 'octocat', display_name: 'The Octocat', groups: ['acme-gh', 'acme-gh/release'] });
    const who = await (await fetch(`${relayUrl}/v1/whoami`, { headers: { cookie: result.session! } })).json();
    t.same(who, { orgId: 'acme', kind: 'pat', user: 'octocat' });
    const roles = await db.pool.anyFirst(sql.unsafe`select role from relay_group_roles where provider = 'gh' order by role`);
    t.same(roles, ['approver', 'viewer'], 'the mapping from the config');
  });

  await t.test('a GitHub user without a mapped group is refused; a refused code is a refused sign-in', async (t) => {
    github.oauth.signedIn = 'hubot';
    const result = await signInThrough(`${relayUrl}/signin/gh?next=/ui`, github.url, 'hubot');
    t.equal(result.status, 403);
    t.match(result.html, /hubot signed in with GitHub but has no role in any org/);
    // The code is exchanged with a verifier GitHub does not accept: replay the callback with a stale code.
    github.oauth.signedIn = 'octocat';
    const start = await fetch(`${relayUrl}/signin/gh?next=/ui`, { redirect: 'manual' });
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const cookie = /svc_sso_state=[^;]+/.exec(start.headers.get('set-cookie') ?? '')![0];
    const bad = await fetch(`${relayUrl}/signin/gh/callback?code=not-a-code&state=${state}`, { redirect: 'manual', headers: { cookie } });
    t.equal(bad.status, 401);
    t.match(await bad.text(), /bad_verification_code: The code passed is incorrect or expired/);
    t.match(github.oauth.tokenAnswers.at(-1), { error: 'bad_verification_code' });
  });

  await t.test('device login with GitHub; the refresh asks GitHub and fails once the app is revoked', async (t) => {
    github.oauth.signedIn = 'octocat';
    const code = await newDeviceCode(relayUrl);
    const signedIn = await signInThrough(`${relayUrl}/signin/gh?next=${encodeURIComponent(`/device?user_code=${code.user_code}`)}`, github.url, 'octocat');
    const browser = new TestBrowser(relayUrl);
    browser.cookie = signedIn.session;
    t.equal((await decide(browser, code.user_code, 'approve')).status, 200);
    // The poll interval is moved, not waited out: no earlier poll counts against this one.
    await db.pool.query(sql.unsafe`update relay_device_codes set last_polled_at = null`);
    const polled = await pollToken(relayUrl, code.device_code);
    t.equal(polled.status, 200);
    const { refresh_token: refresh } = polled.body as Record<string, string>;
    const post = (value: string) => fetch(`${relayUrl}/v1/token/refresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: value }) });
    const ok = await post(refresh!);
    t.equal(ok.status, 200);
    const renewed = (await ok.json()) as Record<string, string>;
    github.oauth.revokeTokensOf('octocat');
    const refused = await post(renewed['refresh_token']!);
    t.equal(refused.status, 401);
    t.match(((await refused.json()) as { error: { message: string } }).error.message, /the identity provider gh no longer accepts octocat: GitHub refused the authorization \(401 on \/user\)/);
    t.equal((await fetch(`${relayUrl}/v1/whoami`, { headers: { authorization: `Bearer ${renewed['access_token']}` } })).status, 401);
  });
});
