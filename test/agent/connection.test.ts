// Connection life: register, reconnect with backoff reporting in-flight jobs, refusals that end
// the agent without a retry, ephemeral agents.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { backoffDelay } from '../../agent/backoff.ts';
import { PROTOCOL_VERSION } from '../../schemas/wire/relay.ts';
import { dispatchOf, launchAgent } from './fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from './fixtures/trees.ts';
import { startOrchestratorDouble } from './fixtures/ws-orchestrator.ts';

const tmp = await tempDir('svc-agent-conn-');
const files = await fileServer();
t.teardown(async () => {
  await files.close();
  await tmp.cleanup();
});
const tree = await makeTree(join(tmp.dir, 'a'));
const digest = await tarball(tree.dir, join(tmp.dir, 'source.tar.gz'));
files.put('source', await readFile(join(tmp.dir, 'source.tar.gz')));

t.test('backoff: exponential, capped, jittered within [ceiling/2, ceiling]', async (t) => {
  t.equal(backoffDelay(0, { maxMs: 60_000, random: () => 0 }), 250);
  t.equal(backoffDelay(0, { maxMs: 60_000, random: () => 1 }), 500);
  t.equal(backoffDelay(3, { maxMs: 60_000, random: () => 1 }), 4000);
  t.equal(backoffDelay(30, { maxMs: 60_000, random: () => 1 }), 60_000, 'capped at the max delay');
  t.equal(backoffDelay(30, { maxMs: 60_000, random: () => 0 }), 30_000);
});

t.test('reconnects with backoff and re-reports the running job as in flight', async (t) => {
  const orch = await startOrchestratorDouble({ token: 'tok' });
  const agent = await launchAgent({ url: orch.url, token: 'tok', workDir: join(tmp.dir, 'w1'), maxReconnectDelayMs: 400 });
  t.teardown(async () => {
    await agent.stop();
    await orch.close();
  });
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'cooperative' } } });
  orch.dispatch(d);
  await orch.waitFor('step.status', (m) => m.jobId === d.jobId && m.status === 'running');
  const before = orch.received.length;
  orch.dropConnections(1012);
  const reg = await orch.waitFor('agent.register', (m) => orch.received.indexOf(m) >= before);
  t.same(reg.inFlightJobs, [{ jobId: d.jobId, status: 'running' }], 'the running job is reported for re-attachment');
  t.ok(agent.connection.stats.delays.length >= 1);
  for (const delay of agent.connection.stats.delays) t.ok(delay >= 0 && delay <= 400, `delay ${delay} within the cap`);
  // Messages sent after the reconnect still reach the orchestrator.
  orch.send({ type: 'job.cancel', jobId: d.jobId, reason: 'done testing', force: false });
  const end = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running');
  t.equal(end.status, 'cancelled');
  t.equal(orch.invalid.length, 0);
});

t.test('keeps retrying while the orchestrator is down, then registers', async (t) => {
  const orch = await startOrchestratorDouble();
  const url = orch.url;
  await orch.close();
  const port = Number(new URL(url).port);
  // Down, and counting: a TCP listener on the port that drops every connection at once.
  const { createServer } = await import('node:net');
  let refused = 0;
  const down = createServer((socket) => {
    refused += 1;
    socket.destroy();
  });
  const free = await new Promise<boolean>((resolve) => {
    down.once('error', () => resolve(false));
    down.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (!free) {
    t.comment('port taken meanwhile');
    return;
  }
  const started = launchAgent({ url, workDir: join(tmp.dir, 'w2'), maxReconnectDelayMs: 200 });
  for (const deadline = Date.now() + 60_000; refused < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 10));
  t.ok(refused >= 2, `tried ${refused} times while the orchestrator was down`);
  // Bring an orchestrator up on the same port.
  await new Promise((r) => down.close(r));
  let again: Awaited<ReturnType<typeof startOrchestratorOnPort>>;
  try {
    again = await startOrchestratorOnPort(port);
  } catch {
    t.comment('port taken meanwhile');
    (await started.catch(() => undefined))?.stop();
    return;
  }
  const agent = await started;
  t.ok(agent.connection.stats.connects > refused, `connected after ${agent.connection.stats.connects} attempts`);
  await agent.stop();
  await again.close();
});

async function startOrchestratorOnPort(port: number) {
  // The double listens on port 0; a fixed port needs a tiny proxy-free variant.
  const { WebSocketServer } = await import('ws');
  const wss = new WebSocketServer({ host: '127.0.0.1', port, path: '/v1/agents/connect' });
  wss.on('connection', (ws) =>
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m.type === 'agent.register') ws.send(JSON.stringify({ type: 'agent.registered', agentId: m.agentId, labels: m.labels, protocolVersion: 3 }));
    }),
  );
  await new Promise((resolve, reject) => {
    wss.once('listening', resolve);
    wss.once('error', reject);
  });
  return { close: () => new Promise<void>((r) => { for (const c of wss.clients) c.terminate(); wss.close(() => r()); }) };
}

t.test('a bad token ends the agent without a retry (close 4001 and HTTP 401)', async (t) => {
  for (const mode of ['close', 'http'] as const) {
    const orch = await startOrchestratorDouble({ token: 'right' });
    orch.rejectMode = mode;
    const error = await launchAgent({ url: orch.url, token: 'wrong', workDir: join(tmp.dir, `w3-${mode}`) }).then(
      () => undefined,
      (e: unknown) => e as { code?: string; message: string },
    );
    t.equal(error?.code, 'SVC_ERR_AGENT_UNAUTHORIZED', mode);
    // A fatal refusal stops the connection (no redial is scheduled or possible after it): the
    // count is final once the agent has given up.
    t.equal(orch.connections, mode === 'close' ? 1 : 0, 'no second attempt');
    await orch.close();
  }
});

t.test('a protocol-error close ends the agent', async (t) => {
  // An orchestrator whose floor is above the agent's protocol.
  const orch = await startOrchestratorDouble({ minProtocol: PROTOCOL_VERSION + 1 });
  const error = await launchAgent({ url: orch.url, workDir: join(tmp.dir, 'w4') }).then(
    () => undefined,
    (e: unknown) => e as { code?: string },
  );
  t.equal(error?.code, 'SVC_ERR_AGENT_PROTOCOL');
  // Fatal: the agent stopped, nothing dials again.
  t.equal(orch.connections, 1);
  await orch.close();
});

t.test('a token revoked after registration (close 4001) ends a running agent with code 1', async (t) => {
  const orch = await startOrchestratorDouble();
  const agent = await launchAgent({ url: orch.url, workDir: join(tmp.dir, 'w5') });
  orch.dropConnections(4001);
  const end = await agent.ended;
  t.equal(end.code, 1);
  t.equal(end.error?.code, 'SVC_ERR_AGENT_UNAUTHORIZED');
  await orch.close();
});

t.test('an ephemeral agent runs one job and ends with code 0', async (t) => {
  const orch = await startOrchestratorDouble();
  const agent = await launchAgent({ url: orch.url, workDir: join(tmp.dir, 'w6'), ephemeral: true });
  t.equal((await orch.waitFor('agent.register')).ephemeral, true);
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash } });
  orch.dispatch(d);
  const end = await agent.ended;
  t.equal(end.code, 0);
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running');
  t.equal(done.status, 'completed');
  await orch.close();
});
