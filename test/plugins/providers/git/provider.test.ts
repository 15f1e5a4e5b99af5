// The `git` provider against real git repositories in temp directories: lock files at a sha,
// changed files, first pushes, mirrors kept per source, concurrent use, and hostile input that
// must never reach git as an option or a transport.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, readdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createPluginHost } from '../../../../core/plugins/index.ts';
import type { ProviderSource, RepositoryRef, SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';
import { gitProvider, remoteUrlProblem } from '../../../../plugins/providers/git/index.ts';
import { createGitRemote, git, ZERO_SHA, type Teardown } from '../../../fixtures/git-repos.ts';

const LOCK = JSON.stringify({ version: 1, workflows: [{ name: 'ci' }] });

async function setup(t: Teardown, config: Record<string, unknown> = {}) {
  const cacheDir = await mkdtemp(join(tmpdir(), 'svc-git-cache-'));
  t.teardown(() => rm(cacheDir, { recursive: true, force: true }));
  const host = createPluginHost({ config: { 'provider:git': { cacheDir, ...config } } });
  await host.signInAll({ builtIns: [gitProvider] });
  t.teardown(() => host.close());
  const provider = host.get('provider', 'git');
  const remote = await createGitRemote(t);
  const source = (id = '6f1c2b8e-0000-4000-8000-000000000001', remoteUrl = remote.url): ProviderSource => ({
    id,
    orgId: 'org-1',
    routingKey: `git:${id}`,
    settings: { remoteUrl, repository: 'acme/app' },
    credentials: {},
  });
  return { provider, remote, source, cacheDir };
}

const repository: RepositoryRef = { id: 'acme/app', fullName: 'acme/app' };

t.test('lock file at a sha; none there gives null', async (t) => {
  const { provider, remote, source } = await setup(t);
  const first = await remote.commit({ 'README.md': 'hello' }, 'first');
  const second = await remote.commit({ '.svc/svc.lock.json': LOCK, 'src/a.ts': 'a' }, 'add lock');
  await remote.push();
  t.equal(Buffer.from((await provider.fetchLockFile({ source: source(), repository, sha: second }))!).toString(), LOCK);
  t.equal(await provider.fetchLockFile({ source: source(), repository, sha: first }), null);
  // A later push is fetched on demand.
  const third = await remote.commit({ '.svc/svc.lock.json': LOCK + '\n' }, 'change lock');
  await remote.push();
  t.equal(Buffer.from((await provider.fetchLockFile({ source: source(), repository, sha: third }))!).toString(), LOCK + '\n');
});

t.test('a commit reachable only from a tag; an annotated tag sha', async (t) => {
  const { provider, remote, source } = await setup(t);
  await remote.commit({ a: '1' });
  await remote.push();
  await remote.git(['checkout', '--quiet', '-b', 'side']);
  const tagged = await remote.commit({ '.svc/svc.lock.json': LOCK });
  await remote.git(['tag', '-a', 'v1', '-m', 'v1']);
  await remote.push('refs/tags/v1:refs/tags/v1');
  t.ok(await provider.fetchLockFile({ source: source(), repository, sha: tagged }), 'tag-only commit');
  const tagObject = (await remote.git(['rev-parse', 'v1'])).trim();
  t.not(tagObject, tagged);
  t.ok(await provider.fetchLockFile({ source: source(), repository, sha: tagObject }), 'an annotated tag sha peels to its commit');
});

t.test('a sha the remote does not have is a clear error', async (t) => {
  const { provider, remote, source } = await setup(t);
  await remote.commit({ a: '1' });
  await remote.push();
  const local = await remote.commit({ b: '2' }, 'never pushed');
  await t.rejects(provider.fetchLockFile({ source: source(), repository, sha: local }), { code: 'SVC_ERR_GIT_UNKNOWN_SHA', message: new RegExp(local) });
  await t.rejects(provider.fetchLockFile({ source: source(), repository, sha: 'f'.repeat(40) }), { code: 'SVC_ERR_GIT_UNKNOWN_SHA' });
});

t.test('changed files between commits, renames, deletions', async (t) => {
  const { provider, remote, source } = await setup(t);
  const a = await remote.commit({ 'README.md': 'x', 'src/old.ts': 'o', 'docs/a b.md': 'spaces' }, 'a');
  const b = await remote.commit({ 'src/old.ts': null, 'src/new.ts': 'o', 'docs/a b.md': 'changed', 'weird\nname.txt': 'n' }, 'b');
  await remote.push();
  t.same(await provider.changedFiles({ source: source(), repository, base: a, head: b }), ['docs/a b.md', 'src/new.ts', 'src/old.ts', 'weird\nname.txt']);
  t.same(await provider.changedFiles({ source: source(), repository, base: b, head: b }), [], 'same commit: nothing');
});

t.test('first push (zero base): the head commit against its parent, or every file of a root commit', async (t) => {
  const { provider, remote, source } = await setup(t);
  const root = await remote.commit({ 'a.txt': '1', 'dir/b.txt': '2' }, 'root');
  const next = await remote.commit({ 'c.txt': '3' }, 'next');
  await remote.push();
  t.same(await provider.changedFiles({ source: source(), repository, base: ZERO_SHA, head: root }), ['a.txt', 'dir/b.txt']);
  t.same(await provider.changedFiles({ source: source(), repository, base: ZERO_SHA, head: next }), ['c.txt']);
});

t.test('hostile shas and refs are refused before git runs', async (t) => {
  const { provider, remote, source, cacheDir } = await setup(t);
  const sha = await remote.commit({ a: '1' });
  await remote.push();
  const marker = join(remote.root, 'pwned');
  const hostile = [
    `--upload-pack=touch ${marker}`,
    '--upload-pack=touch /tmp/x',
    `;rm -rf ${remote.root}`,
    `$(touch ${marker})`,
    `\`touch ${marker}\``,
    'HEAD',
    'main',
    'refs/heads/main',
    '-n',
    '',
    sha.toUpperCase(),
    `${sha}\n`,
    `${sha} `,
    `${sha.slice(0, 39)};`,
    `${sha}:.svc/svc.lock.json`,
    '../../../etc/passwd',
  ];
  for (const bad of hostile) {
    await t.rejects(provider.fetchLockFile({ source: source(), repository, sha: bad }), { code: 'SVC_ERR_GIT_SHA' }, `sha ${JSON.stringify(bad)}`);
    await t.rejects(provider.changedFiles({ source: source(), repository, base: bad, head: sha }), { code: 'SVC_ERR_GIT_SHA' }, `base ${JSON.stringify(bad)}`);
    await t.rejects(provider.changedFiles({ source: source(), repository, base: sha, head: bad }), { code: 'SVC_ERR_GIT_SHA' }, `head ${JSON.stringify(bad)}`);
  }
  await t.rejects(provider.fetchLockFile({ source: source(), repository, sha: 42 as unknown as string }), { code: 'SVC_ERR_GIT_SHA' });
  t.notOk(existsSync(marker), 'nothing ran');
  t.same(await readdir(cacheDir), [], 'no mirror was even created');
});

t.test('hostile remote URLs are refused', async (t) => {
  const { provider, remote, source, cacheDir } = await setup(t);
  const sha = await remote.commit({ a: '1' });
  await remote.push();
  const marker = join(remote.root, 'pwned');
  const urls = [
    `ext::sh -c touch% ${marker}`,
    `ext::sh%20-c%20touch%20${marker}`,
    `--upload-pack=touch ${marker}`,
    '-oProxyCommand=touch /tmp/x',
    `ssh://-oProxyCommand=touch%20${marker}/x`,
    `fd::17`,
    'relative/path.git',
    'https://user:password@example.test/x.git',
    `${remote.bare} --upload-pack=touch`,
    `/tmp/a\nb`,
    '',
  ];
  for (const url of urls) {
    await t.rejects(provider.fetchLockFile({ source: source(undefined, url), repository, sha }), { code: /SVC_ERR_GIT_(REMOTE_URL|SOURCE_SETTINGS)/ }, JSON.stringify(url));
    await t.rejects(provider.checkoutCredentials({ source: source(undefined, url), repository }), { code: /SVC_ERR_GIT_(REMOTE_URL|SOURCE_SETTINGS)/ });
  }
  t.notOk(existsSync(marker));
  t.same(await readdir(cacheDir), []);
  for (const ok of ['https://git.example.test/acme/app.git', 'ssh://git@git.example.test:2222/acme/app.git', 'git@github.com:acme/app.git', 'file:///srv/git/app.git', '/srv/git/app.git', 'git://example.test/app']) {
    t.equal(remoteUrlProblem(ok), null, ok);
  }
});

t.test('bad settings and credentials', async (t) => {
  const { provider, remote, source } = await setup(t);
  const sha = await remote.commit({ a: '1' });
  const s = source();
  await t.rejects(provider.fetchLockFile({ source: { ...s, settings: { remoteUrl: remote.url } }, repository, sha }), { code: 'SVC_ERR_GIT_SOURCE_SETTINGS', message: /repository/ });
  await t.rejects(provider.fetchLockFile({ source: { ...s, settings: { ...s.settings, repository: 'no-slash' } }, repository, sha }), { code: 'SVC_ERR_GIT_SOURCE_SETTINGS' });
  await t.rejects(provider.fetchLockFile({ source: { ...s, settings: { ...s.settings, extra: true } }, repository, sha }), { code: 'SVC_ERR_GIT_SOURCE_SETTINGS' });
  await t.rejects(provider.checkoutCredentials({ source: { ...s, credentials: { token: 'a\nb' } }, repository }), { code: 'SVC_ERR_GIT_SOURCE_CREDENTIALS' });
  await t.rejects(provider.checkoutCredentials({ source: { ...s, credentials: { token: 't', username: 'a:b' } }, repository }), { code: 'SVC_ERR_GIT_SOURCE_CREDENTIALS' });
});

t.test('concurrent reads share one mirror safely; sources do not mix', async (t) => {
  const { provider, remote, source, cacheDir } = await setup(t);
  const shas: string[] = [];
  for (let i = 0; i < 5; i++) shas.push(await remote.commit({ '.svc/svc.lock.json': `${LOCK}${i}`, [`f${i}.txt`]: String(i) }, `c${i}`));
  await remote.push();
  const other = await createGitRemote(t);
  const otherSha = await other.commit({ '.svc/svc.lock.json': 'other' });
  await other.push();
  const work: Promise<unknown>[] = [];
  for (let round = 0; round < 4; round++) {
    shas.forEach((sha, i) => {
      work.push(provider.fetchLockFile({ source: source(), repository, sha }).then((b) => Buffer.from(b!).toString() === `${LOCK}${i}`));
      if (i > 0) work.push(provider.changedFiles({ source: source(), repository, base: shas[i - 1]!, head: sha }).then((f) => JSON.stringify(f) === JSON.stringify(['.svc/svc.lock.json', `f${i}.txt`])));
    });
    work.push(provider.fetchLockFile({ source: source('other-source', other.url), repository, sha: otherSha }).then((b) => Buffer.from(b!).toString() === 'other'));
  }
  const results = await Promise.all(work);
  t.ok(results.every((r) => r === true), `${results.length} concurrent reads all right`);
  const mirrors = await readdir(cacheDir);
  t.equal(mirrors.length, 2, 'one mirror per source');
  for (const m of mirrors) await git(join(cacheDir, m), ['--git-dir', join(cacheDir, m), 'fsck', '--no-progress']);
  await t.rejects(provider.fetchLockFile({ source: source(), repository, sha: otherSha }), { code: 'SVC_ERR_GIT_UNKNOWN_SHA' }, "another source's commit is not visible");
});

t.test('a symlink at the lock path is not a lock file; an oversized lock is refused', async (t) => {
  const { remote, source } = await setup(t);
  await remote.commit({ 'target.json': LOCK, '.svc/keep': '' });
  await symlink('../target.json', join(remote.work, '.svc', 'svc.lock.json'));
  const linked = await remote.commit({}, 'symlinked lock');
  await remote.push();
  const small = await setup(t, { maxLockFileBytes: 10 });
  t.equal(await small.provider.fetchLockFile({ source: source(undefined, remote.url), repository, sha: linked }), null);
  await remote.commit({ '.svc/svc.lock.json': null });
  const big2 = await remote.commit({ '.svc/svc.lock.json': LOCK }, 'regular again');
  await remote.push();
  await t.rejects(small.provider.fetchLockFile({ source: source(undefined, remote.url), repository, sha: big2 }), { code: 'SVC_ERR_GIT_LOCK_TOO_LARGE' });
});

t.test('a lock read of a new commit spawns one git process, the fetch; a mirror removed by hand is made again', async (t) => {
  // gitBinary: a wrapper that logs each git command's first argument, then runs git.
  const bin = await mkdtemp(join(tmpdir(), 'svc-git-log-'));
  t.teardown(() => rm(bin, { recursive: true, force: true }));
  const log = join(bin, 'calls.log');
  await writeFile(join(bin, 'git'), `#!/bin/sh\nfor a in "$@"; do case "$a" in -*) ;; *) echo "$a" >> '${log}'; break;; esac; done\nexec git "$@"\n`, { mode: 0o755 });
  // borrowLocalObjects off: the path of a remote on another machine (a fetch per new commit).
  const { provider, remote, source, cacheDir } = await setup(t, { gitBinary: join(bin, 'git'), borrowLocalObjects: false });
  const calls = async () => {
    const text = await readFile(log, 'utf8').catch(() => '');
    await writeFile(log, '');
    return text.split('\n').filter((l) => l !== '');
  };
  const push = async (i: number) => {
    const sha = await remote.commit({ '.svc/svc.lock.json': `${LOCK}${i}` }, `c${i}`);
    await remote.push();
    return sha;
  };
  const read = async (sha: string) => Buffer.from((await provider.fetchLockFile({ source: source(), repository, sha }))!).toString();
  t.equal(await read(await push(1)), `${LOCK}1`);
  t.same(await calls(), ['init', 'config', 'cat-file', 'fetch'], 'first read: the mirror is made and configured, its cat-file started');
  t.equal(await read(await push(2)), `${LOCK}2`);
  t.same(await calls(), ['fetch'], 'a new commit: only the fetch; presence, trees and the blob through the running cat-file');
  t.equal(await read(await push(5)), `${LOCK}5`);
  t.same(await calls(), ['fetch'], 'again');
  await rm(cacheDir, { recursive: true, force: true });
  t.equal(await read(await push(3)), `${LOCK}3`, 'read after the mirror was removed');
  t.same(await calls(), ['init', 'config', 'cat-file', 'fetch'], 'the removed mirror is made and configured again, with a cat-file of its own');
  // The default for a remote on this machine: its objects read in place, no git process at all.
  const local = await setup(t, { gitBinary: join(bin, 'git') });
  const localRead = async (sha: string) => Buffer.from((await local.provider.fetchLockFile({ source: local.source(), repository, sha }))!).toString();
  const commit = async (i: number) => {
    const sha = await local.remote.commit({ '.svc/svc.lock.json': `${LOCK}${i}` }, `c${i}`);
    await local.remote.push();
    return sha;
  };
  await calls();
  t.equal(await localRead(await commit(6)), `${LOCK}6`);
  t.same(await calls(), ['init', 'config', 'cat-file'], 'a local remote: the mirror is made, its reader started, nothing fetched');
  t.equal(await localRead(await commit(7)), `${LOCK}7`);
  t.same(await calls(), [], 'a new commit of a local remote: no git process');
});

t.test('an unreachable remote is an unavailable error', async (t) => {
  const { provider, source } = await setup(t);
  await t.rejects(provider.fetchLockFile({ source: source(undefined, '/nonexistent/repo.git'), repository, sha: 'a'.repeat(40) }), { code: 'SVC_ERR_GIT_FETCH' });
});

t.test('https credentials go to the server as basic auth, never in argv or the URL', async (t) => {
  const { provider, source } = await setup(t);
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(String(req.headers['authorization'] ?? ''));
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/acme/app.git`;
  const s = { ...source('https-source', url), credentials: { token: 'tok-123', username: 'bot' } };
  await t.rejects(provider.fetchLockFile({ source: s, repository, sha: 'a'.repeat(40) }), { code: 'SVC_ERR_GIT_FETCH' });
  t.ok(seen.includes(`Basic ${Buffer.from('bot:tok-123').toString('base64')}`), 'Authorization header sent');
  t.same(await provider.checkoutCredentials({ source: s, repository }), { cloneUrl: url, username: 'bot', token: 'tok-123' });
});

t.test('checkout credentials of a file remote carry no token', async (t) => {
  const { provider, remote, source } = await setup(t);
  const s = { ...source(), credentials: { token: 'tok' } };
  t.same(await provider.checkoutCredentials({ source: s, repository }), { cloneUrl: remote.url });
});

t.test('routing key and headers: the hook sends X-Provider-* names with the source id', async (t) => {
  const { provider } = await setup(t);
  const id = '6f1c2b8e-0000-4000-8000-000000000001';
  const r = provider.extractHeaders({
    'x-provider-event': 'push',
    'x-provider-delivery': 'b0d8f0a6-1d1e-4f55-9a3a-000000000000',
    'x-provider-hook-installation-target-id': id,
    'x-provider-hook-installation-target-type': 'integration',
    'x-hub-signature-256': `sha256=${'0'.repeat(64)}`,
  });
  if (!r.ok) throw new Error(r.message);
  t.equal(provider.routingKey(r.headers), `git:${id}`);
  t.match(provider.extractHeaders({ 'x-github-event': 'push', 'x-github-delivery': 'd', 'x-github-hook-installation-target-id': id }), { ok: true });
  t.match(provider.extractHeaders({ 'x-provider-event': 'push', 'x-provider-delivery': 'd', 'x-provider-hook-installation-target-id': '../x' }), { ok: false, missing: 'X-Provider-Hook-Installation-Target-ID' });
  t.match(provider.extractHeaders({ 'x-provider-event': 'push', 'x-provider-delivery': 'd', 'x-provider-hook-installation-target-id': id, 'x-provider-hook-installation-target-type': 'repository' }), { ok: false });
  t.equal((provider as SourceProviderExtensionPoint).providerKind, 'git');
});

t.test('signing in without a cache directory fails at the config phase', async (t) => {
  const host = createPluginHost();
  await t.rejects(host.signInAll({ builtIns: [gitProvider] }), { phase: 'config', message: /cacheDir/ });
});
