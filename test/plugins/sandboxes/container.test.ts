// The container sandbox: a real job runs its step runner inside a real podman container built
// from a rootfs tarball; a host without a usable runtime fails container jobs before clone.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { SandboxExtensionPoint } from '../../../core/extension-points/sandbox.ts';
import { createContainerSandbox } from '../../../plugins/sandboxes/container/index.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { findExecutable } from '../../../plugins/sandboxes/shared/which.ts';
import { dispatchOf, launchAgent } from '../../agent/fixtures/agent-harness.ts';
import { fileServer, gitRepo, makeTree, tarball, tempDir } from '../../agent/fixtures/trees.ts';
import { startOrchestratorDouble } from '../../agent/fixtures/ws-orchestrator.ts';
import { buildTestImage } from '../../fixtures/rootfs/build.ts';

const tmp = await tempDir('svc-sbx-container-');
const files = await fileServer();
t.teardown(async () => {
  await files.close();
  await tmp.cleanup();
});
const tree = await makeTree(join(tmp.dir, 'a'));
const digest = await tarball(tree.dir, join(tmp.dir, 'source.tar.gz'));
files.put('source', await readFile(join(tmp.dir, 'source.tar.gz')));

async function agentWith(container: SandboxExtensionPoint, name: string) {
  const orch = await startOrchestratorDouble();
  const sandboxes = new Map<string, SandboxExtensionPoint>([
    ['process', createProcessSandbox({ bwrap: 'never', network: true })],
    ['container', container],
  ]);
  const agent = await launchAgent({ url: orch.url, workDir: join(tmp.dir, name), sandboxes });
  return { orch, agent };
}

const podman = await findExecutable('podman');
t.test('a container job runs its runner in a real podman container', { skip: podman === null ? 'podman is not installed' : false, timeout: 600_000 }, async (t) => {
  const image = await buildTestImage(podman!);
  const { orch, agent } = await agentWith(createContainerSandbox({ runtime: 'podman', network: false }), 'w1');
  t.teardown(async () => {
    await agent.stop();
    await orch.close();
  });
  t.same(agent.sandboxes, ['process', 'container'], 'registers the container sandbox');
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'whereami' }, container: { image } } });
  orch.dispatch(d);
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 90_000);
  t.equal(done.status, 'completed', done.reason ?? '');
  const ctx = await orch.waitFor('job.context', (m) => m.jobId === d.jobId);
  t.equal(ctx.sandbox, 'container');
  const text = orch.received.filter((m) => m.type === 'log.chunk' && m.jobId === d.jobId).flatMap((m) => (m.type === 'log.chunk' ? m.lines.map((l) => l.text) : [])).join('\n');
  t.match(text, 'containerenv=true', 'podman marks the runner as inside a container');
  t.match(text, 'busybox=true', 'the image file system is the rootfs tarball');
  t.match(text, 'os-release=none', 'not the host root');
});

t.test('a host without a usable runtime fails the container job before clone, naming it', async (t) => {
  const { orch, agent } = await agentWith(createContainerSandbox({ runtime: 'docker', network: true }), 'w2');
  t.teardown(async () => {
    await agent.stop();
    await orch.close();
  });
  t.same(agent.sandboxes, ['process'], 'no container sandbox is advertised');
  const repo = await makeTree(join(tmp.dir, 'repo'));
  const sha = await gitRepo(repo.dir);
  const d = dispatchOf({ sourceAuth: { cloneUrl: `file://${repo.dir}` }, jobConfig: { sha, contentHash: repo.contentHash, container: { image: 'node:24' } } });
  orch.dispatch(d);
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running');
  t.equal(done.status, 'failed');
  t.match(done.reason, /container job cannot start: docker is missing: no container runtime: docker (is not installed|is installed but its engine is not reachable)/);
  const text = orch.received.filter((m) => m.type === 'log.chunk' && m.jobId === d.jobId).flatMap((m) => (m.type === 'log.chunk' ? m.lines.map((l) => l.text) : [])).join('\n');
  t.notMatch(text, 'checking out', 'failed before clone');
});

t.test('bad images are refused before anything runs', async (t) => {
  const sandbox = createContainerSandbox({ runtime: 'auto', network: true });
  if (!(await sandbox.available()).available) return t.comment('no container runtime');
  const ws = await sandbox.prepareWorkspace({ jobId: 'x', sourceDir: tmp.dir });
  for (const image of ['--privileged', 'a b', '']) {
    await t.rejects(sandbox.spawn({ workspace: ws, argv: ['true'], env: {}, cwd: ws.dir, image }), { code: 'SVC_ERR_SANDBOX_IMAGE' });
  }
  await sandbox.releaseWorkspace(ws);
});
