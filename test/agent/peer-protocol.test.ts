// The exit code of a failing command (wire protocol 5) reaches an orchestrator that registered the
// agent at protocol 5, and never one of an older protocol, whose strict schemas would refuse the
// whole `job.status` (and lose the job's result). A real agent (startAgent) with the script runner
// against two orchestrator doubles, one answering `agent.registered` with 5, one with 4.
import { join } from 'node:path';
import t from 'tap';
import { forPeerProtocol } from '../../agent/peer-protocol.ts';
import type { AgentToOrchestrator } from '../../schemas/wire/agent.ts';
import type { Test } from '../fixtures/db.ts';
import { dispatchOf, launchAgent } from './fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from './fixtures/trees.ts';
import { startOrchestratorDouble } from './fixtures/ws-orchestrator.ts';

const files = await fileServer();
const tmp = await tempDir('svc-agent-peer-');
t.teardown(async () => {
  await files.close();
  await tmp.cleanup();
});
const tree = await makeTree(join(tmp.dir, 'a'));
const digest = await tarball(tree.dir, join(tmp.dir, 'source.tar.gz'));
const { readFile } = await import('node:fs/promises');
files.put('source', await readFile(join(tmp.dir, 'source.tar.gz')));

async function failingJob(t: Test, registeredProtocol: number) {
  const orch = await startOrchestratorDouble({ registeredProtocol });
  const agent = await launchAgent({ url: orch.url, workDir: join(tmp.dir, `work-${registeredProtocol}`) });
  t.teardown(async () => {
    await agent.stop();
    await orch.close();
  });
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash, env: { SCRIPT: 'exit-code' } } });
  orch.dispatch(d);
  const done = await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 60_000);
  const steps = orch.received.filter((m): m is Extract<AgentToOrchestrator, { type: 'step.status' }> => m.type === 'step.status' && m.jobId === d.jobId);
  t.equal(orch.invalid.length, 0, 'every frame matched the schema');
  return { done, failedStep: steps.find((s) => s.status === 'failed') };
}

t.test('forPeerProtocol leaves out what an older orchestrator refuses, and nothing else', async (t) => {
  const at = '2026-12-02T12:00:00.000Z';
  const status: AgentToOrchestrator = { type: 'job.status', jobId: 'j', status: 'failed', reason: 'r', exitCode: 3, steps: [{ name: 'main', status: 'failed', exitCode: 3 }, { name: 'after', status: 'skipped' }] };
  t.equal(forPeerProtocol(status, 5), status, 'protocol 5: as it is');
  t.same(forPeerProtocol(status, 4), { type: 'job.status', jobId: 'j', status: 'failed', reason: 'r', steps: [{ name: 'main', status: 'failed' }, { name: 'after', status: 'skipped' }] });
  t.same(forPeerProtocol({ type: 'step.status', jobId: 'j', index: 0, name: 'main', status: 'failed', at, exitCode: 3 }, 3), { type: 'step.status', jobId: 'j', index: 0, name: 'main', status: 'failed', at });
  const plain: AgentToOrchestrator = { type: 'step.status', jobId: 'j', index: 0, name: 'main', status: 'completed', at };
  t.equal(forPeerProtocol(plain, 3), plain, 'nothing to leave out: the same object');
  t.equal(status.exitCode, 3, 'the original is not changed');
});

t.test('an orchestrator of protocol 5 gets the exit code on job.status and step.status', async (t) => {
  const { done, failedStep } = await failingJob(t, 5);
  t.match(done, { status: 'failed', exitCode: 3 });
  t.match(done.steps, [{ name: 'main', status: 'failed', exitCode: 3 }]);
  t.match(failedStep, { status: 'failed', exitCode: 3 });
});

t.test('an orchestrator of protocol 4 gets the same messages without it', async (t) => {
  const { done, failedStep } = await failingJob(t, 4);
  t.match(done, { status: 'failed', reason: /exit code 3/ });
  t.notOk('exitCode' in done, 'no exitCode on job.status');
  t.notOk(done.steps.some((s) => 'exitCode' in s), 'nor on its steps');
  t.ok(failedStep !== undefined && !('exitCode' in failedStep), 'nor on step.status');
});
