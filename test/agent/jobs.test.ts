// A dispatched job end to end through the agent: restore, content-hash check, the runner in the
// process sandbox, statuses, masked logs, cancel; against a schema-checking orchestrator double.
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { AgentToOrchestrator } from '../../schemas/wire/agent.ts';
import { dispatchOf, launchAgent } from './fixtures/agent-harness.ts';
import { fileServer, gitRepo, makeTree, tarball, tempDir } from './fixtures/trees.ts';
import { startOrchestratorDouble } from './fixtures/ws-orchestrator.ts';
import { PROTOCOL_VERSION } from '../../schemas/wire/relay.ts';

const orch = await startOrchestratorDouble({ token: 'agent-token-1' });
const files = await fileServer();
const tmp = await tempDir('svc-agent-jobs-');
const workDir = join(tmp.dir, 'work');
const agent = await launchAgent({ url: orch.url, token: 'agent-token-1', workDir });
t.teardown(async () => {
  await agent.stop();
  await orch.close();
  await files.close();
  await tmp.cleanup();
});

const tree = await makeTree(join(tmp.dir, 'a'));
const digest = await tarball(tree.dir, join(tmp.dir, 'source.tar.gz'));
const { readFile } = await import('node:fs/promises');
files.put('source', await readFile(join(tmp.dir, 'source.tar.gz')));

const ofJob = <T extends AgentToOrchestrator['type']>(jobId: string, type: T) =>
  orch.received.filter((m): m is Extract<AgentToOrchestrator, { type: T }> => m.type === type && (m as { jobId?: string }).jobId === jobId);
const terminal = (jobId: string, timeoutMs = 30_000) => orch.waitFor('job.status', (m) => m.jobId === jobId && m.status !== 'running', timeoutMs);
const logText = (jobId: string) =>
  ofJob(jobId, 'log.chunk')
    .flatMap((c) => c.lines)
    .map((l) => l.text)
    .join('\n');

t.test('registration carries labels, platform, the protocol, sandboxes and no in-flight jobs', async (t) => {
  const reg = await orch.waitFor('agent.register');
  t.equal(reg.protocolVersion, PROTOCOL_VERSION);
  t.same(reg.labels, ['gpu', 'team-a']);
  t.equal(reg.os, process.platform);
  t.equal(reg.arch, process.arch);
  t.equal(reg.ephemeral, false);
  t.same(reg.sandboxes, ['bare-metal']);
  t.equal(reg.sdkVersion, '0.9.0');
  t.same(reg.inFlightJobs, []);
  t.equal(orch.invalid.length, 0, 'every frame matched the schema');
});

t.test('a job from the source cache runs the runner and reports statuses, logs and outputs', async (t) => {
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: `sha256:${digest}`, jobConfig: { contentHash: tree.contentHash } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'completed', done.reason ?? '');
  t.same(done.outputs, { answer: 42 });
  t.same(done.steps.map((s) => [s.name, s.status]), [['main', 'completed']]);
  const statuses = ofJob(d.jobId, 'job.status').map((m) => m.status);
  // Running at the start, again once set-up ended (with its phases, job-phases.test.ts), then the end.
  t.same(statuses, ['running', 'running', 'completed']);
  const ctx = ofJob(d.jobId, 'job.context')[0];
  t.match(ctx, { nodeVersion: process.version, os: process.platform, arch: process.arch, sandbox: 'bare-metal' });
  t.same(ofJob(d.jobId, 'step.status').map((s) => s.status), ['running', 'completed']);
  const text = logText(d.jobId);
  t.match(text, 'workflow ci job build export default');
  t.match(text, /file .*\.svc\/workflows\/ci\.ts/);
  t.match(text, 'workflow content hash verified');
  t.notMatch(text, 'secret-signature', 'the pre-signed URL query never reaches the log');
  const seqs = ofJob(d.jobId, 'log.chunk').map((c) => c.seq);
  t.same(seqs, seqs.map((_, i) => i), 'seq is monotonic from 0');
  t.same(await readdir(join(workDir, 'jobs')), [], 'work dir removed');
  t.equal(orch.invalid.length, 0);
});

t.test('no source tarball: git checkout at the run sha with the credential out of argv', async (t) => {
  const repoTree = await makeTree(join(tmp.dir, 'repo'));
  const sha = await gitRepo(repoTree.dir);
  const d = dispatchOf({ sourceAuth: { cloneUrl: `file://${repoTree.dir}`, token: 'ghs_checkout_token_value' }, jobConfig: { sha, contentHash: repoTree.contentHash } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'completed', done.reason ?? '');
  t.match(logText(d.jobId), `checking out ${sha}`);
  const bad = dispatchOf({ sourceAuth: { cloneUrl: `file://${repoTree.dir}`, token: 'ghs_checkout_token_value' }, jobConfig: { sha: 'f'.repeat(40), contentHash: repoTree.contentHash } });
  orch.dispatch(bad);
  const failed = await terminal(bad.jobId);
  t.equal(failed.status, 'failed');
  t.match(failed.reason, 'git fetch failed');
  t.notMatch(failed.reason, 'ghs_checkout_token_value');
  const shaInjection = dispatchOf({ sourceAuth: { cloneUrl: '--upload-pack=touch /tmp/pwned' }, jobConfig: { sha } });
  orch.dispatch(shaInjection);
  t.match((await terminal(shaInjection.jobId)).reason, 'clone URL');
});

t.test('content-hash mismatch fails at init, before any step, with the drift text', async (t) => {
  const drift = await makeTree(join(tmp.dir, 'drift'));
  await mkdir(join(drift.dir, 'shared'), { recursive: true });
  await writeFile(join(drift.dir, 'shared', 'lib.ts'), 'export const x = 1;\n');
  await symlink('../shared/lib.ts', join(drift.dir, '.svc', 'lib.ts'));
  await writeFile(join(drift.dir, '.svc', 'workflows', 'ci.ts'), 'export default { changed: true };\n');
  const dg = await tarball(drift.dir, join(tmp.dir, 'drift.tar.gz'));
  files.put('drift', await readFile(join(tmp.dir, 'drift.tar.gz')));
  const d = dispatchOf({ sourceTarUrl: files.url('drift'), sourceTarDigest: dg, jobConfig: { contentHash: drift.contentHash } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'failed');
  t.match(done.reason, /^Lock file is out of date/);
  t.match(done.reason, 'agent SDK version 0.9.0');
  t.match(done.reason, /bundle hash [0-9a-f]{64}/);
  t.match(done.reason, 'symlinks');
  t.match(done.reason, '.svc/lib.ts');
  t.equal(ofJob(d.jobId, 'step.status').length, 0, 'no step started');
});

t.test('source tarball download failure is a hard failure (no checkout fallback)', async (t) => {
  const repoTree = await makeTree(join(tmp.dir, 'fallback'));
  const sha = await gitRepo(repoTree.dir);
  files.put('broken', Buffer.from('x'), 'fail');
  const d = dispatchOf({ sourceTarUrl: files.url('broken'), sourceTarDigest: digest, sourceAuth: { cloneUrl: `file://${repoTree.dir}` }, jobConfig: { sha, contentHash: repoTree.contentHash } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'failed');
  t.match(done.reason, 'source tarball download failed (hard failure, no rebuild from checkout)');
  t.notMatch(logText(d.jobId), 'checking out');
  const wrong = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: 'a'.repeat(64), jobConfig: { contentHash: tree.contentHash } });
  orch.dispatch(wrong);
  t.match((await terminal(wrong.jobId)).reason, 'source tarball digest mismatch');
});

t.test('dependency tarball: hash mismatch is tried three times then fails; download failure installs inline', async (t) => {
  const depsDir = join(tmp.dir, 'deps');
  await mkdir(join(depsDir, 'node_modules', 'dep'), { recursive: true });
  await writeFile(join(depsDir, 'node_modules', 'dep', 'index.js'), 'module.exports = 1;\n');
  const depsHash = await tarball(depsDir, join(tmp.dir, 'deps.tar.gz'), ['node_modules']);
  files.put('deps-corrupt', await readFile(join(tmp.dir, 'deps.tar.gz')), 'corrupt');
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, depsUrl: files.url('deps-corrupt'), depsHash, jobConfig: { contentHash: tree.contentHash } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'failed');
  t.match(done.reason, 'dependency tarball hash mismatch after 3 attempts');
  t.equal(files.hits('deps-corrupt'), 3, 'three attempts in all');

  files.put('deps-ok', await readFile(join(tmp.dir, 'deps.tar.gz')));
  const ok = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, depsUrl: files.url('deps-ok'), depsHash, jobConfig: { contentHash: tree.contentHash } });
  orch.dispatch(ok);
  t.equal((await terminal(ok.jobId)).status, 'completed');
  t.match(logText(ok.jobId), 'dependencies restored from cache');

  const withLock = await makeTree(join(tmp.dir, 'inline'), {
    '.svc/package.json': JSON.stringify({ name: 'wf', version: '1.0.0', private: true }),
    '.svc/package-lock.json': JSON.stringify({ name: 'wf', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'wf', version: '1.0.0' } } }),
  });
  const ig = await tarball(withLock.dir, join(tmp.dir, 'inline.tar.gz'));
  files.put('inline-src', await readFile(join(tmp.dir, 'inline.tar.gz')));
  files.put('deps-gone', Buffer.from(''), 'fail');
  const inline = dispatchOf({ sourceTarUrl: files.url('inline-src'), sourceTarDigest: ig, depsUrl: files.url('deps-gone'), depsHash, jobConfig: { contentHash: withLock.contentHash } });
  orch.dispatch(inline);
  const inlineDone = await terminal(inline.jobId, 120_000);
  t.equal(inlineDone.status, 'completed', inlineDone.reason ?? '');
  t.match(logText(inline.jobId), 'falling back to an inline install');
  t.match(logText(inline.jobId), 'npm ci --ignore-scripts');
});

t.test('secrets are masked in every forwarded line, split or encoded', async (t) => {
  const pem = '-----BEGIN KEY-----\nAAAABBBBCCCCDDDD\n-----END KEY-----';
  const d = dispatchOf({
    sourceTarUrl: files.url('source'),
    sourceTarDigest: digest,
    jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'secrets' }, secrets: { API_KEY: 'sk_live_0123456789', PEM: pem, SHORT: 'abc' } },
  });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'completed', done.reason ?? '');
  const text = logText(d.jobId);
  t.notMatch(text, 'sk_live_0123456789');
  t.notMatch(text, 'sk_li');
  t.notMatch(text, '0123456789');
  t.notMatch(text, 'AAAABBBBCCCCDDDD');
  t.notMatch(text, 'late-secret-value');
  t.notMatch(text, Buffer.from('sk_live_0123456789').toString('base64'));
  t.match(text, 'plain *** end');
  t.match(text, 'raw *** tail', 'secret split across two raw writes');
  t.match(text, 'now *** is hidden');
  t.match(text, 'b64 ***');
  t.match(text, 'short abc', 'values under 4 characters are not masked');
  t.match(text, 'shorter than 4 characters are not masked');
});

t.test('runner api: minted token masked, emit relayed, bad args refused', async (t) => {
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'api' } } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'completed', done.reason ?? '');
  const text = logText(d.jobId);
  t.match(text, 'token=***');
  t.notMatch(text, 'minted-token-body');
  t.match(text, 'emit {"deliveryId":"delivery-1"}');
  t.match(text, 'SVC_ERR_AGENT_API_ARGS');
  t.match(ofJob(d.jobId, 'event.emit')[0], { eventName: 'deployed', payload: { ok: true } });
  t.match(ofJob(d.jobId, 'oidc.token.request')[0], { audience: 'sts.example' });
});

t.test('cancel: cooperative runner, grace then kill, force', async (t) => {
  const coop = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'cooperative' } } });
  orch.dispatch(coop);
  await orch.waitFor('step.status', (m) => m.jobId === coop.jobId && m.status === 'running');
  orch.send({ type: 'job.cancel', jobId: coop.jobId, reason: 'user asked', force: false });
  const c1 = await terminal(coop.jobId);
  t.equal(c1.status, 'cancelled');
  t.match(c1.reason, 'user asked');

  const hang = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'hang' }, gracePeriodSeconds: 1 } });
  orch.dispatch(hang);
  await orch.waitFor('step.status', (m) => m.jobId === hang.jobId && m.status === 'running');
  const started = Date.now();
  orch.send({ type: 'job.cancel', jobId: hang.jobId, reason: 'stop it', force: false });
  const c2 = await terminal(hang.jobId);
  const took = Date.now() - started;
  t.equal(c2.status, 'cancelled');
  // The lower bound is the behaviour (the grace was given); the upper one is left to the hang
  // script, which never ends by itself, so a kill that never came would time the test out.
  t.ok(took >= 900, `killed after the 1 s grace (${took} ms)`);
  t.match(logText(hang.jobId), 'grace period of 1s over');

  const forced = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'hang' }, gracePeriodSeconds: 3600 } });
  orch.dispatch(forced);
  await orch.waitFor('step.status', (m) => m.jobId === forced.jobId && m.status === 'running');
  const t0 = Date.now();
  orch.send({ type: 'job.cancel', jobId: forced.jobId, reason: 'now', force: true });
  const c3 = await terminal(forced.jobId);
  t.equal(c3.status, 'cancelled');
  // A grace of an hour: only a force cancel (no grace) ends the hang script within the guard.
  t.ok(Date.now() - t0 < 300_000, 'hang guard: force kills without the grace');
  t.notMatch(logText(forced.jobId), 'grace period of', 'no grace was given');
});

t.test('a runner that dies without a result fails the job', async (t) => {
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'crash' } } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'failed');
  t.match(done.reason, 'exit code 3');
});
