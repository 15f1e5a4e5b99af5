// Container jobs with podman's default network, from a real `svc-agent` process started as a
// user would (its PATH without the sbin directories, the default container sandbox settings) and
// the real step runner: a step inside the container reaches a TCP server this test runs on the
// host; `container.options` are honoured inside the container (limits, read-only root, tmpfs,
// capabilities, no-new-privileges, --env values with shell metacharacters), `--network=none`
// leaves only loopback, and a refused option (a lock compiled by an older svc) fails the job
// before anything runs, naming the option; the env files are gone afterwards. The sandbox itself
// refuses such an option too, and `--network bridge` where its config turned the network off.
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import t from 'tap';
import { createContainerSandbox } from '../../../plugins/sandboxes/container/index.ts';
import { findExecutable } from '../../../plugins/sandboxes/shared/which.ts';
import { dispatchOf } from '../../agent/fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from '../../agent/fixtures/trees.ts';
import { startOrchestratorDouble } from '../../agent/fixtures/ws-orchestrator.ts';
import { buildTestImage } from '../../fixtures/rootfs/build.ts';

// The step reports what it sees, one `fact name=value` line each.
const WORKFLOW = `import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { job, push, workflow } from 'svc/sdk';
const read = (p) => { try { return readFileSync(p, 'utf8').trim(); } catch (e) { return 'ERR:' + e.code; } };
const first = (...paths) => paths.map(read).find((v) => !v.startsWith('ERR:')) ?? 'ERR';
export default workflow('ci', {
  on: push(),
  jobs: {
    build: job({
      runsOn: 'linux',
      steps: (s) => s.step('probe', async (ctx) => {
        const fact = (name, value) => ctx.log.info('fact ' + name + '=' + value);
        const status = read('/proc/self/status');
        fact('ifaces', read('/proc/net/dev').split('\\n').slice(2).map((l) => l.split(':')[0].trim()).sort().join(','));
        fact('greeting', process.env.GREETING ?? 'unset');
        fact('path', process.env.PATH);
        fact('agentmarker', process.env.SVC_TEST_AGENT_MARKER ?? process.env.AGENT_ONLY_MARKER ?? 'unset');
        fact('memory', first('/sys/fs/cgroup/memory/memory.limit_in_bytes', '/sys/fs/cgroup/memory.max'));
        fact('pids', first('/sys/fs/cgroup/pids/pids.max', '/sys/fs/cgroup/pids.max'));
        fact('cpu', first('/sys/fs/cgroup/cpu/cpu.cfs_quota_us', '/sys/fs/cgroup/cpu.max'));
        fact('capeff', /^CapEff:\\s*(\\S+)/m.exec(status)?.[1]);
        fact('nonewprivs', /^NoNewPrivs:\\s*(\\S+)/m.exec(status)?.[1]);
        const mounts = read('/proc/mounts').split('\\n');
        fact('shm', mounts.find((l) => l.split(' ')[1] === '/dev/shm')?.split(' ')[3] ?? 'none');
        fact('scratch', mounts.find((l) => l.split(' ')[1] === '/scratch')?.split(' ').slice(2, 4).join(' ') ?? 'none');
        for (const [name, path] of [['rootwrite', '/svc-probe'], ['scratchwrite', '/scratch/probe']]) {
          try { writeFileSync(path, 'x'); fact(name, 'ok'); } catch (e) { fact(name, e.code); }
        }
        const [host, port] = process.env.HOST_SERVER.split(':');
        const reply = await new Promise((resolve) => {
          const socket = connect(Number(port), host);
          let got = '';
          socket.setTimeout(20000, () => { socket.destroy(); resolve('timeout'); });
          socket.on('data', (d) => { got += d; });
          socket.on('end', () => resolve(got.trim()));
          socket.on('error', (e) => resolve('error ' + e.code));
        });
        fact('tcp', reply);
        return {};
      }),
    }),
  },
});
`;

const podman = await findExecutable('podman');
const bin = fileURLToPath(new URL('../../../bin/svc-agent.ts', import.meta.url));

t.test('podman default network, honoured options and a refused one, from a real svc-agent', { skip: podman === null ? 'podman is not installed' : false, timeout: 900_000 }, async (t) => {
  const image = await buildTestImage(podman!);
  const tmp = await tempDir('svc-sbx-net-');
  const files = await fileServer();
  const orch = await startOrchestratorDouble();
  // The host side of the bridge (host.containers.internal) is not an address before podman makes
  // the bridge, so the server listens on every address, on a port the system picks.
  const answer = `hello-from-host-${process.pid}`;
  const peers: string[] = [];
  const server = createServer((socket) => {
    peers.push(socket.remoteAddress ?? '');
    socket.end(`${answer}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  const port = (server.address() as AddressInfo).port;
  t.teardown(async () => {
    await new Promise((resolve) => server.close(resolve));
    await orch.close();
    await files.close();
    await tmp.cleanup();
  });
  const tree = await makeTree(join(tmp.dir, 'a'), { '.svc/workflows/ci.ts': WORKFLOW });
  const digest = await tarball(tree.dir, join(tmp.dir, 's.tar.gz'));
  files.put('s', await readFile(join(tmp.dir, 's.tar.gz')));

  // As a user's shell would start it: a PATH without /usr/sbin (podman's network helper runs
  // iptables/nft from there), the default sandbox settings, a variable of the agent's own.
  const agentPath = `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`;
  const agentTmp = join(tmp.dir, 'agent-tmp');
  await mkdir(agentTmp);
  const agent = execa(process.execPath, [bin], {
    env: { PATH: agentPath, HOME: process.env['HOME'] ?? '/root', TMPDIR: agentTmp, SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_WORK_DIR: join(tmp.dir, 'w'), SVC_AGENT_LOG_LEVEL: 'silent', SVC_AGENT_LABELS: 'linux', AGENT_ONLY_MARKER: 'agent-only' },
    extendEnv: false,
    reject: false,
  });
  t.teardown(async () => {
    agent.kill('SIGTERM');
    await agent;
  });
  await orch.waitFor('agent.register', () => true, 60_000);
  const reg = orch.received.find((m) => m.type === 'agent.register');
  t.match(reg, { sandboxes: ['bare-metal', 'container'] }, 'the agent offers the container sandbox');

  const run = async (options: string[]) => {
    const d = dispatchOf({ sourceTarUrl: files.url('s'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { HOST_SERVER: `host.containers.internal:${port}` }, container: { image, options } } });
    orch.dispatch(d);
    const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 300_000);
    const text = orch.received.flatMap((m) => (m.type === 'log.chunk' && m.jobId === d.jobId ? m.lines.map((l) => l.text) : [])).join('\n');
    const facts = Object.fromEntries([...text.matchAll(/fact (\w+)=(.*)/g)].map((m) => [m[1]!, m[2]!]));
    return { done, text, facts };
  };

  const greeting = 'a b;$(touch /tmp/pwned)|`id` "q" \'s\'';
  const on = await run([
    '--memory=256m',
    '--cpus',
    '1.5',
    '--pids-limit=200',
    '--shm-size',
    '32m',
    '--read-only',
    '--tmpfs',
    '/scratch:size=8m',
    '--cap-drop=ALL',
    '--security-opt=no-new-privileges',
    '-e',
    `GREETING=${greeting}`,
  ]);
  t.equal(on.done.status, 'completed', `${on.done.reason ?? ''}\n${on.text}`);
  t.equal(on.facts['tcp'], answer, 'the step reached the TCP server on the host over the default network');
  t.equal(peers.length, 1, 'the server saw one connection');
  t.match(on.facts['ifaces'], /^eth0,lo$/, 'a network interface besides lo');
  t.equal(on.facts['greeting'], greeting, '--env arrives as one value, metacharacters and all');
  t.equal(on.facts['path'], `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, "the container's PATH is the job's, not the runtime's");
  t.equal(on.facts['agentmarker'], 'unset', "the agent's own variables do not reach the container");
  t.equal(on.facts['memory'], String(256 * 1024 * 1024), '--memory');
  t.equal(on.facts['pids'], '200', '--pids-limit');
  t.match(on.facts['cpu'], /^(150000|150000 100000)$/, '--cpus');
  t.match(on.facts['shm'], /size=32768k/, '--shm-size');
  t.equal(on.facts['rootwrite'], 'EROFS', '--read-only');
  t.match(on.facts['scratch'], /^tmpfs rw,.*size=8192k/, '--tmpfs');
  t.equal(on.facts['scratchwrite'], 'ok', 'the tmpfs is writable');
  t.equal(on.facts['capeff'], '0000000000000000', '--cap-drop=ALL');
  t.equal(on.facts['nonewprivs'], '1', '--security-opt=no-new-privileges');

  const off = await run(['--network=none']);
  t.equal(off.done.status, 'completed', `${off.done.reason ?? ''}\n${off.text}`);
  t.equal(off.facts['ifaces'], 'lo', '--network=none: loopback only');
  t.match(off.facts['tcp'], /^error /, 'and the host is not reachable');

  const refused = await run(['--memory=1g', '-v', '/:/host']);
  t.equal(refused.done.status, 'failed');
  t.match(refused.done.reason, /container\.options\[1\] \(-v\) is refused: host bind mounts are not allowed/);
  t.notMatch(refused.text, /fact /, 'no step ran');
  const envDirs = (await readdir(agentTmp)).filter((n) => n.startsWith('svc-job-env-'));
  t.same(envDirs, [], "the jobs' env files are gone once their containers ended");
});

t.test('the sandbox refuses what the agent did not check, and --network bridge where the operator turned the network off', { skip: podman === null ? 'podman is not installed' : false }, async (t) => {
  const tmp = await tempDir('svc-sbx-opts-');
  t.teardown(tmp.cleanup);
  const sandbox = createContainerSandbox({ runtime: 'podman', network: false, tmpRoot: tmp.dir });
  const ws = await sandbox.prepareWorkspace({ jobId: 'x', sourceDir: tmp.dir });
  const spawn = (containerOptions: string[]) => sandbox.spawn({ workspace: ws, argv: ['true'], env: {}, cwd: ws.dir, image: 'localhost/none:1', containerOptions });
  await t.rejects(spawn(['--cpus=1', '--privileged']), { code: 'SVC_ERR_SANDBOX_CONTAINER_OPTION', message: /^container\.options\[1\] \(--privileged\) is refused: / });
  await t.rejects(spawn(['--network=bridge']), { code: 'SVC_ERR_SANDBOX_CONTAINER_OPTION', message: /without a network \(plugin config network: false\)/ });
  t.same((await readdir(tmp.dir)).filter((n) => n.startsWith('svc-job-env-')), [], 'refused before any env file was written');
  await sandbox.releaseWorkspace(ws);
});
