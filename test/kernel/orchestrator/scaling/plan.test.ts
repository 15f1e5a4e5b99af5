// The scale-up planner (kernel/orchestrator/scaling/plan.ts): which queued jobs get a scale-up,
// from which scaler, within which limits.
import t from 'tap';
import type { ResolvedScaler } from '../../../../core/scalers/config-file.ts';
import { planScaleUps, type PlanInput } from '../../../../kernel/orchestrator/scaling/plan.ts';


const scaler = (name: string, labels: string[], limits: Partial<ResolvedScaler> = {}): ResolvedScaler => ({
  name,
  plugin: 'local',
  labels,
  maxAgents: 10,
  startsPerMinute: 100,
  idleTimeoutMs: 60_000,
  gate: ['svc:os:linux', 'svc:arch:x64', 'svc:role:ephemeral', 'svc:sandbox:bare-metal', ...labels],
  file: '/etc/svc/scalers.yaml',
  ...limits,
});

const input = (over: Partial<PlanInput>): PlanInput => ({ jobs: [], agents: [], waiting: [], scalers: [], usage: new Map(), ...over });
const planned = (i: PlanInput) => planScaleUps(i).scaleUps.map((p) => `${p.jobId}@${p.scaler.name}`);

t.test('a job nothing online covers goes to the first scaler serving it', async (t) => {
  const scalers = [scaler('small', ['linux-small']), scaler('big', ['linux-small', 'big'])];
  t.same(planned(input({ scalers, jobs: [{ id: 'j1', matchers: ['big'] }, { id: 'j2', matchers: ['linux-small'] }, { id: 'j3', matchers: ['svc:os:linux', '!gpu'] }] })), ['j1@big', 'j2@small', 'j3@small']);
  t.same(planned(input({ scalers, jobs: [{ id: 'j1', matchers: ['gpu'] }, { id: 'j2', matchers: ['svc:os:windows'] }, { id: 'j3', matchers: ['svc:role:static'] }] })), [], 'labels no scaler carries');
});

t.test('online agents cover jobs: static ones any number, an unspent ephemeral one a single job', async (t) => {
  const scalers = [scaler('pool', ['ci'])];
  const jobs = [{ id: 'a', matchers: ['ci'] }, { id: 'b', matchers: ['ci'] }, { id: 'c', matchers: ['ci'] }];
  t.same(planned(input({ scalers, jobs, agents: [{ id: 's', labels: new Set(['ci']), ephemeral: false }] })), [], 'a static agent takes them in turn');
  t.same(planned(input({ scalers, jobs, agents: [{ id: 'e', labels: new Set(['ci']), ephemeral: true }] })), ['b@pool', 'c@pool'], 'one ephemeral agent covers one job');
  t.same(planned(input({ scalers, jobs, agents: [{ id: 'x', labels: new Set(['other']), ephemeral: false }] })), ['a@pool', 'b@pool', 'c@pool'], 'an agent whose labels do not cover the job');
});

t.test('an agent of an older wire protocol does not cover a job whose fields need a newer one', async (t) => {
  const scalers = [scaler('pool', ['ci'])];
  const jobs = [{ id: 'subs', matchers: ['ci'], protocol: 4 }, { id: 'plain', matchers: ['ci'], protocol: 0 }];
  t.same(planned(input({ scalers, jobs, agents: [{ id: 'old', labels: new Set(['ci']), ephemeral: false, protocol: 3 }] })), ['subs@pool'], 'a current agent is started for it alone');
  t.same(planned(input({ scalers, jobs, agents: [{ id: 'new', labels: new Set(['ci']), ephemeral: false, protocol: 4 }] })), []);
  t.same(planned(input({ scalers, jobs, agents: [{ id: 'unknown', labels: new Set(['ci']), ephemeral: false, protocol: null }] })), [], 'an unknown protocol is not held against an agent');
});

t.test('waiting scale-ups: a job keeps its own; the others cover jobs by labels, since an agent takes whichever job it satisfies', async (t) => {
  const scalers = [scaler('pool', ['ci'])];
  const jobs = [{ id: 'two', matchers: ['ci'] }, { id: 'four', matchers: ['ci'] }];
  // `three` was dispatched to the agent started for `two`; the scale-up started for `three` still
  // waits for its agent, which will take `two`: no second scale-up for `two`.
  t.same(planned(input({ scalers, jobs, waiting: [{ jobId: 'three', agentId: 'a3', scaler: 'pool' }] })), ['four@pool'], 'one waiting agent covers one job');
  t.same(planned(input({ scalers, jobs, waiting: [{ jobId: 'four', agentId: null, scaler: 'pool' }, { jobId: 'gone', agentId: 'ax', scaler: 'pool' }] })), [], 'own first, then shared');
  t.same(planned(input({ scalers, jobs, waiting: [{ jobId: 'x', agentId: 'a1', scaler: 'removed' }] })), ['two@pool', 'four@pool'], 'a removed scaler\'s scale-ups cover nothing');
  const agents = [{ id: 'a3', labels: new Set(['ci', 'svc:role:ephemeral']), ephemeral: true }];
  t.same(planned(input({ scalers, jobs, agents, waiting: [{ jobId: 'three', agentId: 'a3', scaler: 'pool' }] })), ['four@pool'], 'a connected waiting agent is counted once');
});

t.test('limits: maxAgents counts live agents, startsPerMinute the last minute; a job over a limit is deferred', async (t) => {
  const scalers = [scaler('tight', ['ci'], { maxAgents: 3, startsPerMinute: 2 })];
  const jobs = ['a', 'b', 'c', 'd'].map((id) => ({ id, matchers: ['ci'] }));
  const fresh = planScaleUps(input({ scalers, jobs }));
  t.same(fresh.scaleUps.map((p) => p.jobId), ['a', 'b'], 'startsPerMinute 2');
  t.same(fresh.deferred, ['c', 'd']);
  t.same(planned(input({ scalers, jobs, usage: new Map([['tight', { live: 2, startedLastMinute: 0 }]]) })), ['a@tight'], 'maxAgents 3 with 2 live');
  t.same(planned(input({ scalers, jobs, usage: new Map([['tight', { live: 0, startedLastMinute: 2 }]]) })), [], 'the minute\'s starts used');
  const spill = [scaler('tight', ['ci'], { maxAgents: 1 }), scaler('spill', ['ci'])];
  t.same(planned(input({ scalers: spill, jobs: jobs.slice(0, 3) })), ['a@tight', 'b@spill', 'c@spill'], 'the next serving scaler when the first is full');
});

t.test('routing orders the scalers that serve a job: prefer first, avoid last, never none', async (t) => {
  const scalers = [scaler('spot', ['ci', 'spot']), scaler('fast', ['ci', 'ssd']), scaler('plain', ['ci'])];
  const job = (id: string, routing?: { prefer: string[]; avoid: string[] }) => ({ id, matchers: ['ci'], ...(routing === undefined ? {} : { routing }) });
  t.same(planned(input({ scalers, jobs: [job('a')] })), ['a@spot'], 'no routing: config order');
  t.same(planned(input({ scalers, jobs: [job('b', { prefer: ['ssd'], avoid: [] })] })), ['b@fast']);
  t.same(planned(input({ scalers, jobs: [job('c', { prefer: [], avoid: ['spot'] })] })), ['c@fast']);
  t.same(planned(input({ scalers, jobs: [job('d', { prefer: ['spot'], avoid: ['spot'] })] })), ['d@fast'], 'avoid weighs more than prefer');
  const full = new Map([['fast', { live: 10, startedLastMinute: 0 }], ['plain', { live: 10, startedLastMinute: 0 }]]);
  t.same(planned(input({ scalers, usage: full, jobs: [job('e', { prefer: ['ssd'], avoid: ['spot'] })] })), ['e@spot'], 'the others at their limits: the avoided scaler still serves it');
});
