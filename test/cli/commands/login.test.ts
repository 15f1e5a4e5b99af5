// `svc login --token`, `svc logout`, `svc org use` and `svc-admin relay pat create/list/revoke`
// in-process (runCli) against a real relay on real PostgreSQL; the config file is checked on disk
// (content and mode 0600). Exit codes: 0 success, 1 failure, 2 usage error.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { provisionOrg, migrateRelay } from '../../../kernel/relay/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { startTestRelay } from '../../kernel/relay/harness.ts';


function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) if (!(name in extra)) delete env[name];
  return env;
}

await eachDatabase(t, async (t, db) => {
  await migrateRelay(db.pool, testLogger);
  await provisionOrg(db.pool, 'acme');
  await provisionOrg(db.pool, 'umbrella');
  const relay = await startTestRelay(t, db.url);
  const home = await mkdtemp(join(tmpdir(), 'svc-login-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const env = cleanEnv({ XDG_CONFIG_HOME: home, SVC_RELAY_DATABASE_URL: db.url });
  const svc = (args: string[], more: Record<string, string> = {}) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: { ...env, ...more } });
  const admin = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env });
  const configFile = join(home, 'svc', 'config.json');
  const readConfig = async () => JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;

  let pat = '';
  let patId = '';
  await t.test('svc-admin relay pat create/list: token printed once, listed without it', async (t) => {
    const created = await admin(['relay', 'pat', 'create', 'acme', '--user', 'alice', '--name', 'laptop', '--json']);
    t.equal(created.code, 0, created.stderr);
    const out = JSON.parse(created.stdout) as { id: string; token: string; orgId: string; user: string };
    t.match(out, { orgId: 'acme', user: 'alice' });
    t.match(out.token, /^svcpat_/);
    pat = out.token;
    patId = out.id;
    const listed = await admin(['relay', 'pat', 'list', '--org', 'acme', '--json']);
    t.equal(listed.code, 0, listed.stderr);
    t.notMatch(listed.stdout, pat.slice(7), 'the token is never listed');
    t.match(JSON.parse(listed.stdout), { tokens: [{ id: patId, user: 'alice', name: 'laptop', lastUsedAt: null, revokedAt: null }] });
    const unknownOrg = await admin(['relay', 'pat', 'create', 'nobody', '--user', 'alice']);
    t.equal(unknownOrg.code, 1);
    t.match(unknownOrg.stderr, /SVC_ERR_RELAY_ORG_NOT_FOUND/);
    t.equal((await admin(['relay', 'pat', 'create', 'acme'])).code, 2, 'missing --user is a usage error');
    t.equal((await admin(['relay', 'pat', 'create', 'acme', '--user', ' '])).code, 1, 'blank user refused');
    t.equal((await admin(['relay', 'pat', 'revoke', 'not-an-id'])).code, 1);
  });

  await t.test('refusals store nothing: device or no flags without a platform url, bad token, wrong org', async (t) => {
    // The browser and device flows themselves: test/cli/commands/device-login.test.ts.
    const device = await svc(['login', '--device']);
    t.equal(device.code, 2);
    t.match(device.stderr, /no Platform address/);
    t.equal((await svc(['login'])).code, 2);
    t.equal((await svc(['login', '--token', pat, '--device'])).code, 2, '--token with --device is a usage error');
    t.equal((await svc(['login', '--token', pat])).code, 2, 'no platform url is a usage error');
    t.equal((await svc(['login', '--token', pat, '--platform-url', 'ftp://x'])).code, 2);
    const bad = await svc(['login', '--token', 'svcpat_wrong', '--platform-url', relay.url]);
    t.equal(bad.code, 1);
    t.match(bad.stderr, /SVC_ERR_RELAY_AUTH_INVALID/);
    const wrongOrg = await svc(['login', '--token', pat, '--platform-url', relay.url, '--org', 'umbrella']);
    t.equal(wrongOrg.code, 1);
    t.match(wrongOrg.stderr, /belongs to org acme/);
    await t.rejects(stat(configFile), { code: 'ENOENT' }, 'no config file written');
  });

  await t.test('login --token stores { platformUrl, org, token } with mode 0600', async (t) => {
    const res = await svc(['login', '--token', pat, '--platform-url', `${relay.url}/`, '--json']);
    t.equal(res.code, 0, res.stderr);
    t.match(JSON.parse(res.stdout), { platformUrl: relay.url, org: 'acme', user: 'alice' });
    t.same(await readConfig(), { platformUrl: relay.url, org: 'acme', token: pat });
    t.equal((await stat(configFile)).mode & 0o777, 0o600);
    t.equal((await stat(join(home, 'svc'))).mode & 0o077, 0, 'directory private too');
    const again = await svc(['login', '--token', pat]);
    t.equal(again.code, 0, 'the stored platform url is reused');
  });

  await t.test('org use switches the stored org; bad org id is a usage error', async (t) => {
    const res = await svc(['org', 'use', 'umbrella']);
    t.equal(res.code, 0, res.stderr);
    t.match(res.stdout, /now using org umbrella \(was acme\)/);
    t.equal((await readConfig())['org'], 'umbrella');
    t.equal((await svc(['org', 'use', 'bad org!'])).code, 2);
    t.equal((await readConfig())['org'], 'umbrella', 'unchanged by the refusal');
    // The PAT belongs to acme: a run route for umbrella is refused by the Platform.
    const refused = await svc(['runs', 'show', '0b7c5b0e-0000-4000-8000-000000000000']);
    t.equal(refused.code, 1);
    t.match(refused.stderr, /SVC_ERR_RELAY_AUTH_WRONG_ORG/);
    t.equal((await svc(['org', 'use', 'acme'])).code, 0);
  });

  await t.test('logout removes the token; revoked tokens cannot log in', async (t) => {
    const res = await svc(['logout']);
    t.equal(res.code, 0, res.stderr);
    t.same(await readConfig(), { platformUrl: relay.url, org: 'acme' });
    t.equal((await stat(configFile)).mode & 0o777, 0o600);
    const after = await svc(['runs', 'show', '0b7c5b0e-0000-4000-8000-000000000000']);
    t.equal(after.code, 1);
    t.match(after.stderr, /not logged in/);
    t.match((await svc(['logout'])).stdout, /nothing to do/);
    const revoked = await admin(['relay', 'pat', 'revoke', patId]);
    t.equal(revoked.code, 0, revoked.stderr);
    t.match((await admin(['relay', 'pat', 'revoke', patId])).stdout, /already revoked/);
    const login = await svc(['login', '--token', pat]);
    t.equal(login.code, 1);
    t.match(login.stderr, /SVC_ERR_RELAY_AUTH_INVALID/);
  });
});
