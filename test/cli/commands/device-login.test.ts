// `svc login --device` and plain `svc login` (browser) as real processes against a real relay on
// real PostgreSQL: the code the CLI prints is approved (or denied) over HTTP as a browser would —
// sign-in page, token form, cookie, /device, Approve with the CSRF token — and the stored token
// then works for `svc runs list`; the config file stays 0600. The browser opener of plain
// `svc login` is a stand-in script on PATH that records the address (a browser is outside us).
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createPat, listPats } from '../../../kernel/relay/pats/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { startSvc } from '../../fixtures/svc-process.ts';
import { newOrg, startTestRelay } from '../../kernel/relay/harness.ts';
import { TestBrowser, decide } from '../../kernel/relay/browser.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { until } from '../../fixtures/runs.ts';

await eachDatabase(t, async (t, db) => {
  await newOrg(db.pool, 'acme');
  await newOrg(db.pool, 'umbrella');
  const alice = await createPat(db.pool, 'acme', 'alice', 'laptop');
  const relay = await startTestRelay(t, db.url, { deviceIntervalSeconds: 1 });
  const home = await mkdtemp(join(tmpdir(), 'svc-device-login-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) delete env[name];
  const configFile = join(home, 'svc', 'config.json');
  const readConfig = async () => JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>;
  // Commands that run to their end go in-process; the device flows above stay real processes
  // (startSvc): the test answers what they print while they poll.
  const svc = (args: string[], more: NodeJS.ProcessEnv = {}) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: { ...env, ...more } });
  const browser = new TestBrowser(relay.url);

  await t.test('usage: --device with --token is exit 2; no Platform address is exit 2', async (t) => {
    t.equal((await svc(['login', '--device', '--token', alice.token, '--platform-url', relay.url])).code, 2);
    t.equal((await svc(['login', '--device'])).code, 2);
    t.equal((await svc(['login'])).code, 2);
    await t.rejects(stat(configFile), { code: 'ENOENT' });
  });

  await t.test('svc login --device: approved in the browser, stored 0600, works for svc runs list', async (t) => {
    const cli = startSvc(['login', '--device', '--platform-url', relay.url], env);
    const [, uri, userCode] = await cli.waitFor(/open (\S+) and enter the code ([A-Z]{4}-[A-Z]{4})/);
    t.equal(uri, `${relay.url}/device`);
    // Two polls answered authorization_pending while nobody has approved yet (seen in the
    // record's last poll time changing, not assumed from a sleep).
    const lastPoll = async () => (await db.pool.maybeOneFirst(sql.unsafe`select last_polled_at::text from relay_device_codes where user_code = ${userCode!}`)) as string | null;
    const polled = await until('a first poll', async () => (await lastPoll()) ?? undefined, 30_000);
    await until('a second poll', async () => ((await lastPoll()) !== polled ? true : undefined), 30_000);
    // The browser: the page sends the person to sign in first, then back.
    const first = await browser.get(`/device?user_code=${userCode}`);
    t.equal(first.status, 303);
    const signedIn = await browser.signIn(alice.token, `/device?user_code=${userCode}`);
    t.equal(signedIn.status, 303);
    const approved = await decide(browser, userCode!, 'approve', signedIn.location!);
    t.equal(approved.status, 200);
    const result = await cli.done;
    t.equal(result.code, 0, result.stderr);
    t.match(result.stdout, /logged in to .* as alice \(org acme\)/);
    const config = await readConfig();
    t.match(config, { platformUrl: relay.url, org: 'acme' });
    t.match(config['token'], /^svcpat_/);
    t.not(config['token'], alice.token, 'a new token, not the one the browser signed in with');
    t.equal((await stat(configFile)).mode & 0o777, 0o600);
    const mine = (await listPats(db.pool, 'acme', 'alice')).filter((p) => p.name === 'svc login');
    t.equal(mine.length, 1, 'the new token is listed as alice\'s "svc login" token');
    const runs = await svc(['runs', 'list', '--json']);
    t.equal(runs.code, 0, runs.stderr);
    t.same(JSON.parse(runs.stdout), { runs: [], nextBefore: null });

    // org use and logout keep the file private.
    t.equal((await svc(['org', 'use', 'umbrella'])).code, 0);
    t.equal((await stat(configFile)).mode & 0o777, 0o600);
    t.equal((await svc(['org', 'use', 'acme'])).code, 0);
    t.equal((await svc(['logout'])).code, 0);
    t.same(await readConfig(), { platformUrl: relay.url, org: 'acme' });
    t.equal((await stat(configFile)).mode & 0o777, 0o600);
  });

  await t.test('svc login (browser): the opener gets verification_uri_complete', async (t) => {
    const bin = join(home, 'opener-bin');
    await mkdir(bin, { recursive: true });
    const opened = join(home, 'opened.txt');
    await writeFile(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`);
    await chmod(join(bin, 'xdg-open'), 0o755);
    const cli = startSvc(['login', '--json'], { ...env, PATH: `${bin}:${env['PATH'] ?? ''}` });
    await cli.waitFor(/Opened the approval page in your browser/);
    const url = await readFile(opened, 'utf8');
    t.match(url, new RegExp(`^${relay.url.replace(/[.]/g, '\\.')}/device\\?user_code=[A-Z]{4}-[A-Z]{4}$`));
    const userCode = new URL(url).searchParams.get('user_code')!;
    t.equal((await decide(browser, userCode, 'approve', url)).status, 200, 'the link opens the page with the code filled in');
    const result = await cli.done;
    t.equal(result.code, 0, result.stderr);
    t.match(JSON.parse(result.stdout), { platformUrl: relay.url, org: 'acme', user: 'alice' });
    t.equal((await stat(configFile)).mode & 0o777, 0o600);
    t.equal((await svc(['runs', 'list'])).code, 0);
  });

  await t.test('svc login without any opener prints the address and keeps polling', async (t) => {
    const empty = join(home, 'empty-bin');
    await mkdir(empty, { recursive: true });
    const cli = startSvc(['login'], { ...env, PATH: empty });
    const [, userCode] = await cli.waitFor(/enter the code ([A-Z]{4}-[A-Z]{4})/);
    await cli.waitFor(/Could not open a browser here/);
    t.equal((await decide(browser, userCode!, 'approve')).status, 200);
    const result = await cli.done;
    t.equal(result.code, 0, result.stderr);
  });

  await t.test('denied in the browser: exit 1, the stored login is unchanged', async (t) => {
    const before = await readFile(configFile, 'utf8');
    const cli = startSvc(['login', '--device'], env);
    const [, userCode] = await cli.waitFor(/enter the code ([A-Z]{4}-[A-Z]{4})/);
    t.equal((await decide(browser, userCode!, 'deny')).status, 200);
    const result = await cli.done;
    t.equal(result.code, 1);
    t.match(result.stderr, /SVC_ERR_CLI_LOGIN_DENIED/);
    t.equal(await readFile(configFile, 'utf8'), before);
  });

  await t.test('--org of another org than the approver: refused, the new token revoked', async (t) => {
    const cli = startSvc(['login', '--device', '--org', 'umbrella'], env);
    const [, userCode] = await cli.waitFor(/enter the code ([A-Z]{4}-[A-Z]{4})/);
    t.equal((await decide(browser, userCode!, 'approve')).status, 200);
    const result = await cli.done;
    t.equal(result.code, 1);
    t.match(result.stderr, /approver signed in to org acme, not umbrella \(it was revoked\)/);
    const live = (await listPats(db.pool, 'acme', 'alice')).filter((p) => p.name === 'svc login' && p.revokedAt === null);
    t.equal(live.length, 3, 'only the three logins that were stored stay live');
  });

  await t.test('expired before approval: exit 1, nothing stored', async (t) => {
    const short = await startTestRelay(t, db.url, { deviceIntervalSeconds: 1, deviceCodeTtlSeconds: 2 });
    const before = await readFile(configFile, 'utf8');
    const result = await svc(['login', '--device', '--platform-url', short.url]);
    t.equal(result.code, 1);
    t.match(result.stderr, /SVC_ERR_CLI_LOGIN_EXPIRED/);
    t.equal(await readFile(configFile, 'utf8'), before);
  });
});
