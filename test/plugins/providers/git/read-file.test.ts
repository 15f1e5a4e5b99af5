// `readFile` of the git provider against a real git remote: a file at a sha, null for a missing
// path, a directory or a symlink, the file as it was at an older commit, and hostile paths refused
// before git runs (no option injection, no escaping the tree).
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createPluginHost } from '../../../../core/plugins/index.ts';
import type { ProviderSource, RepositoryRef } from '../../../../core/extension-points/provider.ts';
import { gitProvider } from '../../../../plugins/providers/git/index.ts';
import { createGitRemote, git } from '../../../fixtures/git-repos.ts';

t.test('git readFile', async (t) => {
  const cacheDir = await mkdtemp(join(tmpdir(), 'svc-git-read-'));
  t.teardown(() => rm(cacheDir, { recursive: true, force: true }));
  const host = createPluginHost({ config: { 'provider:git': { cacheDir } } });
  await host.signInAll({ builtIns: [gitProvider] });
  t.teardown(() => host.close());
  const provider = host.get('provider', 'git');
  const remote = await createGitRemote(t);
  const first = await remote.commit({ Dockerfile: 'FROM scratch\n', 'docs/x.md': 'x', '-n': 'dash' }, 'first');
  await symlink('Dockerfile', join(remote.work, 'link'));
  await git(remote.work, ['add', 'link']);
  const second = await remote.commit({ Dockerfile: 'FROM alpine\n' }, 'second');
  await remote.push('main');
  const source: ProviderSource = { id: '6f1c2b8e-0000-4000-8000-0000000000aa', orgId: 'org-1', routingKey: 'git:x', settings: { remoteUrl: remote.url, repository: 'acme/app' }, credentials: {} };
  const repository: RepositoryRef = { id: 'acme/app', fullName: 'acme/app' };
  const read = (path: string, sha = second) => provider.readFile!({ source, repository, sha, path });

  t.equal(Buffer.from((await read('Dockerfile'))!).toString(), 'FROM alpine\n', 'the file at the head commit');
  t.equal(Buffer.from((await read('Dockerfile', first))!).toString(), 'FROM scratch\n', 'the file as it was at an older commit');
  t.equal(Buffer.from((await read('docs/x.md'))!).toString(), 'x', 'a nested file');
  t.equal(await read('missing.txt'), null, 'no file: null');
  t.equal(await read('docs'), null, 'a directory is not a file');
  t.equal(await read('link'), null, 'a symlink is not read through');
  t.equal(await read('Dockerfile', first.replace(/^./, (c) => (c === 'f' ? 'e' : 'f'))).catch((e: { code?: string }) => e.code), 'SVC_ERR_GIT_UNKNOWN_SHA', 'an unknown commit is an error, not "no file"');

  for (const bad of ['', '/etc/passwd', '../secret', 'docs/../../x', '-n', '--output=/tmp/x', 'a//b', './Dockerfile', 'a\\b', 'a\0b']) {
    await t.rejects(read(bad), { code: 'SVC_ERR_PROVIDER_PATH_INVALID' }, `refused: ${JSON.stringify(bad)}`);
  }
  await t.rejects(read('Dockerfile', '--upload-pack=x'), 'a bad sha is refused');
});
