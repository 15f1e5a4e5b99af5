// Checkouts from the agent's repository store (docs/agent.md "Repository stores"): each job sees
// exactly its commit's tree, later commits fetch only into the store, a commit already there is
// not fetched, force-pushed history works, concurrent jobs of one repository, a corrupted store
// is rebuilt (changed under a running agent, or found broken by the next agent process), and the
// checkout works under bubblewrap, where the store is read-only. Real git, real agent, script runner.
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { join } from 'node:path';
import t from 'tap';
import type { RunningAgent } from '../../../agent/agent.ts';
import { storeWriteEnv } from '../../../agent/jobs/repo-store.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { dispatchOf, launchAgent } from '../fixtures/agent-harness.ts';
import { makeTree, tempDir } from '../fixtures/trees.ts';
import { startOrchestratorDouble } from '../fixtures/ws-orchestrator.ts';
import { createGitRemote, type GitRemote } from '../../fixtures/git-repos.ts';
import { findExecutable } from '../../../plugins/sandboxes/shared/which.ts';

const execFileAsync = promisify(execFile);
const orch = await startOrchestratorDouble({ token: 'agent-token-store' });
const tmp = await tempDir('svc-agent-store-');
const workDir = join(tmp.dir, 'work');
let agent: RunningAgent = await launchAgent({ url: orch.url, token: 'agent-token-store', workDir });
t.teardown(async () => {
  await agent.stop();
  await orch.close();
  await tmp.cleanup();
});

const terminal = (jobId: string) => orch.waitFor('job.status', (m) => m.jobId === jobId && m.status !== 'running', 60_000);
const logText = (jobId: string) =>
  orch.received
    .filter((m) => m.type === 'log.chunk' && m.jobId === jobId)
    .flatMap((m) => (m as { lines: { text: string }[] }).lines.map((l) => l.text))
    .join('\n');

// A repository whose `.svc/` is a valid workflow tree (the content hash is checked on checkout jobs).
const base = await makeTree(join(tmp.dir, 'base'));
const remote: GitRemote = await createGitRemote(t);
const svcFiles: Record<string, string> = {};
for (const rel of ['.svc/svc.lock.json', '.svc/workflows/ci.ts']) svcFiles[rel] = await readFile(join(base.dir, rel), 'utf8');
const c1 = await remote.commit({ ...svcFiles, 'app.txt': 'version one', 'gone.txt': 'here in c1' }, 'c1');
await remote.push('HEAD:refs/heads/main');
const c2 = await remote.commit({ 'app.txt': 'version two', 'gone.txt': null }, 'c2');
await remote.push('HEAD:refs/heads/main');

async function runAt(sha: string, files = 'app.txt,gone.txt') {
  const d = dispatchOf({ sourceAuth: { cloneUrl: remote.url }, jobConfig: { sha, contentHash: base.contentHash, env: { SCRIPT: 'gitview', FILES: files } } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  return { done, text: logText(d.jobId) };
}

const storeDirs = async () => (await readdir(join(workDir, 'git'))).sort();

t.test('each job sees exactly its commit: changed and deleted files, git works in the workspace', async (t) => {
  const one = await runAt(c1);
  t.equal(one.done.status, 'completed', one.done.reason ?? '');
  t.match(one.text, `checking out ${c1} (from the agent's repository store)`);
  t.match(one.text, `fetching ${c1} into the repository store`);
  t.match(one.text, 'file app.txt=version one');
  t.match(one.text, 'file gone.txt=here in c1');
  t.match(one.text, `head=${c1}`);
  t.match(one.text, `log=${c1}\n`, 'depth 1: the job sees one commit, as a fresh depth-1 fetch shows it');
  t.match(one.text, 'status=[]', 'the work tree matches the commit');
  t.match(one.text, 'alternates readable=true');

  const two = await runAt(c2);
  t.equal(two.done.status, 'completed', two.done.reason ?? '');
  t.match(two.text, `fetching ${c2} into the repository store`);
  t.match(two.text, 'file app.txt=version two');
  t.match(two.text, 'file gone.txt=ABSENT', 'a file deleted in the later commit is absent');
  t.match(two.text, `log=${c2}\n`);
  t.match(two.text, 'status=[]');

  const again = await runAt(c1);
  t.equal(again.done.status, 'completed', again.done.reason ?? '');
  t.notMatch(again.text, 'fetching', 'a commit already in the store is not fetched');
  t.match(again.text, 'file app.txt=version one');
  t.match(again.text, 'file gone.txt=here in c1');
  t.equal((await storeDirs()).length, 1, 'one store for the repository');
  t.same(await readdir(join(workDir, 'jobs')), [], 'job trees removed');
});

t.test('force-pushed history: a rewritten branch still checks out', async (t) => {
  await remote.git(['checkout', '-q', '--orphan', 'rewritten']);
  const c3 = await remote.commit({ ...svcFiles, 'app.txt': 'rewritten' }, 'rewritten root');
  await remote.push('+HEAD:refs/heads/main');
  const run = await runAt(c3);
  t.equal(run.done.status, 'completed', run.done.reason ?? '');
  t.match(run.text, 'file app.txt=rewritten');
  t.match(run.text, `log=${c3}\n`);
});

t.test('submodules and LFS pointers come out as the per-job fetch leaves them (not initialised, not smudged)', async (t) => {
  const sub = await createGitRemote(t);
  await sub.commit({ 'inner.txt': 'inner' }, 'sub');
  await sub.push('HEAD:refs/heads/main');
  await remote.git(['-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', sub.url, 'sub']);
  const lfsPointer = 'version https://git-lfs.github.com/spec/v1\noid sha256:' + 'a'.repeat(64) + '\nsize 12';
  const head = await remote.commit({ '.gitattributes': 'big.bin filter=lfs diff=lfs merge=lfs -text\n', 'big.bin': `${lfsPointer}\n` }, 'submodule and lfs');
  await remote.push('+HEAD:refs/heads/main');
  const files = 'sub,big.bin';
  const fromStore = await runAt(head, files);
  t.equal(fromStore.done.status, 'completed', fromStore.done.reason ?? '');
  t.match(fromStore.text, "checking out " + head + " (from the agent's repository store)");
  // depth 0 takes the per-job fetch (the path every checkout took before the store).
  const d = dispatchOf({ sourceAuth: { cloneUrl: remote.url }, jobConfig: { sha: head, contentHash: base.contentHash, checkout: { enabled: true, depth: 0 }, env: { SCRIPT: 'gitview', FILES: files } } });
  orch.dispatch(d);
  const perJob = { done: await terminal(d.jobId), text: logText(d.jobId) };
  t.equal(perJob.done.status, 'completed', perJob.done.reason ?? '');
  t.notMatch(perJob.text, 'repository store');
  const shown = (text: string) => text.split('\n').filter((l) => l.startsWith('file ') || l.startsWith('status='));
  t.same(shown(fromStore.text), shown(perJob.text), 'the same files either way');
  t.ok(shown(fromStore.text).includes('file sub=DIR(0)'), 'the submodule is an empty directory');
  t.match(fromStore.text, 'file big.bin=version https://git-lfs.github.com/spec/v1', 'the LFS pointer, not smudged');
});

t.test('concurrent jobs of one repository share the store without harm', async (t) => {
  const shas: string[] = [];
  for (let i = 0; i < 4; i++) {
    shas.push(await remote.commit({ 'app.txt': `parallel ${i}` }, `p${i}`));
    await remote.push('+HEAD:refs/heads/main');
  }
  const runs = await Promise.all(shas.map((sha) => runAt(sha)));
  runs.forEach((run, i) => {
    t.equal(run.done.status, 'completed', run.done.reason ?? '');
    t.match(run.text, `file app.txt=parallel ${i}`);
    t.match(run.text, `head=${shas[i]}`);
    t.match(run.text, 'status=[]');
  });
});

/** Overwrite the middle of every pack file in the store (a disk error, a stray write). */
async function corruptStore(): Promise<void> {
  const [store] = await storeDirs();
  const packDir = join(workDir, 'git', store!, 'objects', 'pack');
  for (const name of await readdir(packDir)) {
    if (!name.endsWith('.pack')) continue;
    const bytes = await readFile(join(packDir, name));
    bytes.fill(0x41, 12, bytes.length - 20);
    await writeFile(join(packDir, name), bytes);
  }
}

t.test('a store changed behind the running agent is rebuilt, not trusted', async (t) => {
  const before = await storeDirs();
  await corruptStore();
  const run = await runAt(c1);
  t.equal(run.done.status, 'completed', run.done.reason ?? '');
  t.match(run.text, 'the repository store was changed outside the agent; rebuilding it');
  t.match(run.text, `fetching ${c1} into the repository store`);
  t.match(run.text, 'file app.txt=version one');
  t.not((await storeDirs())[0], before[0], 'a new store generation');
  t.equal((await storeDirs()).length, 1, 'the corrupt generation is deleted');
});

t.test('a corrupt store left by an earlier agent process fails its fsck and is rebuilt', async (t) => {
  await agent.stop();
  await corruptStore();
  agent = await launchAgent({ url: orch.url, token: 'agent-token-store', workDir });
  const run = await runAt(c2);
  t.equal(run.done.status, 'completed', run.done.reason ?? '');
  t.match(run.text, 'the repository store failed its check');
  t.match(run.text, 'file app.txt=version two');
  t.match(run.text, 'file gone.txt=ABSENT');
  t.equal((await storeDirs()).length, 1);
  // A sound store survives a restart: used after its fsck, without a new fetch.
  await agent.stop();
  agent = await launchAgent({ url: orch.url, token: 'agent-token-store', workDir });
  const after = await runAt(c2);
  t.equal(after.done.status, 'completed', after.done.reason ?? '');
  t.notMatch(after.text, 'fetching');
  t.notMatch(after.text, 'rebuilding');
  t.match(after.text, 'file app.txt=version two');
});

t.test('under bubblewrap the job sees the checkout and git reads the read-only store', { skip: (await findExecutable('bwrap')) === null ? 'bwrap is not installed (apt-get install bubblewrap)' : false }, async (t) => {
  await agent.stop();
  agent = await launchAgent({ url: orch.url, token: 'agent-token-store', workDir, sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'always', network: true })]]) });
  const run = await runAt(c1);
  t.equal(run.done.status, 'completed', run.done.reason ?? '');
  t.match(run.text, 'file app.txt=version one');
  t.match(run.text, 'alternates readable=true');
  t.match(run.text, `head=${c1}`);
  t.match(run.text, 'status=[]');
});

t.test("a fetch into a store skips git's fsyncs, and keeps the credential header's config entry", async (t) => {
  const base = { PATH: process.env['PATH'] ?? '', HOME: tmp.dir, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
  const withHeader = { ...base, GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: 'Authorization: Basic eDp5' };
  const env = storeWriteEnv(withHeader);
  t.match(env, { GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_KEY_1: 'core.fsync', GIT_CONFIG_VALUE_1: 'none' });
  t.match(storeWriteEnv(base), { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'core.fsync', GIT_CONFIG_VALUE_0: 'none' });
  // What git itself reports: trace2's fsync counters for a real depth-1 fetch into a fresh bare store.
  const fetchTraced = async (name: string, fetchEnv: Record<string, string>) => {
    const dir = join(tmp.dir, name);
    const trace = join(tmp.dir, `${name}.trace`);
    await execFileAsync('git', ['init', '-q', '--bare', dir], { env: base });
    await execFileAsync('git', ['config', 'fetch.unpackLimit', '1'], { cwd: dir, env: base });
    await execFileAsync('git', ['fetch', '-q', '--depth=1', '--', remote.url, `+${c2}:refs/svc/c/${c2}`], { cwd: dir, env: { ...fetchEnv, GIT_TRACE2_PERF: trace } });
    return readFile(trace, 'utf8');
  };
  t.match(await fetchTraced('plain-store', base), /fsync\/hardware-flush:[1-9]/, 'by default git flushes the pack it writes (the check can tell)');
  t.notMatch(await fetchTraced('agent-store', storeWriteEnv(base)), /fsync\/hardware-flush:[1-9]/, 'with the store environment it does not');
});
