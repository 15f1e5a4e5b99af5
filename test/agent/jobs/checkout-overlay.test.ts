// With a cached source and checkout enabled, the job works on a real checkout of the repository
// at the run's sha, with the cached workflow tree (the one the lock was hashed over) in `.svc/`.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import t from 'tap';
import { dispatchOf, launchAgent } from '../fixtures/agent-harness.ts';
import { fileServer, gitRepo, makeTree, tarball, tempDir } from '../fixtures/trees.ts';
import { startOrchestratorDouble } from '../fixtures/ws-orchestrator.ts';

const orch = await startOrchestratorDouble({ token: 'agent-token-2' });
const files = await fileServer();
const tmp = await tempDir('svc-agent-overlay-');
const agent = await launchAgent({ url: orch.url, token: 'agent-token-2', workDir: join(tmp.dir, 'work') });
t.teardown(async () => {
  await agent.stop();
  await orch.close();
  await files.close();
  await tmp.cleanup();
});

const terminal = (jobId: string) => orch.waitFor('job.status', (m) => m.jobId === jobId && m.status !== 'running', 300_000);
const logText = (jobId: string) =>
  orch.received
    .filter((m) => m.type === 'log.chunk' && m.jobId === jobId)
    .flatMap((m) => (m as { lines: { text: string }[] }).lines.map((l) => l.text))
    .join('\n');

// The cached tree, then a repository whose committed `.svc/` has drifted from it.
const cached = await makeTree(join(tmp.dir, 'cached'));
const digest = await tarball(cached.dir, join(tmp.dir, 'source.tar.gz'), ['.svc']);
const { readFile } = await import('node:fs/promises');
files.put('source', await readFile(join(tmp.dir, 'source.tar.gz')));
const repo = await makeTree(join(tmp.dir, 'repo'), { 'project.txt': 'the project\n', 'src/app.js': 'console.log(1)\n' });
await writeFile(join(repo.dir, '.svc', 'workflows', 'ci.ts'), "export default { name: 'ci', drifted: true };\n");
const sha = await gitRepo(repo.dir);

t.test('checkout enabled: repository files plus the cached .svc/', async (t) => {
  const d = dispatchOf({
    sourceTarUrl: files.url('source'),
    sourceTarDigest: digest,
    sourceAuth: { cloneUrl: `file://${repo.dir}` },
    jobConfig: { sha, contentHash: cached.contentHash, checkout: { enabled: true, depth: 1 }, env: { SCRIPT: 'listing' } },
  });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'completed', done.reason ?? '');
  const text = logText(d.jobId);
  t.match(text, `checking out ${sha}`);
  t.match(text, /files=.*project\.txt/, 'the checkout is in the workspace');
  t.match(text, /files=.*src/);
  t.match(text, "workflow=export default { name: 'ci' };", 'the cached workflow tree replaced the checkout one');
  t.match(text, 'workflow content hash verified');
});

t.test('checkout disabled: only the cached workflow tree, no git', async (t) => {
  const d = dispatchOf({
    sourceTarUrl: files.url('source'),
    sourceTarDigest: digest,
    sourceAuth: { cloneUrl: 'file:///nonexistent' },
    jobConfig: { sha, contentHash: cached.contentHash, checkout: { enabled: false, depth: 1 }, env: { SCRIPT: 'listing' } },
  });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'completed', done.reason ?? '');
  t.notMatch(logText(d.jobId), 'checking out');
  t.notMatch(logText(d.jobId), 'project.txt');
});

t.test('full history when depth is 0', async (t) => {
  const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
  await writeFile(join(repo.dir, 'project.txt'), 'second\n');
  await execa('git', ['commit', '-qam', 'second'], { cwd: repo.dir, env });
  const head = (await execa('git', ['rev-parse', 'HEAD'], { cwd: repo.dir })).stdout.trim();
  const d = dispatchOf({
    sourceTarUrl: files.url('source'),
    sourceTarDigest: digest,
    sourceAuth: { cloneUrl: `file://${repo.dir}` },
    jobConfig: { sha: head, contentHash: cached.contentHash, checkout: { enabled: true, depth: 0 }, env: { SCRIPT: 'listing' } },
  });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  t.equal(done.status, 'completed', done.reason ?? '');
  t.match(logText(d.jobId), `checking out ${head} (full history)`);
});
