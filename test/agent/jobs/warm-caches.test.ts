// The agent's warm paths: the spare step runner (slot workspaces), the source and dependency tree
// caches (hit, tamper detection, content-hash memo), and TreeCache's bounds and concurrency.
import { appendFile, lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { TreeCache } from '../../../agent/jobs/tree-cache.ts';
import type { AgentToOrchestrator } from '../../../schemas/wire/agent.ts';
import { dispatchOf, launchAgent } from '../fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from '../fixtures/trees.ts';
import { startOrchestratorDouble } from '../fixtures/ws-orchestrator.ts';

const orch = await startOrchestratorDouble({ token: 'agent-token-1' });
const files = await fileServer();
const tmp = await tempDir('svc-agent-warm-');
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
files.put('source', await readFile(join(tmp.dir, 'source.tar.gz')));
const depsDir = join(tmp.dir, 'deps');
await mkdir(join(depsDir, 'node_modules', 'dep'), { recursive: true });
await writeFile(join(depsDir, 'node_modules', 'dep', 'index.js'), 'module.exports = 1;\n');
const depsHash = await tarball(depsDir, join(tmp.dir, 'deps.tar.gz'), ['node_modules']);
files.put('deps', await readFile(join(tmp.dir, 'deps.tar.gz')));

const ofJob = <T extends AgentToOrchestrator['type']>(jobId: string, type: T) =>
  orch.received.filter((m): m is Extract<AgentToOrchestrator, { type: T }> => m.type === type && (m as { jobId?: string }).jobId === jobId);
const terminal = (jobId: string, timeoutMs = 300_000) => orch.waitFor('job.status', (m) => m.jobId === jobId && m.status !== 'running', timeoutMs);
const logText = (jobId: string) =>
  ofJob(jobId, 'log.chunk')
    .flatMap((c) => c.lines)
    .map((l) => l.text)
    .join('\n');
const run = async (overrides: Parameters<typeof dispatchOf>[0] = {}) => {
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, depsUrl: files.url('deps'), depsHash, ...overrides, jobConfig: { contentHash: tree.contentHash, ...overrides.jobConfig } });
  orch.dispatch(d);
  const done = await terminal(d.jobId);
  return { done, log: logText(d.jobId) };
};

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}
const cacheEntries = async (kind: string) => (await readdir(join(workDir, 'cache', kind)).catch(() => [] as string[])).filter((n) => !n.startsWith('.tmp-'));

t.test('a spare runner waits in a slot before any job; the first job runs in it', async (t) => {
  await until('the spare slot', async () => (await readdir(join(workDir, 'slots')).catch(() => [])).length > 0);
  const { done, log } = await run();
  t.equal(done.status, 'completed', done.reason ?? '');
  t.match(log, /file .*\/slots\/\d+\/src\/\.svc\/workflows\/ci\.ts/, 'the workspace is the spare slot');
  t.match(log, 'restoring source from http');
  t.match(log, /workflow content hash verified \([0-9a-f]{64}\)$/m, 'first use: the tree is hashed');
  t.match(log, "node_modules linked from the agent's dependency cache");
  t.same(await readdir(join(workDir, 'jobs')), [], 'nothing left under jobs/');
});

t.test('second job: source and deps from the tree caches, content hash memoized', async (t) => {
  const before = { source: files.hits('source'), deps: files.hits('deps') };
  const { done, log } = await run();
  t.equal(done.status, 'completed', done.reason ?? '');
  t.equal(files.hits('source'), before.source, 'source not downloaded again');
  t.equal(files.hits('deps'), before.deps, 'deps not downloaded again');
  t.match(log, "held in the agent's tree cache");
  t.match(log, 'this exact source tree was verified by an earlier job');
  t.equal((await cacheEntries('source')).length, 1);
});

t.test('a tampered source cache entry is detected: dropped, downloaded and hashed again', async (t) => {
  const [entry] = await cacheEntries('source');
  t.ok(entry, 'an entry exists');
  // What a job without bwrap could do: change the cached workflow (same size would not help: ctime changes).
  await appendFile(join(workDir, 'cache', 'source', entry!, '.svc', 'workflows', 'ci.ts'), '// injected\n');
  const before = files.hits('source');
  const { done, log } = await run();
  t.equal(done.status, 'completed', done.reason ?? '');
  t.match(log, 'changed since it was stored; dropped it, restoring from the download');
  t.equal(files.hits('source'), before + 1, 'downloaded again');
  t.match(log, /workflow content hash verified \([0-9a-f]{64}\)$/m, 'hashed again, not memoized');
  t.notMatch(log, 'verified by an earlier job');
  const again = await run();
  t.match(again.log, "held in the agent's tree cache", 'the next job uses a fresh entry');
  t.equal(again.done.status, 'completed');
});

t.test('a tampered dependency entry is detected and restored from the download', async (t) => {
  const [entry] = await cacheEntries('deps');
  await writeFile(join(workDir, 'cache', 'deps', entry!, 'node_modules', 'dep', 'index.js'), 'module.exports = 2;\n');
  const before = files.hits('deps');
  const { done, log } = await run();
  t.equal(done.status, 'completed', done.reason ?? '');
  t.match(log, 'cached dependency tree');
  t.equal(files.hits('deps'), before + 1);
});

t.test('drift still fails on a cached tree: a lock hash that does not match is never memoized', async (t) => {
  for (let i = 0; i < 2; i++) {
    const { done, log } = await run({ jobConfig: { contentHash: 'b'.repeat(64) } });
    t.equal(done.status, 'failed');
    t.match(done.reason, /^Lock file is out of date/);
    t.notMatch(log, 'verified by an earlier job');
  }
});

t.test('a job that fails during set-up stops its spare; the next job gets a working runner', async (t) => {
  const bad = await run({ sourceTarDigest: 'c'.repeat(64), sourceTarUrl: files.url('source') });
  t.equal(bad.done.status, 'failed');
  t.match(bad.done.reason, 'source tarball digest mismatch');
  const ok = await run();
  t.equal(ok.done.status, 'completed', ok.done.reason ?? '');
});

t.test('without the spare and caches (options off) jobs run as before', async (t) => {
  const { launchAgent: _unused } = { launchAgent };
  const { startAgent } = await import('../../../agent/agent.ts');
  const { parseAgentEnv } = await import('../../../agent/env.ts');
  const { createProcessSandbox } = await import('../../../plugins/sandboxes/process/index.ts');
  const { SCRIPT_RUNNER } = await import('../fixtures/agent-harness.ts');
  const { pino } = await import('pino');
  const orch2 = await startOrchestratorDouble({ token: 't2' });
  const dir = join(tmp.dir, 'cold');
  const cold = await startAgent({
    settings: parseAgentEnv({ SVC_ORCHESTRATOR_URL: orch2.url, SVC_AGENT_TOKEN: 't2', SVC_AGENT_WORK_DIR: dir }),
    agentId: 'cold-agent',
    logger: pino({ level: 'silent' }),
    sandboxes: new Map([['process', createProcessSandbox({ bwrap: 'never', network: true })]]),
    runnerPath: SCRIPT_RUNNER,
    warmRunner: false,
    treeCaches: false,
  });
  t.teardown(async () => {
    await cold.stop();
    await orch2.close();
  });
  await orch2.waitFor('agent.register');
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash } });
  orch2.dispatch(d);
  const done = await orch2.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 300_000);
  t.equal(done.status, 'completed', done.reason ?? '');
  const text = orch2.received.filter((m) => m.type === 'log.chunk' && m.jobId === d.jobId).flatMap((m) => (m as { lines: { text: string }[] }).lines.map((l) => l.text)).join('\n');
  t.match(text, /file .*\/jobs\/[^/]+\/src\//, 'a per-job directory');
  await t.rejects(lstat(join(dir, 'slots')), 'no slots');
});

t.test('TreeCache: one fill for concurrent leases, refused keys, a failed fill is retried, LRU bounds', async (t) => {
  const cache = new TreeCache({ root: join(tmp.dir, 'tc'), maxEntries: 2, maxBytes: 1024 * 1024 });
  const key = (n: number) => n.toString(16).padStart(64, '0');
  let fills = 0;
  const fill = async (dir: string) => {
    fills++;
    await new Promise((r) => setTimeout(r, 30));
    await writeFile(join(dir, 'f.txt'), 'x');
  };
  const [a, b] = await Promise.all([cache.lease(key(1), fill), cache.lease(key(1), fill)]);
  t.equal(fills, 1, 'one fill');
  t.equal(a.dir, b.dir);
  t.ok(await a.intact());
  a.release();
  b.release();
  await t.rejects(cache.lease('../x', fill), /sha256 hex digest/);
  await t.rejects(cache.lease(key(2), async () => { throw new Error('download failed'); }), /download failed/);
  t.equal(cache.size, 1, 'a failed fill leaves nothing');
  for (const n of [2, 3, 4]) (await cache.lease(key(n), fill)).release();
  // Eviction runs after each release, one directory removal at a time: wait for it (bounded far
  // beyond what a busy machine takes), never a fixed sleep.
  for (const until = Date.now() + 60_000; cache.size > 2 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
  t.ok(cache.size <= 2, `at most 2 entries (${cache.size})`);
  const held = await cache.lease(key(4), fill);
  t.notOk(held.filled, 'the most recent entry survived');
  held.release();
});
