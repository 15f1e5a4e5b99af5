// The `github` provider against a fake GitHub REST API over real HTTP, with the real Octokit
// client: installation tokens (JWT checked, cached, refreshed near expiry), the lock file at a
// sha, changed files with pagination, checkout credentials, and every bad input refused.
import { pino } from 'pino';
import t from 'tap';
import { createPluginHost, type SourceProviderExtensionPoint } from '../../../../core/plugins/index.ts';
import type { ProviderSource, RepositoryRef } from '../../../../core/extension-points/provider.ts';
import { GithubAppClient, githubProvider, githubSourceOf } from '../../../../plugins/providers/github/index.ts';
import { generateAppKeyPair, startFakeGithub } from '../../../fixtures/fake-github.ts';

const APP_ID = '4242';
const keys = generateAppKeyPair();
const otherKeys = generateAppKeyPair();
const SHA1 = '1'.repeat(40);
const SHA2 = '2'.repeat(40);
const SHA3 = '3'.repeat(40);
const ZERO = '0'.repeat(40);
const LOCK = JSON.stringify({ version: 1, workflows: [] });

async function setup(t: { teardown(fn: () => unknown): void }, config: Record<string, unknown> = {}) {
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  fake.addInstallation('99', ['acme/app']);
  fake.addInstallation('100', ['other/repo']);
  fake.addCommit('acme/app', SHA1, { files: { 'README.md': 'hi', 'src/a.ts': 'a' } });
  fake.addCommit('acme/app', SHA2, { parent: SHA1, files: { 'README.md': 'hi', 'src/a.ts': 'a2', '.svc/svc.lock.json': LOCK, 'docs/x.md': 'x' } });
  fake.addCommit('other/repo', SHA1, { files: { '.svc/svc.lock.json': LOCK } });
  const host = createPluginHost({ config: { 'provider:github': config } });
  await host.signInAll({ builtIns: [githubProvider] });
  t.teardown(() => host.close());
  const github = host.get('provider', 'github');
  const source: ProviderSource = {
    id: 'src-1',
    orgId: 'org-1',
    routingKey: `github:${APP_ID}`,
    settings: { appId: APP_ID, apiBaseUrl: fake.url },
    credentials: { privateKey: keys.privateKeyPem },
  };
  return { fake, github, source };
}

const repository: RepositoryRef = { id: '42', fullName: 'acme/app', installationId: '99' };

t.test('lock file at a sha, with the installation token flow', async (t) => {
  const { fake, github, source } = await setup(t);
  const bytes = await github.fetchLockFile({ source, repository, sha: SHA2 });
  t.equal(Buffer.from(bytes!).toString(), LOCK);
  t.equal(fake.calls.access_tokens, 1, 'one token minted');
  t.equal(await github.fetchLockFile({ source, repository, sha: SHA1 }), null, 'no lock at that commit: null');
  t.equal(await github.fetchLockFile({ source, repository, sha: SHA3 }), null, 'unknown sha: null');
  t.equal(fake.calls.access_tokens, 1, 'the token is cached across calls');
  t.equal(fake.calls.contents, 3);
  t.ok(fake.log.some((l) => l.includes('/contents/.svc%2Fsvc.lock.json?ref=' + SHA2) || l.includes('/contents/.svc/svc.lock.json?ref=' + SHA2)), 'contents API at the sha');
});

t.test('concurrent callers share one token request', async (t) => {
  const { fake, github, source } = await setup(t);
  const results = await Promise.all(Array.from({ length: 8 }, () => github.fetchLockFile({ source, repository, sha: SHA2 })));
  t.equal(results.filter((r) => r !== null).length, 8);
  t.equal(fake.calls.access_tokens, 1);
});

t.test('two GitHub hosts with the same installation id, asked at the same moment: each gets its own token', async (t) => {
  // github.com and a GitHub Enterprise server both have an installation 99. auth-app's own token
  // flow shared the first request in flight between them (its process-wide map is keyed by the
  // installation id alone): one host got the other's token, refused it with 401, and had been sent it.
  const { fake: first, github, source } = await setup(t);
  const second = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => second.close());
  second.addInstallation('99', ['acme/app']);
  second.addCommit('acme/app', SHA2, { files: { '.svc/svc.lock.json': LOCK } });
  const enterprise: ProviderSource = { ...source, id: 'src-enterprise', settings: { appId: APP_ID, apiBaseUrl: second.url } };
  const [a, b] = await Promise.all([github.fetchLockFile({ source, repository, sha: SHA2 }), github.fetchLockFile({ source: enterprise, repository, sha: SHA2 })]);
  t.equal(Buffer.from(a!).toString(), LOCK, 'the first host served its lock');
  t.equal(Buffer.from(b!).toString(), LOCK, 'the second host served its lock');
  t.equal(first.calls.access_tokens, 1, 'each host minted one token');
  t.equal(second.calls.access_tokens, 1);
  const [ca, cb] = await Promise.all([github.checkoutCredentials({ source, repository }), github.checkoutCredentials({ source: enterprise, repository })]);
  t.not(ca.token, cb.token, 'two tokens, one per host');
  t.ok(first.liveTokens().includes(ca.token!) && !first.liveTokens().includes(cb.token!), "the first host's token is its own");
  t.ok(second.liveTokens().includes(cb.token!) && !second.liveTokens().includes(ca.token!), "the second host's token is its own");
});

t.test('a token close to expiry is refreshed', async (t) => {
  const { fake, github, source } = await setup(t, { tokenRefreshMarginMs: 5 * 60_000 });
  fake.tokenTtlMs = 2 * 60_000; // inside the margin: never reused
  await github.checkoutCredentials({ source, repository });
  await github.checkoutCredentials({ source, repository });
  t.equal(fake.calls.access_tokens, 2, 'renewed because it expires within the margin');
  fake.tokenTtlMs = 60 * 60_000;
  const a = await github.checkoutCredentials({ source, repository });
  const b = await github.checkoutCredentials({ source, repository });
  t.equal(fake.calls.access_tokens, 3);
  t.equal(a.token, b.token, 'a fresh one-hour token is reused');
});

t.test('expiry with a controlled clock (GithubAppClient)', async (t) => {
  const { fake, source } = await setup(t);
  let now = Date.now();
  const client = new GithubAppClient({ logger: pino({ level: 'silent' }), refreshMarginMs: 60_000, requestTimeoutMs: 5_000, now: () => now });
  const gh = githubSourceOf(source);
  const first = await client.installationToken(gh, '99');
  t.ok(Math.abs(first.expiresAt.getTime() - (Date.now() + 3_600_000)) < 5_000, 'expiresAt from expires_at');
  now += 58 * 60_000;
  t.equal((await client.installationToken(gh, '99')).token, first.token, 'still two minutes left: cached');
  now += 90_000;
  const second = await client.installationToken(gh, '99');
  t.not(second.token, first.token, 'inside the last minute: renewed');
  t.equal(fake.calls.access_tokens, 2);
});

t.test('checkout credentials', async (t) => {
  const { github, source, fake } = await setup(t);
  const creds = await github.checkoutCredentials({ source, repository: { ...repository, cloneUrl: 'https://evil.test/x.git' } });
  t.equal(creds.cloneUrl, `${fake.url}/acme/app.git`, 'from configuration, never from the payload');
  t.equal(creds.username, 'x-access-token');
  t.match(creds.token, /^ghs_/);
  t.ok(fake.liveTokens().includes(creds.token!));
  t.ok(creds.expiresAt instanceof Date && creds.expiresAt.getTime() > Date.now());
  const web = await github.checkoutCredentials({ source: { ...source, settings: { ...source.settings, webBaseUrl: 'https://git.example.test/' } }, repository });
  t.equal(web.cloneUrl, 'https://git.example.test/acme/app.git');
});

t.test('changed files: compare API, paginated', async (t) => {
  const { fake, github, source } = await setup(t);
  t.same(await github.changedFiles({ source, repository, base: SHA1, head: SHA2 }), ['.svc/svc.lock.json', 'docs/x.md', 'src/a.ts']);
  t.ok(fake.log.some((l) => l.startsWith(`GET /repos/acme/app/compare/${SHA1}...${SHA2}`)));
  const many = Array.from({ length: 250 }, (_, i) => ({ filename: `f/${String(i).padStart(3, '0')}.ts` }));
  many.push({ filename: 'new/name.ts', status: 'renamed', previous_filename: 'old/name.ts' } as never);
  fake.setCompare('acme/app', SHA2, SHA3, many);
  const before = fake.calls.compare;
  const files = await github.changedFiles({ source, repository, base: SHA2, head: SHA3 });
  t.equal(fake.calls.compare - before, 3, 'three pages of 100');
  t.equal(files.length, 252);
  t.ok(files.includes('old/name.ts') && files.includes('new/name.ts'), 'a rename gives both paths');
});

t.test('changed files of a new branch (zero base): the head commit', async (t) => {
  const { fake, github, source } = await setup(t);
  t.same(await github.changedFiles({ source, repository, base: ZERO, head: SHA2 }), ['.svc/svc.lock.json', 'docs/x.md', 'src/a.ts']);
  t.equal(fake.calls.commit, 1);
  t.same(await github.changedFiles({ source, repository, base: ZERO, head: SHA1 }), ['README.md', 'src/a.ts'], 'root commit: every file');
});

t.test('installation id looked up when the repository ref has none', async (t) => {
  const { fake, github, source } = await setup(t);
  const bytes = await github.fetchLockFile({ source, repository: { id: '7', fullName: 'other/repo' }, sha: SHA1 });
  t.equal(Buffer.from(bytes!).toString(), LOCK);
  await github.fetchLockFile({ source, repository: { id: '7', fullName: 'other/repo' }, sha: SHA1 });
  t.equal(fake.calls.installation, 1, 'looked up once');
  await t.rejects(github.fetchLockFile({ source, repository: { id: '8', fullName: 'nobody/here' }, sha: SHA1 }), { code: 'SVC_ERR_GITHUB_NOT_INSTALLED' });
});

t.test('authentication failures', async (t) => {
  const { github, source } = await setup(t);
  const wrongKey = { ...source, credentials: { privateKey: otherKeys.privateKeyPem } };
  await t.rejects(github.fetchLockFile({ source: wrongKey, repository, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_AUTH' }, 'JWT signed with another key');
  const wrongApp = { ...source, settings: { ...source.settings, appId: '1' } };
  await t.rejects(github.fetchLockFile({ source: wrongApp, repository, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_AUTH' });
  await t.rejects(github.fetchLockFile({ source, repository: { ...repository, installationId: '5' }, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_NOT_FOUND' }, 'unknown installation');
  // An installation that cannot read the repository: the contents API 404s, i.e. no lock.
  t.equal(await github.fetchLockFile({ source, repository: { ...repository, installationId: '100' }, sha: SHA2 }), null);
});

t.test('GitHub unavailable', async (t) => {
  const { fake, github, source } = await setup(t);
  await github.fetchLockFile({ source, repository, sha: SHA2 });
  fake.failNext = { status: 502, count: 1 };
  await t.rejects(github.fetchLockFile({ source, repository, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_UNAVAILABLE' });
  const down = { ...source, settings: { ...source.settings, apiBaseUrl: 'http://127.0.0.1:1' } };
  await t.rejects(github.checkoutCredentials({ source: down, repository }), { code: 'SVC_ERR_GITHUB_UNAVAILABLE' });
});

t.test('bad input is refused before any request', async (t) => {
  const { fake, github, source } = await setup(t);
  const calls = () => Object.values(fake.calls).reduce((a, b) => a + b, 0);
  const start = calls();
  for (const sha of ['', 'HEAD', 'A'.repeat(40), '1'.repeat(39), `--upload-pack=x${'1'.repeat(30)}`, '../../etc/passwd', '$(id)']) {
    await t.rejects(github.fetchLockFile({ source, repository, sha }), { code: 'SVC_ERR_GITHUB_SHA' }, JSON.stringify(sha));
  }
  await t.rejects(github.changedFiles({ source, repository, base: SHA1, head: 'main' }), { code: 'SVC_ERR_GITHUB_SHA' });
  for (const fullName of ['acme', 'acme/app/x', '../app', 'acme/..', 'a b/c', 'acme/app?x=1']) {
    await t.rejects(github.fetchLockFile({ source, repository: { ...repository, fullName }, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_REPOSITORY' }, fullName);
  }
  await t.rejects(github.fetchLockFile({ source, repository: { ...repository, installationId: '9; rm' }, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_INSTALLATION_ID' });
  await t.rejects(github.fetchLockFile({ source: { ...source, settings: { appId: 'abc' } }, repository, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_SOURCE_SETTINGS', message: /appId/ });
  await t.rejects(github.fetchLockFile({ source: { ...source, settings: { ...source.settings, extra: 1 } }, repository, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_SOURCE_SETTINGS' });
  await t.rejects(github.fetchLockFile({ source: { ...source, credentials: {} }, repository, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_SOURCE_CREDENTIALS' });
  await t.rejects(github.fetchLockFile({ source: { ...source, credentials: { privateKey: 'not a key' } }, repository, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_SOURCE_CREDENTIALS' });
  t.equal(calls(), start, 'nothing reached GitHub');
});

t.test('settings schema is exposed and numeric app ids are accepted', async (t) => {
  const { github, source } = await setup(t);
  t.ok((github as SourceProviderExtensionPoint).sourceSettingsSchema);
  const numeric = { ...source, settings: { ...source.settings, appId: Number(APP_ID) } };
  t.ok(await github.fetchLockFile({ source: numeric, repository, sha: SHA2 }));
});

t.test('a lock file over the size limit is refused', async (t) => {
  const { github, source } = await setup(t, { maxLockFileBytes: 10 });
  await t.rejects(github.fetchLockFile({ source, repository, sha: SHA2 }), { code: 'SVC_ERR_GITHUB_LOCK_TOO_LARGE' });
});

t.test('a directory at the lock path is not a lock file', async (t) => {
  const { fake, github, source } = await setup(t);
  fake.addCommit('acme/app', SHA3, { files: { '.svc/svc.lock.json/inner': 'x' } });
  t.equal(await github.fetchLockFile({ source, repository, sha: SHA3 }), null);
});
