// `svc login --device` through an identity provider, as a real process against a real relay on
// real PostgreSQL and a real OpenID Provider (oidc-provider on 127.0.0.1): the printed code is
// approved by a person who signs in at the provider (its login and consent forms over HTTP); the
// stored token works for `svc runs list`; once expired it is renewed on its own through the relay,
// which asks the provider again; after the person is disabled at the provider the next renewal
// fails with SVC_ERR_CLI_LOGIN_REFRESH_FAILED and the token stops working. `svc pat create --scope`
// narrows a token of hers to a role.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { eachDatabase } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { freePort, signInThrough, startTestIdp } from '../../fixtures/oidc-idp.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { startSvc } from '../../fixtures/svc-process.ts';
import { newOrg, startTestRelay } from '../../kernel/relay/harness.ts';
import { TestBrowser, decide } from '../../kernel/relay/browser.ts';

await eachDatabase(t, async (t, db) => {
  await newOrg(db.pool, 'acme');
  const port = await freePort();
  const relayUrl = `http://127.0.0.1:${port}`;
  const idp = await startTestIdp({ redirectUris: [`${relayUrl}/signin/corp/callback`], users: { dana: { name: 'Dana Dev', groups: ['ci-devs'] } } });
  t.teardown(() => idp.close());
  const home = await mkdtemp(join(tmpdir(), 'svc-sso-login-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const configYaml = join(home, 'relay.yaml');
  await writeFile(
    configYaml,
    stringify({
      relay: {
        sso: {
          providers: {
            corp: { kind: 'oidc', issuer: idp.url, clientId: idp.clientId, clientSecret: idp.clientSecret, prompt: 'consent', scopes: ['openid', 'profile', 'groups', 'offline_access'], groupRoles: { 'ci-devs': ['acme:developer'] } },
          },
          tokenTtlSeconds: 3600,
        },
      },
    }),
  );
  await startTestRelay(t, db.url, { deviceIntervalSeconds: 1, env: { SVC_CONFIG_FILE: configYaml, SVC_RELAY_PORT: String(port) } });

  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN', 'SVC_CONFIG_FILE']) delete env[name];
  const configFile = join(home, 'svc', 'config.json');
  const readConfig = async () => JSON.parse(await readFile(configFile, 'utf8')) as Record<string, string>;
  const svc = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env });
  /** Moves the stored expiry into the past, as the hours going by would. */
  const expireStoredToken = async () => writeFile(configFile, JSON.stringify({ ...(await readConfig()), expiresAt: new Date(Date.now() - 1000).toISOString() }), { mode: 0o600 });

  await t.test('svc login --device through the provider, renewal, and the person disabled at the provider', async (t) => {
    const cli = startSvc(['login', '--device', '--platform-url', relayUrl], env);
    const [, , userCode] = await cli.waitFor(/open (\S+) and enter the code ([A-Z]{4}-[A-Z]{4})/);
    const signedIn = await signInThrough(`${relayUrl}/signin/corp?next=${encodeURIComponent(`/device?user_code=${userCode}`)}`, idp.url, 'dana');
    t.equal(signedIn.status, 200, 'signed in at the provider');
    const browser = new TestBrowser(relayUrl);
    browser.cookie = signedIn.session;
    t.equal((await decide(browser, userCode!, 'approve')).status, 200, 'approved');
    const result = await cli.done;
    t.equal(result.code, 0, result.stderr);
    t.match(result.stdout, /logged in to .* as dana \(org acme\)/);
    const first = await readConfig();
    t.match(first, { platformUrl: relayUrl, org: 'acme', token: /^svcpat_/, refreshToken: /^svcrt_/ });
    const lifetime = Date.parse(first['expiresAt']!) - Date.now();
    t.ok(lifetime > 3500_000 && lifetime <= 3600_000, 'the token lives the configured hour');

    const runs = await svc(['runs', 'list', '--json']);
    t.equal(runs.code, 0, runs.stderr);
    t.equal((await readConfig())['token'], first['token'], 'a fresh token is used as it is');

    await expireStoredToken();
    const renewed = await svc(['runs', 'list', '--json']);
    t.equal(renewed.code, 0, renewed.stderr);
    const second = await readConfig();
    t.not(second['token'], first['token'], 'renewed through the relay and the provider');
    t.not(second['refreshToken'], first['refreshToken']);
    t.ok(Date.parse(second['expiresAt']!) > Date.now() + 3500_000);

    // A token of her own narrowed to viewer: lists runs, may not re-run although dana is a developer.
    const scoped = await svc(['pat', 'create', '--name', 'wallboard', '--scope', 'viewer', '--json']);
    t.equal(scoped.code, 0, scoped.stderr);
    const wallboard = (JSON.parse(scoped.stdout) as { token: string }).token;
    t.equal((await fetch(`${relayUrl}/v1/orgs/acme/runs`, { headers: { authorization: `Bearer ${wallboard}` } })).status, 200);
    const rerun = await fetch(`${relayUrl}/orgs/acme/runs/00000000-0000-4000-8000-000000000000/rerun`, { method: 'POST', headers: { authorization: `Bearer ${wallboard}` } });
    t.equal(rerun.status, 403, 'the scope narrows her developer role');
    t.equal((await svc(['pat', 'create', '--scope', 'owner'])).code, 2, 'an unknown scope is a usage error');

    idp.users.get('dana')!.disabled = true;
    await expireStoredToken();
    const refused = await svc(['runs', 'list']);
    t.equal(refused.code, 1, 'the next renewal fails');
    t.match(refused.stderr, /SVC_ERR_CLI_LOGIN_REFRESH_FAILED/);
    t.match(refused.stderr, /the identity provider corp no longer accepts dana/);
    const direct = await fetch(`${relayUrl}/v1/whoami`, { headers: { authorization: `Bearer ${second['token']}` } });
    t.equal(direct.status, 401, 'and the token stops working at once');
  });
});
