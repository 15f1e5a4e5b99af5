// The example Gitea provider (examples/plugins/gitea), signed in from its module path as an
// operator's config names it: Gitea's headers and signature through the kernel's own check
// (two secrets during rotation), push and pull-request payloads to the normalized event, and
// repository reads through a stand-in for Gitea's API serving a real git repository.
import { createHmac, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { createPluginHost } from '../../core/plugins/index.ts';
import type { ProviderSource, RepositoryRef, SourceProviderExtensionPoint } from '../../core/extension-points/provider.ts';
import { checkEvent } from '../../kernel/orchestrator/ingest/steps/normalize.ts';
import { verifyDeliverySignature } from '../../kernel/orchestrator/ingest/steps/verify-signature.ts';
import type { OpenedSource } from '../../kernel/orchestrator/sources/store.ts';
import type { IncomingDelivery } from '../../kernel/orchestrator/ingest/types.ts';
import { startFakeGitea } from '../fixtures/fake-gitea.ts';
import { GITEA_PLUGIN_PATH, linkSvcIntoExample } from '../fixtures/gitea-example.ts';
import { giteaPullRequestPayload, giteaPushPayload } from '../fixtures/gitea-payloads.ts';
import { createGitRemote } from '../fixtures/git-repos.ts';
import { REPO_ROOT, runProgram } from '../fixtures/programs.ts';

await linkSvcIntoExample();

const host = createPluginHost({ config: { 'provider:gitea': { requestTimeoutMs: 30_000, maxReadFileBytes: 64 } } });
t.teardown(() => host.close());
const summary = await host.signIn(GITEA_PLUGIN_PATH);
const gitea: SourceProviderExtensionPoint = host.get('provider', 'gitea');

const SHA = '1'.repeat(40);
const CURRENT = 'current-secret-0123456789';
const PREVIOUS = 'previous-secret-0123456789';

/** A delivery as the kernel's front door hands it to the pipeline: lower-case headers, raw bytes. */
function delivery(headers: Record<string, string>, body: Buffer): IncomingDelivery {
  return { orgId: 'acme', routingKey: 'gitea:', providerKind: 'gitea', deliveryId: randomUUID(), headers, body, receivedAt: new Date(), clientIp: '127.0.0.1', replay: false };
}
const hmac = (secret: string, body: Buffer) => createHmac('sha256', secret).update(body).digest('hex');
const opened = (secrets: string[]) => ({ secrets }) as unknown as OpenedSource;
const errorCode = (error: unknown) => (error as { code?: unknown }).code;

t.test('signs in from its module path: the brand, manifest and config checks pass', async (t) => {
  t.match(summary, { id: 'gitea', kind: 'provider', builtIn: false, modulePath: GITEA_PLUGIN_PATH });
  t.equal(gitea.providerKind, 'gitea');
  t.ok(gitea.sourceSettingsSchema, 'source settings are checked when a source is added');
  t.equal(gitea.routingKey({ eventType: 'push', deliveryId: 'x' }), 'gitea:*');
  const bad = createPluginHost({ config: { 'provider:gitea': { requestTimeoutMs: 'soon' } } });
  const refused = await bad.signIn(GITEA_PLUGIN_PATH).catch((error: unknown) => error);
  t.match(refused, { phase: 'config', message: /requestTimeoutMs/ }, 'a bad config slice fails sign-in, naming the phase and the field');
});

t.test('svc-admin plugin verify passes every sign-in phase for the module path', async (t) => {
  const out = await runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), ['plugin', 'verify', GITEA_PLUGIN_PATH, '--json'], { timeoutMs: 120_000 });
  t.equal(out.code, 0, out.stderr);
  const report = JSON.parse(out.stdout) as { ok: boolean; phases: Array<{ phase: string; status: string }> };
  t.equal(report.ok, true);
  t.same(report.phases.filter((p) => p.status === 'failed'), []);
  t.ok(report.phases.some((p) => p.phase === 'create' && p.status === 'passed'));
});

t.test('headers: Gitea and Forgejo names; refusals name the header', async (t) => {
  const ok = gitea.extractHeaders({ 'x-gitea-event': 'push', 'x-gitea-delivery': 'd-1', 'x-gitea-signature': 'ab'.repeat(32) });
  t.same(ok, { ok: true, headers: { eventType: 'push', deliveryId: 'd-1', signature: 'ab'.repeat(32) } });
  const forgejo = gitea.extractHeaders({ 'x-forgejo-event': 'pull_request', 'x-forgejo-delivery': 'd-2' });
  t.same(forgejo, { ok: true, headers: { eventType: 'pull_request', deliveryId: 'd-2' } });
  const both = gitea.extractHeaders({ 'x-gitea-event': 'push', 'x-forgejo-event': 'push', 'x-gitea-delivery': 'd-3', 'x-forgejo-delivery': 'd-3' });
  t.equal(both.ok, true, 'both families agreeing is what Forgejo sends');
  t.match(gitea.extractHeaders({ 'x-gitea-event': 'push', 'x-forgejo-event': 'pull_request', 'x-gitea-delivery': 'd' }), { ok: false, missing: 'X-Forgejo-Event', message: /disagree/ });
  t.match(gitea.extractHeaders({ 'x-gitea-delivery': 'd' }), { ok: false, missing: 'X-Gitea-Event' });
  t.match(gitea.extractHeaders({ 'x-gitea-event': 'push' }), { ok: false, missing: 'X-Gitea-Delivery' });
  t.match(gitea.extractHeaders({ 'x-gitea-event': 'Push Hook', 'x-gitea-delivery': 'd' }), { ok: false, missing: 'X-Gitea-Event' });
  t.match(gitea.extractHeaders({ 'x-gitea-event': 'push', 'x-gitea-delivery': 'd', 'x-gitea-signature': ['a', 'b'] }), { ok: false, missing: 'X-Gitea-Signature', message: /more than once/ });
});

t.test('signature: the kernel checks X-Gitea-Signature over the raw bytes, two secrets during rotation', async (t) => {
  const body = Buffer.from(JSON.stringify(giteaPushPayload({ after: SHA })));
  const base = { 'x-gitea-event': 'push', 'x-gitea-delivery': randomUUID() };
  const rotating = opened([CURRENT, PREVIOUS]);
  t.ok(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': hmac(CURRENT, body) }, body), rotating, gitea), 'the current secret');
  t.ok(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': hmac(PREVIOUS, body) }, body), rotating, gitea), 'the previous secret, during rotation');
  t.notOk(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': hmac(PREVIOUS, body) }, body), opened([CURRENT]), gitea), 'the previous secret after rotation');
  t.ok(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': hmac(CURRENT, body).toUpperCase() }, body), rotating, gitea), 'hex case does not matter');
  t.ok(verifyDeliverySignature(delivery({ 'x-forgejo-event': 'push', 'x-forgejo-delivery': 'f-1', 'x-forgejo-signature': hmac(CURRENT, body) }, body), rotating, gitea), 'Forgejo names');

  const tampered = Buffer.from(body.toString('utf8').replace('refs/heads/main', 'refs/heads/prod'));
  t.notOk(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': hmac(CURRENT, body) }, tampered), rotating, gitea), 'a changed body');
  const reserialized = Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8')), null, 2));
  t.notOk(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': hmac(CURRENT, body) }, reserialized), rotating, gitea), 'the same JSON, other bytes');
  t.notOk(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': hmac('someone-else-entirely', body) }, body), rotating, gitea), 'another secret');
  t.notOk(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': `sha256=${hmac(CURRENT, body)}` }, body), rotating, gitea), 'a sha256= prefix Gitea never sends claims nothing');
  t.notOk(verifyDeliverySignature(delivery({ ...base, 'x-gitea-signature': hmac(CURRENT, body).slice(0, 63) }, body), rotating, gitea), 'a short digest');
  t.notOk(verifyDeliverySignature(delivery(base, body), rotating, gitea), 'no signature');
  t.same(gitea.signatureInput({ headers: { eventType: 'push', deliveryId: 'd', signature: 'AB'.repeat(32) }, body }), { algorithm: 'hmac-sha256', signedBytes: body, signature: 'ab'.repeat(32) });
});

const normalize = (event: string, payload: unknown) => {
  const value = gitea.normalize({ headers: { eventType: event, deliveryId: 'd' }, body: Buffer.from(JSON.stringify(payload)) }, payload);
  const checked = checkEvent(value);
  if (!checked.ok) throw new Error(checked.reason);
  return checked.event;
};

t.test('push payloads: branch, tag, deletion, changed files only when complete', async (t) => {
  const push = normalize('push', giteaPushPayload({
    after: SHA,
    before: '2'.repeat(40),
    commits: [
      { id: SHA, message: 'Second\n', modified: ['src/b.ts'], removed: ['old.txt'] },
      { id: '3'.repeat(40), message: 'First\n', added: ['src/a.ts'] },
    ],
  }));
  t.match(push, {
    provider: 'gitea', type: 'push', providerEvent: 'push', action: null, eventName: 'push',
    ref: 'refs/heads/main', branch: 'main', tag: null, sha: SHA, beforeSha: '2'.repeat(40), deleted: false,
    sender: { login: 'alice', id: '1' }, commitMessage: 'Second\n', pullRequest: null, installationId: null,
    repository: { fullName: 'acme/app', owner: 'acme', name: 'app', id: '7', cloneUrl: 'https://gitea.example.test/acme/app.git', defaultBranch: 'main' },
  });
  t.same(push.changedFiles, ['old.txt', 'src/a.ts', 'src/b.ts']);

  const tag = normalize('push', giteaPushPayload({ after: SHA, ref: 'refs/tags/v1.2.0', commits: [] }));
  t.match(tag, { type: 'tag', tag: 'v1.2.0', branch: null, sha: SHA, changedFiles: null });

  const deleted = normalize('push', giteaPushPayload({ after: '0'.repeat(40), ref: 'refs/heads/old' }));
  t.match(deleted, { type: 'push', branch: 'old', deleted: true, sha: null, commitMessage: null, changedFiles: null });

  const capped = normalize('push', giteaPushPayload({ after: SHA, totalCommits: 40 }));
  t.equal(capped.changedFiles, null, 'Gitea listed fewer commits than were pushed: the kernel asks changedFiles');
  t.equal(capped.commitMessage, 'Update README\n');

  const noHead = giteaPushPayload({ after: SHA });
  (noHead as { head_commit: unknown }).head_commit = null;
  t.equal(normalize('push', noHead).commitMessage, 'Update README\n', 'the listed commit whose id is after');
});

t.test('pull request payloads: actions, same-repository and fork', async (t) => {
  const opened = normalize('pull_request', giteaPullRequestPayload({ number: 5, headSha: SHA, baseSha: '2'.repeat(40), title: 'Tidy' }));
  t.match(opened, {
    type: 'pr', action: 'opened', eventName: 'pull_request:opened', ref: 'refs/heads/main', branch: 'main', sha: SHA,
    sender: { login: 'bob', id: '2' }, changedFiles: null,
    pullRequest: { number: 5, headRef: 'feature', headSha: SHA, headRepository: 'acme/app', baseRef: 'main', baseSha: '2'.repeat(40), isFork: false, draft: false, merged: false, title: 'Tidy' },
  });
  const synced = normalize('pull_request', giteaPullRequestPayload({ action: 'synchronized' }));
  t.equal(synced.action, 'synchronize', "Gitea's synchronized is the spec's synchronize");
  t.equal(synced.eventName, 'pull_request:synchronize');
  const fork = normalize('pull_request', giteaPullRequestPayload({ headRepo: 'mallory/app', headRef: 'evil' }));
  t.match(fork.pullRequest, { isFork: true, headRepository: 'mallory/app', headRef: 'evil' });
  const gone = giteaPullRequestPayload();
  (gone.pull_request.head as { repo: unknown }).repo = null;
  t.equal(normalize('pull_request', gone).pullRequest?.isFork, true, 'a deleted head repository cannot be proven the same');
  t.match(normalize('pull_request', giteaPullRequestPayload({ action: 'closed', merged: true, draft: true })).pullRequest, { merged: true, draft: true });
  t.match(normalize('issues', { action: 'opened', repository: giteaPushPayload({ after: SHA }).repository, sender: { login: 'carol', id: 4 } }), { type: null, eventName: 'issues', sender: { login: 'carol' } });
  t.throws(() => gitea.normalize({ headers: { eventType: 'push', deliveryId: 'd' }, body: Buffer.from('[]') }, []), { code: 'SVC_ERR_GITEA_PAYLOAD' });
});

t.test('repository reads through the Gitea API stand-in, from a real git repository', async (t) => {
  const TOKEN = 'gitea-token-0123456789abcdef';
  const fake = await startFakeGitea({ token: TOKEN });
  t.teardown(() => fake.close());
  const remote = await createGitRemote(t);
  const lockText = '{"schemaVersion":1,"workflows":[]}\n';
  const first = await remote.commit({ 'README.md': 'hello\n', 'docs/a.md': 'a\n' }, 'first');
  const second = await remote.commit({ '.svc/svc.lock.json': lockText, 'docs/a.md': null, 'docs/big.md': 'x'.repeat(100) }, 'second');
  fake.addRepository('acme/app', `${remote.work}/.git`);
  const source: ProviderSource = { id: 'src-1', orgId: 'acme', routingKey: 'gitea:*', settings: { baseUrl: `${fake.url}/` }, credentials: { token: TOKEN } };
  const repository: RepositoryRef = { id: '7', fullName: 'acme/app' };

  const lock = await gitea.fetchLockFile({ source, repository, sha: second });
  t.equal(Buffer.from(lock!).toString('utf8'), lockText, 'the lock bytes at the commit');
  t.ok(fake.log.some((l) => l === `GET /api/v1/repos/acme/app/contents/.svc/svc.lock.json?ref=${second}`), 'read through the contents API at the sha');
  t.equal(await gitea.fetchLockFile({ source, repository, sha: first }), null, 'no lock at the first commit: 404 is null');
  t.equal(await gitea.fetchLockFile({ source, repository, sha: 'f'.repeat(40) }), null, 'an unknown commit reads as no lock');

  t.equal(Buffer.from((await gitea.readFile!({ source, repository, sha: first, path: 'docs/a.md' }))!).toString(), 'a\n');
  t.equal(await gitea.readFile!({ source, repository, sha: first, path: 'docs' }), null, 'a directory is not a file');
  await t.rejects(gitea.readFile!({ source, repository, sha: second, path: 'docs/big.md' }), { code: 'SVC_ERR_GITEA_FILE_TOO_LARGE' }, 'over maxReadFileBytes');
  for (const path of ['../etc/passwd', '/etc/passwd', 'docs/../README.md', '-rf', 'a?ref=main']) {
    if (path === 'a?ref=main') {
      t.equal(await gitea.readFile!({ source, repository, sha: first, path }), null, 'a query in a path stays part of the path');
      continue;
    }
    await t.rejects(gitea.readFile!({ source, repository, sha: first, path }), { code: 'SVC_ERR_GITEA_PATH_INVALID' }, `refused: ${path}`);
  }
  await t.rejects(gitea.fetchLockFile({ source, repository, sha: 'main' }), { code: 'SVC_ERR_GITEA_SHA' }, 'a ref name is not a commit id');
  await t.rejects(gitea.fetchLockFile({ source, repository: { id: '7', fullName: '../x' }, sha: second }), { code: 'SVC_ERR_GITEA_REPOSITORY' });

  fake.omitContent = true;
  t.equal(Buffer.from((await gitea.fetchLockFile({ source, repository, sha: second }))!).toString('utf8'), lockText, 'content left out: read from the raw API');
  t.ok(fake.log.some((l) => l.startsWith('GET /api/v1/repos/acme/app/raw/.svc/svc.lock.json?ref=')));
  fake.omitContent = false;

  const badToken = { ...source, credentials: { token: 'wrong-token' } };
  const refused = await gitea.fetchLockFile({ source: badToken, repository, sha: second }).catch((e: unknown) => e);
  t.equal(errorCode(refused), 'SVC_ERR_GITEA_AUTH', 'a refused token is an authentication error, not a missing lock');
  await t.rejects(gitea.fetchLockFile({ source: { ...source, credentials: {} }, repository, sha: second }), { code: 'SVC_ERR_GITEA_SOURCE_CREDENTIALS' });
  await t.rejects(gitea.fetchLockFile({ source: { ...source, settings: { baseUrl: 'ftp://x' } }, repository, sha: second }), { code: 'SVC_ERR_GITEA_SOURCE_SETTINGS' });

  t.same(await gitea.changedFiles({ source, repository, base: first, head: second }), ['.svc/svc.lock.json', 'docs/a.md', 'docs/big.md']);
  t.same(await gitea.changedFiles({ source, repository, base: '0'.repeat(40), head: first }), ['README.md', 'docs/a.md'], 'a new branch: the head commit');
  await t.rejects(gitea.changedFiles({ source, repository, base: 'e'.repeat(40), head: second }), { code: 'SVC_ERR_GITEA_NOT_FOUND' });

  t.same(await gitea.checkoutCredentials({ source, repository }), { cloneUrl: `${fake.url}/acme/app.git`, username: 'svc', token: TOKEN }, 'the clone URL from settings, never the payload');
});
