// The `svc-agent` program as a real process: ready line, bad token exit, env refusals, SIGTERM.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import t from 'tap';
import { tempDir } from './fixtures/trees.ts';
import { startOrchestratorDouble } from './fixtures/ws-orchestrator.ts';
import { PROTOCOL_VERSION } from '../../schemas/wire/relay.ts';

const bin = fileURLToPath(new URL('../../bin/svc-agent.ts', import.meta.url));
const tmp = await tempDir('svc-agent-bin-');
t.teardown(tmp.cleanup);
const baseEnv = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SVC_AGENT_LOG_LEVEL: 'silent' };

t.test('refuses a bad environment with one line and exit 1', async (t) => {
  const r = await execa(process.execPath, [bin], { env: baseEnv, extendEnv: false, reject: false, timeout: 120_000 });
  t.equal(r.exitCode, 1);
  t.match(r.stderr, /^svc-agent: SVC_ERR_AGENT_ENV: SVC_ORCHESTRATOR_URL is required/);
  const bad = await execa(process.execPath, [bin], { env: { ...baseEnv, SVC_ORCHESTRATOR_URL: 'ftp://x', SVC_AGENT_SANDBOX: 'vm' }, extendEnv: false, reject: false, timeout: 120_000 });
  t.equal(bad.exitCode, 1);
  t.match(bad.stderr, 'SVC_ORCHESTRATOR_URL must be an http(s):// or ws(s):// address');
  // A pass-through policy that would hand jobs the agent's token: refused at start, named.
  const leak = await execa(process.execPath, [bin], { env: { ...baseEnv, SVC_ORCHESTRATOR_URL: 'http://127.0.0.1:9', SVC_AGENT_PASS_ENV: 'default,SVC_AGENT_TOKEN' }, extendEnv: false, reject: false, timeout: 120_000 });
  t.equal(leak.exitCode, 1);
  t.match(leak.stderr, /^svc-agent: SVC_ERR_AGENT_ENV: SVC_AGENT_PASS_ENV names "SVC_AGENT_TOKEN", which cannot be passed/);
});

t.test('a bad token: exit 1 at once, no retry', async (t) => {
  const orch = await startOrchestratorDouble({ token: 'good' });
  t.teardown(() => orch.close());
  const r = await execa(process.execPath, [bin], {
    env: { ...baseEnv, SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_TOKEN: 'bad', SVC_AGENT_WORK_DIR: join(tmp.dir, 'w1') },
    extendEnv: false,
    reject: false,
    timeout: 120_000,
  });
  t.equal(r.exitCode, 1);
  t.match(r.stderr, 'SVC_ERR_AGENT_UNAUTHORIZED');
  t.notMatch(r.stderr, 'bad', 'the token value is not printed');
  // It exited on its own (execa did not time out) after one connection: no retry loop.
  t.equal(orch.connections, 1);
});

t.test('ready line once registered, stable agent id, clean SIGTERM', async (t) => {
  const orch = await startOrchestratorDouble({ token: 'good' });
  t.teardown(() => orch.close());
  const workDir = join(tmp.dir, 'w2');
  const ids: string[] = [];
  for (let round = 0; round < 2; round++) {
    const child = execa(process.execPath, [bin], {
      env: { ...baseEnv, SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_TOKEN: 'good', SVC_AGENT_WORK_DIR: workDir, SVC_AGENT_LABELS: 'linux-big, team-a' },
      extendEnv: false,
      reject: false,
      timeout: 30_000,
    });
    const line = await new Promise<string>((resolve) => {
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) resolve(out.split('\n')[0]!);
      });
    });
    t.equal(line, `svc-agent ready ${orch.url}`);
    const reg = orch.received.filter((m) => m.type === 'agent.register').at(-1);
    t.match(reg, { labels: ['linux-big', 'team-a'], protocolVersion: PROTOCOL_VERSION });
    ids.push((reg as { agentId: string }).agentId);
    child.kill('SIGTERM');
    const r = await child;
    t.equal(r.exitCode, 0, 'clean stop');
  }
  t.equal(ids[0], ids[1], 'the agent id persists in the work dir');
  t.equal((await readFile(join(workDir, 'agent-id'), 'utf8')).trim(), ids[0]);
});
