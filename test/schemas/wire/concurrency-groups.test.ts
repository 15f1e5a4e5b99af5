// `concurrencyGroups` on the runner's result (schemas/wire/runner.ts) and on the agent's terminal
// `job.status` (schemas/wire/agent.ts): one definition, strict, keys 1..200 characters, job names
// 1..100; a bad value is refused with the path that failed.
import t from 'tap';
import { compileMessageUnion, formatIssues } from '../../../schemas/validate.ts';
import { AgentToOrchestratorMembers, JobStatus } from '../../../schemas/wire/agent.ts';
import { ConcurrencyGroups, RunnerResult, RunnerToAgentMembers } from '../../../schemas/wire/runner.ts';

const runner = compileMessageUnion(RunnerToAgentMembers);
const agent = compileMessageUnion(AgentToOrchestratorMembers);

const result = (concurrencyGroups: unknown) => ({ type: 'runner.result', status: 'completed', outputs: {}, steps: [], concurrencyGroups });
const status = (concurrencyGroups: unknown) => ({ type: 'job.status', jobId: 'j1', status: 'completed', steps: [], concurrencyGroups });

t.test('one definition on both ends', async (t) => {
  t.same(RunnerResult.properties.concurrencyGroups, ConcurrencyGroups);
  t.same(JobStatus.properties.concurrencyGroups, ConcurrencyGroups);
  t.same(RunnerResult.required, ['type', 'status', 'outputs', 'steps'], 'optional on runner.result');
  t.notOk((JobStatus.required as readonly string[]).includes('concurrencyGroups'), 'optional on job.status');
});

t.test('good values pass on both messages; the field is optional', async (t) => {
  const good = [
    { workflow: 'deploy-main' },
    { jobs: { build: 'builders' } },
    { workflow: 'w', jobs: { a: 'x'.repeat(200), ['j'.repeat(100)]: 'k' } },
    {},
  ];
  for (const value of good) {
    t.ok(runner.check(result(value)), `runner.result ${JSON.stringify(value).slice(0, 60)}`);
    t.ok(agent.check(status(value)), `job.status ${JSON.stringify(value).slice(0, 60)}`);
  }
  t.ok(runner.check({ type: 'runner.result', status: 'completed', outputs: {}, steps: [] }));
  t.ok(agent.check({ type: 'job.status', jobId: 'j1', status: 'completed', steps: [] }));
});

t.test('bad values are refused with the failing path', async (t) => {
  const bad: Array<[unknown, RegExp]> = [
    [{ workflow: '' }, /concurrencyGroups\.workflow/],
    [{ workflow: 'x'.repeat(201) }, /concurrencyGroups\.workflow/],
    [{ workflow: 42 }, /concurrencyGroups\.workflow/],
    [{ jobs: { build: '' } }, /concurrencyGroups\.jobs\.build/],
    [{ jobs: { build: 'k'.repeat(201) } }, /concurrencyGroups\.jobs\.build/],
    [{ jobs: { ['j'.repeat(101)]: 'k' } }, /concurrencyGroups\.jobs/],
    [{ jobs: { '': 'k' } }, /concurrencyGroups\.jobs/],
    [{ jobs: ['k'] }, /concurrencyGroups\.jobs/],
    [{ workflow: 'w', extra: 'x' }, /concurrencyGroups\.extra: unknown field/],
    ['deploy', /concurrencyGroups/],
  ];
  for (const [value, path] of bad) {
    for (const [name, checked] of [
      ['runner.result', runner.validate(result(value))],
      ['job.status', agent.validate(status(value))],
    ] as const) {
      t.notOk(checked.ok, `${name} refuses ${JSON.stringify(value).slice(0, 60)}`);
      if (!checked.ok) t.match(formatIssues(checked.issues), path);
    }
  }
});
