// The container sandbox: a real job runs its step runner inside a real podman container built
// from a rootfs tarball, over Node's IPC descriptor and over the unix-socket transport; the same
// job on docker when an engine answers (skipped, saying so, where none does); a host without a
// usable runtime fails container jobs before clone.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import t, { type Test } from 'tap';
import type { SandboxExtensionPoint } from '../../../core/extension-points/sandbox.ts';
import { createContainerSandbox } from '../../../plugins/sandboxes/container/index.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { findExecutable } from '../../../plugins/sandboxes/shared/which.ts';
import { RUNNER_SOCKET_NAME } from '../../../plugins/sandboxes/container/socket-ipc.ts';
import { SCRIPT_RUNNER, dispatchOf, launchAgent } from '../../agent/fixtures/agent-harness.ts';
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
const jobText = (orch: Awaited<ReturnType<typeof startOrchestratorDouble>>, jobId: string) =>
  orch.received.filter((m) => m.type === 'log.chunk' && m.jobId === jobId).flatMap((m) => (m.type === 'log.chunk' ? m.lines.map((l) => l.text) : [])).join('\n');

/** The whereami job in `container`; then a job that ignores cancel is cancelled and killed. */
async function runJobs(t: Test, container: SandboxExtensionPoint, name: string, image: string, transport: 'node-ipc' | 'socket', marker: RegExp) {
  const { orch, agent } = await agentWith(container, name);
  t.teardown(async () => {
    await agent.stop();
    await orch.close();
  });
  t.same(agent.sandboxes, ['process', 'container'], 'registers the container sandbox');
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'whereami' }, container: { image } } });
  orch.dispatch(d);
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 180_000);
  t.equal(done.status, 'completed', done.reason ?? '');
  const ctx = await orch.waitFor('job.context', (m) => m.jobId === d.jobId);
  t.equal(ctx.sandbox, 'container');
  const text = jobText(orch, d.jobId);
  t.match(text, marker, 'the runner is inside a container');
  t.match(text, 'busybox=true', 'the image file system is the rootfs tarball');
  t.match(text, 'os-release=none', 'not the host root');
  t.match(text, `transport=${transport}`, `the runner's channel is ${transport}`);

  const hang = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'hang' }, container: { image }, gracePeriodSeconds: 1 } });
  orch.dispatch(hang);
  await orch.waitFor('step.status', (m) => m.jobId === hang.jobId && m.status === 'running', 180_000);
  orch.send({ type: 'job.cancel', jobId: hang.jobId, reason: 'stop it', force: false });
  const c = await orch.waitFor('job.status', (m) => m.jobId === hang.jobId && m.status !== 'running', 180_000);
  t.equal(c.status, 'cancelled', 'a runner ignoring the cancel is killed after the grace');
  return text;
}

t.test('a container job runs its runner in a real podman container (Node IPC descriptor)', { skip: podman === null ? 'podman is not installed' : false, timeout: 900_000 }, async (t) => {
  const image = await buildTestImage(podman!);
  await runJobs(t, createContainerSandbox({ runtime: 'podman', network: false }), 'w1', image, 'node-ipc', /containerenv=true/);
});

t.test('the same jobs on podman over the unix-socket transport (ipcTransport: socket)', { skip: podman === null ? 'podman is not installed' : false, timeout: 900_000 }, async (t) => {
  const image = await buildTestImage(podman!);
  await runJobs(t, createContainerSandbox({ runtime: 'podman', network: false, ipcTransport: 'socket' }), 'w3', image, 'socket', /containerenv=true/);
});

t.test('socket transport at the sandbox: the socket file goes once the runner connects, nobody else can connect, the job runs', { skip: podman === null ? 'podman is not installed' : false, timeout: 900_000 }, async (t) => {
  const image = await buildTestImage(podman!);
  const sandbox = createContainerSandbox({ runtime: 'podman', network: false, ipcTransport: 'socket' });
  const ws = await sandbox.prepareWorkspace({ jobId: 'sock', sourceDir: tree.dir });
  t.teardown(() => sandbox.releaseWorkspace(ws));
  const socketPath = join(ws.tmpDir!, RUNNER_SOCKET_NAME);
  const proc = await sandbox.spawn({ workspace: ws, argv: [process.execPath, SCRIPT_RUNNER], env: { PATH: '/bin' }, cwd: ws.dir, ipc: true, image, readPaths: [process.execPath, resolve(import.meta.dirname, '../../..')] });
  t.ok(existsSync(socketPath), 'the socket waits in the scratch dir for the runner');
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const messages: Array<{ type: string; [k: string]: unknown }> = [];
  const ready = Promise.withResolvers<void>();
  proc.onMessage!((m) => {
    messages.push(m as { type: string });
    if ((m as { type: string }).type === 'runner.ready') ready.resolve();
  });
  await ready.promise;
  t.notOk(existsSync(socketPath), 'the socket file is removed once the runner is connected');
  const second = await new Promise<string>((done) => connect(socketPath).once('connect', () => done('connected')).once('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message)));
  t.equal(second, 'ENOENT', 'a second connection finds no socket');
  proc.send!({ type: 'runner.start', env: { SCRIPT: 'basic' }, secrets: {}, workflowName: 'ci', jobName: 'build', exportName: 'default', workflowFile: '/x.ts', workspace: ws.dir });
  const exit = await proc.exited;
  t.equal(exit.code, 0, stderr);
  t.match(messages.find((m) => m.type === 'runner.result'), { status: 'completed', outputs: { answer: 42 } }, 'the result came over the socket');
  t.ok(existsSync(ws.tmpDir!), 'the scratch dir is still there (released later)');
  t.notOk(existsSync(socketPath), 'no socket file after the job');
});

const dockerInfo = await execa('docker', ['info', '--format', '{{.ServerVersion}}'], { reject: false, timeout: 30_000 });
const dockerEngine = dockerInfo.exitCode === 0 && dockerInfo.stdout.trim() !== '';
if (!dockerEngine) t.comment('docker engine not present on this machine: skipped');
t.test('the same jobs on docker (socket transport, --init, --user)', { skip: dockerEngine ? false : 'docker engine not present on this machine: skipped', timeout: 900_000 }, async (t) => {
  const image = await buildTestImage('docker');
  const text = await runJobs(t, createContainerSandbox({ runtime: 'docker', network: false }), 'w4', image, 'socket', /busybox=true/);
  t.match(text, `uid=${process.getuid!()}`, 'the runner runs as the agent user (--user)');
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
  const text = jobText(orch, d.jobId);
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
