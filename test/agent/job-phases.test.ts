// The agent's set-up phases (wire protocol 5, `job.status` `phases`) for the dashboard's timeline:
// an orchestrator that registered the agent at protocol 5 gets them, with millisecond wall-clock
// times, on a `running` status once the first step starts and on the terminal status; one of
// protocol 4 gets the same messages without them (its strict schema would refuse the status). A
// real agent (launchAgent, script runner) against two schema-checking orchestrator doubles.
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { forPeerProtocol } from '../../agent/peer-protocol.ts';
import type { AgentToOrchestrator } from '../../schemas/wire/agent.ts';
import type { Test } from '../fixtures/db.ts';
import { dispatchOf, launchAgent } from './fixtures/agent-harness.ts';
import { fileServer, makeTree, tarball, tempDir } from './fixtures/trees.ts';
import { startOrchestratorDouble } from './fixtures/ws-orchestrator.ts';

type JobStatusMessage = Extract<AgentToOrchestrator, { type: 'job.status' }>;

const files = await fileServer();
const tmp = await tempDir('svc-agent-phases-');
t.teardown(async () => {
  await files.close();
  await tmp.cleanup();
});
const tree = await makeTree(join(tmp.dir, 'a'));
const digest = await tarball(tree.dir, join(tmp.dir, 'source.tar.gz'));
files.put('source', await readFile(join(tmp.dir, 'source.tar.gz')));

async function runJob(t: Test, registeredProtocol: number): Promise<JobStatusMessage[]> {
  const orch = await startOrchestratorDouble({ registeredProtocol });
  const agent = await launchAgent({ url: orch.url, workDir: join(tmp.dir, `work-${registeredProtocol}`) });
  t.teardown(async () => {
    await agent.stop();
    await orch.close();
  });
  const d = dispatchOf({ sourceTarUrl: files.url('source'), sourceTarDigest: digest, jobConfig: { contentHash: tree.contentHash } });
  orch.dispatch(d);
  await orch.waitFor('job.status', (m) => m.jobId === d.jobId && m.status !== 'running', 60_000);
  t.equal(orch.invalid.length, 0, 'every frame matched the schema');
  return orch.received.filter((m): m is JobStatusMessage => m.type === 'job.status' && m.jobId === d.jobId);
}

const MS_ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

t.test('protocol 5: the phases on running (after set-up) and on the terminal status', async (t) => {
  const statuses = await runJob(t, 5);
  t.same(
    statuses.map((s) => [s.status, s.phases === undefined ? 0 : 1]),
    [
      ['running', 0],
      ['running', 1],
      ['completed', 1],
    ],
    'running without phases at the start, running with them once the first step starts, then the end',
  );
  const done = statuses.at(-1)!;
  const names = (done.phases ?? []).map((p) => p.name);
  t.ok(names.includes('source_restore') && names.includes('deps'), `source restore and dependencies reported (${names.join(', ')})`);
  for (const p of done.phases ?? []) {
    t.match(p.startedAt, MS_ISO, `${p.name} starts in ms`);
    t.ok(Date.parse(p.finishedAt) >= Date.parse(p.startedAt), `${p.name} ends after it starts`);
    t.ok(Date.parse(p.startedAt) >= Date.parse(statuses[0]!.startedAt!), `${p.name} starts after the job`);
  }
  t.same(statuses[1]!.phases, done.phases, 'the terminal status repeats what set-up reported');
});

t.test('protocol 4: the same statuses without phases', async (t) => {
  const statuses = await runJob(t, 4);
  t.same(
    statuses.map((s) => s.status),
    ['running', 'running', 'completed'],
  );
  t.ok(
    statuses.every((s) => s.phases === undefined),
    'no phases on any status',
  );
});

t.test('forPeerProtocol drops phases below protocol 5 only', async (t) => {
  const phases = [{ name: 'checkout.fetch', startedAt: '2026-12-02T12:00:00.000Z', finishedAt: '2026-12-02T12:00:00.812Z' }];
  const status: AgentToOrchestrator = { type: 'job.status', jobId: 'j', status: 'running', steps: [], phases };
  t.equal(forPeerProtocol(status, 5), status, 'protocol 5: as it is');
  t.same(forPeerProtocol(status, 4), { type: 'job.status', jobId: 'j', status: 'running', steps: [] });
  t.equal(status.phases, phases, 'the original is not changed');
});
