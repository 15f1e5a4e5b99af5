// A job's `routing` (docs/agent.md "Routing"): among the idle agents that satisfy its `runsOn`,
// `prefer` picks agents on which a preferred matcher holds first, `avoid` takes an agent on which
// an avoided matcher holds only when no other matching agent is free; neither makes a job wait.
// Real PostgreSQL, the in-process orchestrator with its dispatch subsystem, TestAgents on real
// WebSockets; the routing is read from the run's lock entry as the compiler writes it.
import t from 'tap';
import { routingRank } from '../../../../kernel/orchestrator/dispatch/routing.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { afterDispatchPass, startNode } from './harness.ts';

const routed = (name: string, runsOn: string[], routing: { prefer?: string[]; avoid?: string[] }) => ({
  name,
  runsOn,
  lock: { routing: { prefer: routing.prefer ?? [], avoid: routing.avoid ?? [] } },
});

t.test('rank: avoid weighs more than prefer; matchers as in runsOn', async (t) => {
  const labels = new Set(['linux', 'ssd', 'spot', 'zone-a']);
  t.equal(routingRank(null, labels), 0);
  t.equal(routingRank({ prefer: ['ssd'], avoid: [] }, labels), 0);
  t.equal(routingRank({ prefer: ['gpu'], avoid: [] }, labels), 1);
  t.equal(routingRank({ prefer: ['gpu', 'zone-*'], avoid: [] }, labels), 0, 'any preferred matcher, prefixes too');
  t.equal(routingRank({ prefer: [], avoid: ['spot'] }, labels), 2);
  t.equal(routingRank({ prefer: ['ssd'], avoid: ['spot'] }, labels), 2, 'avoided even though preferred');
  t.equal(routingRank({ prefer: ['gpu'], avoid: ['spot'] }, labels), 3);
  t.equal(routingRank({ prefer: ['!spot'], avoid: [] }, labels), 1, 'a negated matcher holds when the label is absent');
});

await eachDatabase(t, async (t, db) => {
  const node = await startNode(t, db.url);
  // Registration order is the dispatcher's order among never-used agents: without routing the
  // first would get every job below.
  const spot = await TestAgent.online({ url: node.url, agentId: 'spot-1', labels: ['linux', 'spot'] });
  const plain = await TestAgent.online({ url: node.url, agentId: 'plain-1', labels: ['linux'] });
  const fast = await TestAgent.online({ url: node.url, agentId: 'fast-1', labels: ['linux', 'ssd'] });
  const agents = [spot, plain, fast];
  t.teardown(async () => {
    for (const a of agents) await a.close();
  });
  const holder = async (jobId: string): Promise<TestAgent> => {
    await Promise.race(agents.map((a) => a.waitFor('job.dispatch', (m) => m.jobId === jobId)));
    return agents.find((a) => a.all('job.dispatch').some((m) => m.jobId === jobId))!;
  };
  const finish = (agent: TestAgent, jobId: string) => agent.jobStatus(jobId, 'completed');

  await t.test('prefer: a free preferred agent is picked over earlier ones', async (t) => {
    const run = await insertRun(db.pool, { jobs: [routed('build', ['linux'], { prefer: ['ssd'] })] });
    const id = run.jobs['build']!.id;
    const got = await holder(id);
    t.equal(got.options.agentId, 'fast-1');
    finish(got, id);
  });

  await t.test('avoid: an avoided agent is passed over while another matching agent is free', async (t) => {
    const run = await insertRun(db.pool, { jobs: [routed('test', ['linux'], { avoid: ['spot'] })] });
    const id = run.jobs['test']!.id;
    const got = await holder(id);
    t.equal(got.options.agentId, 'plain-1', 'spot-1 is first in line but avoided');
    finish(got, id);
  });

  await t.test('neither makes a job wait: the avoided agent, or a non-preferred one, takes it when it is the only one free', async (t) => {
    // Occupy fast-1 and plain-1 with jobs only they can take.
    const busy = await insertRun(db.pool, { jobs: [{ name: 'hold-fast', runsOn: ['ssd'] }, { name: 'hold-plain', runsOn: ['linux', '!spot', '!ssd'] }] });
    const holdFast = busy.jobs['hold-fast']!.id;
    const holdPlain = busy.jobs['hold-plain']!.id;
    t.equal((await holder(holdFast)).options.agentId, 'fast-1');
    t.equal((await holder(holdPlain)).options.agentId, 'plain-1');

    const run = await insertRun(db.pool, { jobs: [routed('deploy', ['linux'], { avoid: ['spot'], prefer: ['ssd'] })] });
    const id = run.jobs['deploy']!.id;
    const got = await holder(id);
    t.equal(got.options.agentId, 'spot-1', 'only the avoided agent is free: it takes the job');
    finish(got, id);

    finish(plain, holdPlain);
    await afterDispatchPass(node, ...agents);
    const next = await insertRun(db.pool, { jobs: [routed('lint', ['linux'], { prefer: ['ssd'] })] });
    const lint = next.jobs['lint']!.id;
    const taker = await holder(lint);
    t.not(taker.options.agentId, 'fast-1', 'the preferred agent is busy: another matching agent takes it');
    finish(taker, lint);
    finish(fast, holdFast);
  });

  await t.test('routing never widens runsOn', async (t) => {
    const run = await insertRun(db.pool, { jobs: [routed('only-plain', ['linux', '!ssd', '!spot'], { prefer: ['ssd'] })] });
    const id = run.jobs['only-plain']!.id;
    const got = await holder(id);
    t.equal(got.options.agentId, 'plain-1');
    finish(got, id);
  });
});
