// `readFile` of the github provider against the fake GitHub API over real HTTP: a file at a sha
// through the contents API (raw), null for a missing path, an unknown sha or a directory, and
// hostile paths refused before any request is made.
import t from 'tap';
import { createPluginHost } from '../../../../core/plugins/index.ts';
import type { ProviderSource, RepositoryRef } from '../../../../core/extension-points/provider.ts';
import { githubProvider } from '../../../../plugins/providers/github/index.ts';
import { generateAppKeyPair, startFakeGithub } from '../../../fixtures/fake-github.ts';

const APP_ID = '4343';
const keys = generateAppKeyPair();
const SHA1 = '1'.repeat(40);
const SHA2 = '2'.repeat(40);

t.test('github readFile', async (t) => {
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  fake.addInstallation('99', ['acme/app']);
  fake.addCommit('acme/app', SHA1, { files: { Dockerfile: 'FROM scratch\n', 'docs/a b.md': 'spaced', 'docs/x.md': 'x' } });
  const host = createPluginHost({ config: { 'provider:github': {} } });
  await host.signInAll({ builtIns: [githubProvider] });
  t.teardown(() => host.close());
  const github = host.get('provider', 'github');
  const source: ProviderSource = { id: 'src-1', orgId: 'org-1', routingKey: `github:${APP_ID}`, settings: { appId: APP_ID, apiBaseUrl: fake.url }, credentials: { privateKey: keys.privateKeyPem } };
  const repository: RepositoryRef = { id: '42', fullName: 'acme/app', installationId: '99' };
  t.type(github.readFile, 'function', 'the provider offers readFile');
  const read = (path: string, sha = SHA1) => github.readFile!({ source, repository, sha, path });

  t.equal(Buffer.from((await read('Dockerfile'))!).toString(), 'FROM scratch\n', 'a file at the sha');
  t.equal(Buffer.from((await read('docs/a b.md'))!).toString(), 'spaced', 'a path with a space');
  t.equal(await read('missing.txt'), null, 'no file: null');
  t.equal(await read('Dockerfile', SHA2), null, 'unknown sha: null (GitHub answers 404)');
  t.equal(await read('docs'), null, 'a directory is not a file');
  t.ok(fake.log.some((l) => l.includes('/contents/Dockerfile?ref=' + SHA1)), 'contents API at the sha');

  const before = fake.calls.contents;
  for (const bad of ['', '/etc/passwd', '../secret', 'a/../../b', '-n', 'a//b', './a', 'a\\b', 'a\0b', 'a\nb']) {
    await t.rejects(read(bad), { code: 'SVC_ERR_PROVIDER_PATH_INVALID' }, `refused: ${JSON.stringify(bad)}`);
  }
  await t.rejects(read('Dockerfile', 'not-a-sha'), 'a bad sha is refused');
  t.equal(fake.calls.contents, before, 'no request for refused input');
});
