// `svc hook post-receive` end to end: a real bare repository with the installed hook, real
// `git push`, a real HTTP receiver that checks the signature the way the kernel does, and the
// payload run through the shared normalizer and the `git` provider.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { hookGit } from '../../../cli/git-hook/git.ts';
import { HOOK_MARKER, installPostReceiveHook } from '../../../cli/git-hook/install.ts';
import { runPostReceive } from '../../../cli/git-hook/run-hook.ts';
import { createPluginHost } from '../../../core/plugins/index.ts';
import { verifyHubSignature } from '../../../kernel/services/crypto/hmac.ts';
import { gitProvider } from '../../../plugins/providers/git/index.ts';
import { normalizeGithubPayload } from '../../../plugins/providers/shared/github-payload.ts';
import { NormalizedEvent } from '../../../schemas/event.ts';
import { compileSchema } from '../../../schemas/validate.ts';
import { createGitRemote, git, ZERO_SHA, type Teardown } from '../../fixtures/git-repos.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT, runProgram } from '../../fixtures/programs.ts';

const SVC = join(REPO_ROOT, 'bin/svc.ts');
const SECRET = 'hook-secret-0123456789';
const SOURCE_ID = '6f1c2b8e-0000-4000-8000-00000000abcd';
const checkEvent = compileSchema(NormalizedEvent);
// Each push starts a real Node for the hook; the file takes about half a minute.

/** A loopback port nothing listens on (fetch refuses well-known blocked ports such as 1). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  await new Promise((r) => server.close(r));
  return port;
}

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A webhook receiver on loopback; `answer` decides each response. */
async function receiver(t: Teardown, answer: (n: number) => { status: number; body?: unknown; headers?: Record<string, string>; hang?: boolean } = () => ({ status: 200, body: { status: 'buffered' } })) {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks) });
      const a = answer(got.length);
      if (a.hang) return;
      res.writeHead(a.status, { 'content-type': 'application/json', ...(a.headers ?? {}) });
      res.end(JSON.stringify(a.body ?? {}));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise((r) => server.close(r));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook/org-1/git`, got };
}

async function secretFile(t: Teardown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-hook-secret-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'secret');
  await writeFile(path, `${SECRET}\n`, { mode: 0o600 });
  return path;
}

/** The hook budget for tests that expect deliveries to arrive (the most `svc.timeoutMs` allows). */
const LONG_BUDGET_MS = '120000';

function payloadOf(r: Received): Record<string, unknown> {
  return JSON.parse(r.body.toString()) as Record<string, unknown>;
}

function checkSigned(t: Test, r: Received): void {
  t.ok(verifyHubSignature(r.headers['x-hub-signature-256'] as string, r.body, [SECRET]), 'signature verifies over the raw body');
  t.notOk(verifyHubSignature(r.headers['x-hub-signature-256'] as string, r.body, ['another-secret']));
  t.equal(r.headers['x-provider-event'], 'push');
  t.match(r.headers['x-provider-delivery'], /^[0-9a-f-]{36}$/);
  t.equal(r.headers['x-provider-hook-installation-target-id'], SOURCE_ID);
  t.equal(r.headers['x-provider-hook-installation-target-type'], 'integration');
  t.match(r.headers['content-type'], /^application\/json/);
}

t.test('installed hook: pushes, a tag and a deletion arrive signed and normalize correctly', async (t) => {
  const remote = await createGitRemote(t);
  const hook = await receiver(t);
  // A real process: the hook git runs is the bin that installed it (the compiled one under
  // SVC_TEST_DIST=1), so the pushes below run the shipped hook.
  const installed = await runProgram(SVC, [
    'hook', 'post-receive', '--install', remote.bare, '--webhook-url', hook.url, '--secret-file', await secretFile(t),
    '--source-id', SOURCE_ID, '--repository', 'acme/app', '--remote-url', remote.url, '--json',
  ]);
  t.equal(installed.code, 0, installed.stderr);
  const info = JSON.parse(installed.stdout) as { hookPath: string; command: string[] };
  t.equal(info.hookPath, join(remote.bare, 'hooks', 'post-receive'));
  t.equal(info.command[0], process.execPath, 'runs with this Node by absolute path');
  t.ok(((await stat(info.hookPath)).mode & 0o111) !== 0, 'executable');
  t.match(await readFile(info.hookPath, 'utf8'), HOOK_MARKER);
  t.equal((await git(remote.bare, ['config', 'svc.sourceId'])).trim(), SOURCE_ID);
  await git(remote.bare, ['config', 'svc.timeoutMs', LONG_BUDGET_MS]);

  // The git provider reads what the hook announced.
  const cacheDir = await mkdtemp(join(tmpdir(), 'svc-hook-cache-'));
  t.teardown(() => rm(cacheDir, { recursive: true, force: true }));
  const host = createPluginHost({ config: { 'provider:git': { cacheDir } } });
  await host.signInAll({ builtIns: [gitProvider] });
  t.teardown(() => host.close());
  const provider = host.get('provider', 'git');
  const source = { id: SOURCE_ID, orgId: 'org-1', routingKey: `git:${SOURCE_ID}`, settings: { remoteUrl: remote.url, repository: 'acme/app' }, credentials: {} };

  // 1. First push of main: a new branch.
  const first = await remote.commit({ 'README.md': 'hello', '.svc/svc.lock.json': '{"version":1}' }, 'Initial commit\n\nWith a body.');
  const pushed = await remote.push(undefined, { GIT_PUSHER: 'alice' });
  t.match(pushed.stderr, /remote: svc: push main -> 200 buffered/, 'one line per ref for the pusher');
  t.equal(hook.got.length, 1);
  const one = hook.got[0]!;
  checkSigned(t, one);
  const p1 = payloadOf(one);
  t.match(p1, { ref: 'refs/heads/main', before: ZERO_SHA, after: first, created: true, deleted: false, installation: null });
  t.match(p1, { repository: { full_name: 'acme/app', name: 'app', owner: { login: 'acme' }, clone_url: remote.url, default_branch: 'main' }, sender: { login: 'alice' } });
  t.match(p1, { head_commit: { id: first, message: 'Initial commit\n\nWith a body.', author: { name: 'Alice Example', email: 'alice@example.test' } } });
  const extracted = provider.extractHeaders(one.headers);
  if (!extracted.ok) throw new Error(extracted.message);
  t.equal(provider.routingKey(extracted.headers), `git:${SOURCE_ID}`);
  const sig = provider.signatureInput({ headers: extracted.headers, body: one.body });
  t.ok(verifyHubSignature(`sha256=${sig.signature}`, Buffer.from(sig.signedBytes), [SECRET]));
  const e1 = provider.normalize({ headers: extracted.headers, body: one.body }, p1) as NormalizedEvent;
  t.ok(checkEvent.check(e1), 'a valid normalized event');
  t.match(e1, { provider: 'git', type: 'push', branch: 'main', sha: first, deleted: false, commitMessage: 'Initial commit\n\nWith a body.', sender: { login: 'alice' } });
  t.same(e1.changedFiles, ['.svc/svc.lock.json', 'README.md']);
  t.equal(Buffer.from((await provider.fetchLockFile({ source, repository: { id: remote.url, fullName: 'acme/app' }, sha: e1.sha! }))!).toString(), '{"version":1}');

  // 2. Two more commits: modified, removed, added.
  const second = await remote.commit({ 'README.md': 'changed', 'src/a.ts': 'a' }, 'second');
  const third = await remote.commit({ '.svc/svc.lock.json': null, 'docs/x.md': 'x' }, 'third');
  await remote.push(undefined, { GIT_PUSHER: 'bob' });
  const p2 = payloadOf(hook.got[1]!);
  checkSigned(t, hook.got[1]!);
  t.match(p2, { before: first, after: third, created: false, forced: false, sender: { login: 'bob' } });
  const commits = p2['commits'] as Array<{ id: string; added: string[]; removed: string[]; modified: string[] }>;
  t.same(commits.map((c) => c.id), [second, third], 'oldest first');
  t.same(commits[0], { ...commits[0], added: ['src/a.ts'], removed: [], modified: ['README.md'] });
  t.same(commits[1], { ...commits[1], added: ['docs/x.md'], removed: ['.svc/svc.lock.json'], modified: [] });
  const e2 = normalizeGithubPayload('git', 'push', p2);
  t.same(e2.changedFiles, ['.svc/svc.lock.json', 'README.md', 'docs/x.md', 'src/a.ts']);
  t.same(await provider.changedFiles({ source, repository: { id: remote.url, fullName: 'acme/app' }, base: first, head: third }), e2.changedFiles, 'the provider agrees with the payload');
  t.equal(await provider.fetchLockFile({ source, repository: { id: remote.url, fullName: 'acme/app' }, sha: third }), null, 'lock removed: none there');

  // 3. An annotated tag.
  await remote.git(['tag', '-a', 'v1.0.0', '-m', 'release']);
  const tagPush = await remote.push('refs/tags/v1.0.0:refs/tags/v1.0.0');
  t.match(tagPush.stderr, /svc: push tag v1\.0\.0 -> 200 buffered/);
  const p3 = payloadOf(hook.got[2]!);
  t.match(p3, { ref: 'refs/tags/v1.0.0', created: true, deleted: false, commits: [], head_commit: { id: third } });
  t.match(normalizeGithubPayload('git', 'push', p3), { type: 'tag', tag: 'v1.0.0', branch: null });

  // 4. Deleting a branch.
  await remote.push('HEAD:refs/heads/feature');
  const feature = payloadOf(hook.got[3]!);
  t.match(feature, { ref: 'refs/heads/feature', created: true, commits: [] }, 'a new branch at a known commit brings no commits');
  const del = await remote.push(':refs/heads/feature');
  t.match(del.stderr, /svc: push feature \(deleted\) -> 200 buffered/);
  const p4 = payloadOf(hook.got[4]!);
  checkSigned(t, hook.got[4]!);
  t.match(p4, { ref: 'refs/heads/feature', before: third, after: ZERO_SHA, deleted: true, head_commit: null, commits: [] });
  t.match(normalizeGithubPayload('git', 'push', p4), { deleted: true, sha: null, commitMessage: null, branch: 'feature' });

  // Every delivery had its own id.
  t.equal(new Set(hook.got.map((r) => r.headers['x-provider-delivery'])).size, hook.got.length);
});

t.test('more than 20 commits: the newest 20 are listed and changed files must be fetched', async (t) => {
  const remote = await createGitRemote(t);
  const hook = await receiver(t);
  await installPostReceiveHook({ repo: remote.bare, webhookUrl: hook.url, secretFile: await secretFile(t), sourceId: SOURCE_ID, repository: 'acme/app' });
  await git(remote.bare, ['config', 'svc.timeoutMs', LONG_BUDGET_MS]);
  const base = await remote.commit({ a: '0' });
  await remote.push();
  const shas: string[] = [];
  for (let i = 1; i <= 23; i++) shas.push(await remote.commit({ [`f${i}`]: String(i) }, `c${i}`));
  await remote.push();
  const p = payloadOf(hook.got[1]!);
  const commits = p['commits'] as Array<{ id: string }>;
  t.equal(commits.length, 20);
  t.same(commits.map((c) => c.id), shas.slice(-20));
  t.match(p, { before: base, head_commit: { id: shas[22] } });
  t.equal(normalizeGithubPayload('git', 'push', p).changedFiles, null);
});

t.test('a force push is marked forced', async (t) => {
  const remote = await createGitRemote(t);
  const hook = await receiver(t);
  await installPostReceiveHook({ repo: remote.bare, webhookUrl: hook.url, secretFile: await secretFile(t), sourceId: SOURCE_ID, repository: 'acme/app' });
  await git(remote.bare, ['config', 'svc.timeoutMs', LONG_BUDGET_MS]);
  await remote.commit({ a: '1' });
  await remote.commit({ b: '2' });
  await remote.push();
  await remote.git(['reset', '--quiet', '--hard', 'HEAD~1']);
  const rewritten = await remote.commit({ c: '3' });
  await remote.push('+HEAD:refs/heads/main');
  t.match(payloadOf(hook.got[1]!), { after: rewritten, forced: true });
});

async function bareWithConfig(t: Teardown, url: string, extra: Record<string, string> = {}) {
  const remote = await createGitRemote(t);
  await remote.commit({ 'x.txt': 'x' });
  await remote.push();
  const head = (await git(remote.bare, ['rev-parse', 'HEAD'])).trim();
  // The longest budget the hook allows, unless a test sets its own: a busy machine must not spend
  // the budget before a delivery the test expects is even sent.
  const settings: Record<string, string> = { 'svc.webhookUrl': url, 'svc.secret': SECRET, 'svc.sourceId': SOURCE_ID, 'svc.repository': 'acme/app', 'svc.timeoutMs': LONG_BUDGET_MS, ...extra };
  for (const [k, v] of Object.entries(settings)) await git(remote.bare, ['config', k, v]);
  const lines: string[] = [];
  const warnings: string[] = [];
  const run = (stdin: string) =>
    runPostReceive({ git: hookGit(remote.bare), stdin, env: { USER: 'carol' }, print: (l) => lines.push(l), warn: (l) => warnings.push(l) });
  return { remote, head, run, lines, warnings };
}

t.test('transient failures are retried with the same delivery id', async (t) => {
  const hook = await receiver(t, (n) => (n < 3 ? { status: 503, body: { error: { code: 'X', message: 'busy' } }, headers: { 'retry-after': '0' } } : { status: 200, body: { status: 'accepted' } }));
  const { head, run, lines } = await bareWithConfig(t, hook.url);
  const report = await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  t.equal(hook.got.length, 3);
  t.equal(new Set(hook.got.map((r) => r.headers['x-provider-delivery'])).size, 1, 'one delivery, three attempts');
  t.match(report, { ok: true, deliveries: [{ delivered: true, status: 200, outcome: 'accepted', attempts: 3 }] });
  t.same(lines, ['svc: push main -> 200 accepted']);
  t.match(payloadOf(hook.got[0]!), { sender: { login: 'carol' } }, 'sender from $USER');
});

t.test('a refused delivery is not retried at once and is reported clearly; one a config fix cures is kept, a refused body is not', async (t) => {
  let status = 401;
  const hook = await receiver(t, () => ({ status, body: { error: { code: 'SVC_ERR_TEST_INGEST_SIGNATURE', message: 'bad signature' } } }));
  const { remote, head, run, warnings } = await bareWithConfig(t, hook.url);
  const report = await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  t.equal(hook.got.length, 1);
  t.equal(report.ok, false);
  t.match(warnings[0], /svc: warning: push main was NOT delivered to .* \(401 SVC_ERR_TEST_INGEST_SIGNATURE: bad signature\); kept in .*svc-outbox and sent again at the next push, or now with: svc hook post-receive --flush --git-dir /);
  t.equal(report.outbox, 1, 'a wrong secret is fixed in config; the kept push is signed again then');

  status = 422;
  const again = await run(`${ZERO_SHA} ${head} refs/tags/v2\n`);
  t.match(again.resent, [{ ref: 'refs/heads/main', delivered: false, status: 422 }]);
  t.match(warnings[1], /push main \(kept since .*\) was refused by .* \(422 SVC_ERR_TEST_INGEST_SIGNATURE: bad signature\) and removed from the outbox/);
  t.match(warnings[2], /push tag v2 was NOT delivered to .* \(422 .*\); CI will not run for it\. to resend, run in .*: echo '0{40} [0-9a-f]{40} refs\/tags\/v2' \| svc hook post-receive/);
  t.equal(again.outbox, 0, 'the same bytes would be refused again: nothing kept');
  t.same(await readdir(join(remote.bare, 'svc-outbox')), []);
});

t.test('the outbox: pushes the receiver did not take are sent first at the next push, with their delivery ids, in push order', async (t) => {
  let up = false;
  const hook = await receiver(t, () => (up ? { status: 200, body: { status: 'accepted' } } : { status: 503, headers: { 'retry-after': '0' } }));
  const { remote, head, run, lines, warnings } = await bareWithConfig(t, hook.url);
  const first = await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  const second = await run(`${ZERO_SHA} ${head} refs/tags/v1\n`);
  t.equal(second.resent.length, 1, 'the kept push was tried again first');
  t.equal(second.outbox, 2, 'both kept while the receiver is down');
  t.match(warnings.at(-1), /push tag v1 was NOT delivered .*kept in/);
  const files = (await readdir(join(remote.bare, 'svc-outbox'))).sort();
  t.equal(files.length, 2);
  t.equal((await stat(join(remote.bare, 'svc-outbox', files[0]!))).mode & 0o777, 0o600, 'kept bodies are readable by the repository owner only');

  up = true;
  const sentBefore = hook.got.length;
  const third = await run(`${ZERO_SHA} ${head} refs/heads/topic\n`);
  t.ok(third.ok);
  t.equal(third.outbox, 0);
  const sent = hook.got.slice(sentBefore);
  t.same(sent.map((r) => payloadOf(r)['ref']), ['refs/heads/main', 'refs/tags/v1', 'refs/heads/topic'], 'kept pushes first, in push order');
  t.equal(sent[0]!.headers['x-provider-delivery'], first.deliveries[0]!.deliveryId, 'sent again under its first delivery id (dedup makes a repeat harmless)');
  t.equal(sent[1]!.headers['x-provider-delivery'], second.deliveries[0]!.deliveryId);
  for (const r of sent) checkSigned(t, r);
  t.match(lines, [/^svc: resent push main \(kept since .*\) -> 200 accepted$/, /^svc: resent push tag v1 \(kept since .*\) -> 200 accepted$/, 'svc: push topic -> 200 accepted']);
});

t.test('svc hook post-receive --flush sends the outbox now (no stdin); an unreadable outbox file is named', async (t) => {
  let up = false;
  const hook = await receiver(t, () => (up ? { status: 200, body: { status: 'accepted' } } : { status: 500 }));
  const { remote, head, run } = await bareWithConfig(t, hook.url);
  await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  await writeFile(join(remote.bare, 'svc-outbox', '000000000000000-broken.json'), '{not json');
  up = true;
  const flushed = await runCli(SVC, ['hook', 'post-receive', '--flush', '--git-dir', remote.bare, '--json']);
  t.equal(flushed.code, 1, 'exit 1: a file is left in the outbox');
  t.match(flushed.stderr, /outbox file .*000000000000000-broken\.json cannot be read .*move it away or delete it/);
  const report = JSON.parse(flushed.stdout) as { resent: Array<{ ref: string; delivered: boolean }>; deliveries: unknown[]; outbox: number };
  t.match(report, { resent: [{ ref: 'refs/heads/main', delivered: true }], deliveries: [] });
  t.equal(hook.got.filter((r) => payloadOf(r)['ref'] === 'refs/heads/main').length > 1, true, 'sent again');
  t.same((await readdir(join(remote.bare, 'svc-outbox'))).filter((f) => f !== '000000000000000-broken.json'), [], 'the delivered push left the outbox');
});

t.test('persistent server errors: three attempts, then a warning', async (t) => {
  const hook = await receiver(t, () => ({ status: 500 }));
  const { head, run, warnings } = await bareWithConfig(t, hook.url);
  const report = await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  t.equal(hook.got.length, 3);
  t.match(report.deliveries[0], { delivered: false, status: 500, attempts: 3 });
  t.match(warnings[0], /NOT delivered.*3 attempts/);
});

/** A clock the test moves: a `timeout(ms)` signal fires (as a timeout) only when `advance` passes it. */
function movableClock() {
  let offset = 0;
  const timers = new Set<{ at: number; controller: AbortController }>();
  const now = () => Date.now() + offset;
  return {
    now,
    timeout(ms: number): AbortSignal {
      const controller = new AbortController();
      timers.add({ at: now() + ms, controller });
      return controller.signal;
    },
    advance(ms: number): void {
      offset += ms;
      for (const timer of [...timers]) {
        if (timer.at > now()) continue;
        timers.delete(timer);
        timer.controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
      }
    },
  };
}

t.test('an unreachable or hanging receiver never blocks the push for long', async (t) => {
  const down = await bareWithConfig(t, `http://127.0.0.1:${await closedPort()}/webhook/org-1/git`);
  const r1 = await down.run(`${ZERO_SHA} ${down.head} refs/heads/main\n`);
  t.match(r1.deliveries[0], { delivered: false, status: null, outcome: /ECONNREFUSED|fetch failed/ });
  t.match(down.warnings[0], /NOT delivered/);

  // The hook's 20 s budget is on a clock the test moves: once the hanging receiver has the first
  // delivery, the clock is moved past the budget (nothing waits it out).
  const clock = movableClock();
  const hook = await receiver(t, () => {
    clock.advance(20_000);
    return { status: 200, hang: true };
  });
  const slow = await bareWithConfig(t, hook.url, { 'svc.timeoutMs': '20000' });
  // The receiver hangs forever: the hook returning at all, with the second delivery refused for
  // lack of time, shows the one budget bounds the whole push (no speed bound needed).
  const r2 = await runPostReceive({
    git: hookGit(slow.remote.bare),
    stdin: `${ZERO_SHA} ${slow.head} refs/heads/main\n${ZERO_SHA} ${slow.head} refs/tags/v1\n`,
    env: { USER: 'carol' },
    print: () => undefined,
    warn: () => undefined,
    now: clock.now,
    timeout: clock.timeout,
  });
  t.match(r2.deliveries, [{ delivered: false, outcome: 'timed out' }, { delivered: false, outcome: /budget is spent|no time left/ }]);
  t.equal(hook.got.length, 1, 'the second push was not sent: its budget was spent');
});

t.test('bad stdin lines and other refs are skipped, never sent', async (t) => {
  const hook = await receiver(t);
  const { head, run, lines, warnings } = await bareWithConfig(t, hook.url);
  const report = await run(
    [
      `${ZERO_SHA} ${head} refs/notes/commits`,
      `${ZERO_SHA} ${head} --upload-pack=touch`,
      `$(id) ${head} refs/heads/main`,
      `${ZERO_SHA} ${head} refs/heads/a b`,
      `${ZERO_SHA} ${head} refs/heads/../../x`,
      'garbage',
    ].join('\n'),
  );
  t.equal(hook.got.length, 0);
  t.same(lines, ['svc: skip refs/notes/commits (only branches and tags are sent)']);
  t.equal(warnings.length, 5);
  t.equal(report.ok, false);
});

t.test('missing configuration: a clear warning, nothing sent', async (t) => {
  const hook = await receiver(t);
  const { remote, head, run, warnings } = await bareWithConfig(t, hook.url);
  await git(remote.bare, ['config', '--unset', 'svc.sourceId']);
  const report = await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  t.equal(report.ok, false);
  t.match(warnings[0], /svc\.sourceId is not set/);
  await git(remote.bare, ['config', 'svc.sourceId', SOURCE_ID]);
  await git(remote.bare, ['config', '--unset', 'svc.secret']);
  await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  t.match(warnings[1], /no webhook secret/);
  await git(remote.bare, ['config', 'svc.secretFile', '/nonexistent/secret']);
  await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  t.match(warnings[2], /svc\.secretFile \/nonexistent\/secret cannot be read/);
  await git(remote.bare, ['config', 'svc.webhookUrl', 'ftp://x']);
  await run(`${ZERO_SHA} ${head} refs/heads/main\n`);
  t.match(warnings[3], /svc\.webhookUrl must be an http\(s\) URL/);
  t.equal(hook.got.length, 0);
});

t.test('the CLI: usage errors exit 2; a failed delivery exits 1 with the warning on stderr', async (t) => {
  const remote = await createGitRemote(t);
  const r1 = await runCli(SVC, ['hook', 'post-receive', '--install', remote.bare]);
  t.equal(r1.code, 2);
  t.match(r1.stderr, /--install needs --webhook-url, --secret-file, --source-id/);
  const r2 = await runCli(SVC, ['hook', 'post-receive', '--webhook-url', 'http://x']);
  t.equal(r2.code, 2);
  t.match(r2.stderr, /only used with --install/);
  const r3 = await runCli(SVC, ['hook', 'post-receive', '--install', remote.work, '--webhook-url', 'http://127.0.0.1:1/x', '--secret-file', await secretFile(t), '--source-id', SOURCE_ID]);
  t.equal(r3.code, 1);
  t.match(r3.stderr, /SVC_ERR_HOOK_NOT_BARE/);

  const { remote: r, head } = await bareWithConfig(t, `http://127.0.0.1:${await closedPort()}/webhook/org-1/git`);
  const result = await runCli(SVC, ['hook', 'post-receive'], { cwd: r.bare, env: { ...process.env, GIT_DIR: '.' }, stdin: `${ZERO_SHA} ${head} refs/heads/main\n` });
  t.equal(result.code, 1);
  t.match(result.stderr, /svc: warning: push main was NOT delivered/);
});

t.test('install refuses bad input and foreign hooks, and changes nothing', async (t) => {
  const remote = await createGitRemote(t);
  const secret = await secretFile(t);
  const base = { repo: remote.bare, webhookUrl: 'https://ci.example.test/webhook/acme/git', secretFile: secret, sourceId: SOURCE_ID };
  const configBefore = await git(remote.bare, ['config', '--list', '--local']);
  await t.rejects(installPostReceiveHook({ ...base, webhookUrl: 'not a url' }), { code: 'SVC_ERR_HOOK_CONFIG' });
  await t.rejects(installPostReceiveHook({ ...base, webhookUrl: 'https://user:pw@ci.example.test/x' }), { code: 'SVC_ERR_HOOK_CONFIG' });
  await t.rejects(installPostReceiveHook({ ...base, sourceId: '--upload-pack=x' }), { code: 'SVC_ERR_HOOK_CONFIG' });
  await t.rejects(installPostReceiveHook({ ...base, repository: 'no-slash' }), { code: 'SVC_ERR_HOOK_CONFIG' });
  await t.rejects(installPostReceiveHook({ ...base, repository: '-x/y' }), { code: 'SVC_ERR_HOOK_CONFIG' });
  await t.rejects(installPostReceiveHook({ ...base, remoteUrl: '--upload-pack=touch /tmp/x' }), { code: 'SVC_ERR_HOOK_CONFIG' });
  await t.rejects(installPostReceiveHook({ ...base, secretFile: '/nonexistent' }), { code: 'SVC_ERR_HOOK_SECRET' });
  const empty = join(remote.root, 'empty');
  await writeFile(empty, '');
  await t.rejects(installPostReceiveHook({ ...base, secretFile: empty }), { code: 'SVC_ERR_HOOK_SECRET' });
  await t.rejects(installPostReceiveHook({ ...base, repo: remote.work }), { code: 'SVC_ERR_HOOK_NOT_BARE' });
  await t.rejects(installPostReceiveHook({ ...base, repo: join(remote.root, 'nope') }), { code: 'SVC_ERR_HOOK_NOT_BARE' });
  const foreign = join(remote.bare, 'hooks', 'post-receive');
  await writeFile(foreign, '#!/bin/sh\necho mine\n', { mode: 0o755 });
  await t.rejects(installPostReceiveHook(base), { code: 'SVC_ERR_HOOK_EXISTS' });
  t.equal(await git(remote.bare, ['config', '--list', '--local']), configBefore, 'config unchanged');
  t.equal(await readFile(foreign, 'utf8'), '#!/bin/sh\necho mine\n');
  const forced = await installPostReceiveHook({ ...base, force: true, command: ["/opt/node it's/bin/node", '/opt/svc/bin/svc.js'] });
  const script = await readFile(forced.hookPath, 'utf8');
  t.match(script, `exec '/opt/node it'\\''s/bin/node' '/opt/svc/bin/svc.js' hook post-receive`, 'paths are shell-quoted');
  t.same(forced.config, {
    'svc.webhookUrl': 'https://ci.example.test/webhook/acme/git',
    'svc.secretFile': secret,
    'svc.sourceId': SOURCE_ID,
    'svc.repository': 'local/server',
    'svc.remoteUrl': `file://${remote.bare}`,
  });
  await installPostReceiveHook(base);
  t.pass('reinstalling over our own hook needs no --force');
});
