// The firecracker sandbox against the API test double (test/fixtures/fake-firecracker.ts): no
// firecracker binary, KVM or guest kernel exists on these machines.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import type { SandboxExtensionPoint, SandboxProcess } from '../../../core/extension-points/sandbox.ts';
import { createFirecrackerSandbox } from '../../../plugins/sandboxes/firecracker/index.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { dispatchOf, launchAgent } from '../../agent/fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from '../../agent/fixtures/trees.ts';
import { startOrchestratorDouble } from '../../agent/fixtures/ws-orchestrator.ts';

const fake = fileURLToPath(new URL('../../fixtures/fake-firecracker.ts', import.meta.url));
const tmp = await tempDir('svc-sbx-fc-');
t.teardown(tmp.cleanup);
const kernel = join(tmp.dir, 'vmlinux');
const rootfs = join(tmp.dir, 'rootfs.ext4');
await writeFile(kernel, 'not a kernel');
await writeFile(rootfs, 'not a file system');
const config = { command: [process.execPath, fake], kernelImage: kernel, rootfs, bootArgs: 'console=ttyS0', vcpus: 1, memMib: 256, vsockPort: 5252, requireKvm: false, bootTimeoutMs: 15_000 };

t.test('availability names what is missing', async (t) => {
  t.match(await createFirecrackerSandbox({ ...config, command: ['firecracker-not-here'] }).available(), { available: false, missing: 'firecracker' });
  const { existsSync } = await import('node:fs');
  t.match(await createFirecrackerSandbox({ ...config, requireKvm: true }).available(), existsSync('/dev/kvm') ? { available: true } : { available: false, missing: '/dev/kvm' });
  t.match(await createFirecrackerSandbox({ ...config, kernelImage: join(tmp.dir, 'none') }).available(), { available: false, missing: 'kernel image' });
  t.same(await createFirecrackerSandbox(config).available(), { available: true });
});

t.test('boots through the API in order and relays IPC and output', async (t) => {
  const sandbox = createFirecrackerSandbox(config);
  const src = join(tmp.dir, 'src');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(src);
  await writeFile(join(src, 'hello.txt'), 'from the workspace');
  const ws = await sandbox.prepareWorkspace({ jobId: 'j', sourceDir: src });
  const proc: SandboxProcess = await sandbox.spawn({
    workspace: ws,
    argv: [process.execPath, '-e', "process.on('message', (m) => { console.log('echo', JSON.stringify(m)); process.send({ got: m, file: require('fs').readFileSync('hello.txt', 'utf8') }, () => process.exit(0)); }); process.send({ up: true });"],
    env: { PATH: '/usr/bin:/bin' },
    cwd: ws.dir,
    ipc: true,
  });
  const messages: unknown[] = [];
  let out = '';
  proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
  proc.onMessage!((m) => {
    messages.push(m);
    if ((m as { up?: boolean }).up) proc.send!({ ping: 1 });
  });
  const exit = await proc.exited;
  t.equal(exit.code, 0);
  t.same(messages, [{ up: true }, { got: { ping: 1 }, file: 'from the workspace' }]);
  t.match(out, 'echo {"ping":1}');
  const calls = JSON.parse(await readFile(join(ws.tmpDir!, 'api.sock.calls.json'), 'utf8')) as Array<{ path: string; body: Record<string, unknown> }>;
  t.same(calls.map((c) => c.path), ['/machine-config', '/boot-source', '/drives/rootfs', '/drives/workspace', '/vsock', '/actions']);
  t.match(calls[0]!.body, { vcpu_count: 1, mem_size_mib: 256 });
  t.match(calls[2]!.body, { drive_id: 'rootfs', path_on_host: rootfs, is_root_device: true });
  t.match(calls[5]!.body, { action_type: 'InstanceStart' });
  await sandbox.releaseWorkspace(ws);
});

t.test('an agent job runs in the firecracker sandbox; cancel kills the VM', async (t) => {
  const files = await fileServer();
  const orch = await startOrchestratorDouble();
  const tree = await makeTree(join(tmp.dir, 'a'));
  const digest = await tarball(tree.dir, join(tmp.dir, 'source.tar.gz'));
  files.put('source', await readFile(join(tmp.dir, 'source.tar.gz')));
  const sandboxes = new Map<string, SandboxExtensionPoint>([
    ['process', createProcessSandbox({ bwrap: 'never', network: true })],
    ['firecracker', createFirecrackerSandbox(config)],
  ]);
  const agent = await launchAgent({ url: orch.url, workDir: join(tmp.dir, 'w'), sandboxes, sandbox: 'firecracker' });
  t.teardown(async () => {
    await agent.stop();
    await orch.close();
    await files.close();
  });
  t.same((await orch.waitFor('agent.register')).sandboxes, ['bare-metal', 'firecracker']);
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash } });
  orch.dispatch(d);
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 30_000);
  t.equal(done.status, 'completed', done.reason ?? '');
  t.same(done.outputs, { answer: 42 });
  t.equal((await orch.waitFor('job.context', (m) => m.jobId === d.jobId)).sandbox, 'firecracker');

  const hang = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'hang' }, gracePeriodSeconds: 0.5 } });
  orch.dispatch(hang);
  await orch.waitFor('step.status', (m) => m.jobId === hang.jobId && m.status === 'running', 30_000);
  orch.send({ type: 'job.cancel', jobId: hang.jobId, reason: 'stop', force: false });
  const c = await orch.waitFor('job.status', (m) => m.jobId === hang.jobId && m.status !== 'running', 30_000);
  t.equal(c.status, 'cancelled');
});
