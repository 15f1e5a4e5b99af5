// The step runner resuming a job (runner.start `resume`, docs/agent.md "When an agent restarts
// mid-job"), as a real child process: the checkpoints a first run sends, fed back as a restarted
// agent does. Restored steps do not run again; their outputs and setEnv/addPath calls come back;
// the interrupted step runs again only with a check; a restored failure puts the job on its path.
import t from 'tap';
import type { JobProgress, StepCheckpoint } from '../../../schemas/wire/runner.ts';
import { runRunner, type RunnerRun } from '../../fixtures/run-runner.ts';

const run = (resume?: JobProgress) => runRunner({ file: 'resume.ts', workflowName: 'resume', jobName: 'resume', ...(resume === undefined ? {} : { start: { resume } }) });
const checkpoints = (r: RunnerRun): StepCheckpoint[] => r.messages.flatMap((m) => (m.type === 'runner.checkpoint' ? [m.step] : []));

t.test('checkpoints, then a resume after them', async (t) => {
  const first = await run();
  t.same(first.invalid, [], 'every message matches the wire schema');
  t.equal(first.result?.status, 'completed');
  const sent = checkpoints(first);
  t.same(sent.map((c) => [c.index, c.name, c.status]), [[0, 'make', 'completed'], [1, 'checked', 'completed'], [2, 'plain', 'completed'], [3, 'last', 'completed']], 'one checkpoint per finished step');
  t.same(sent[0]!.outputs, { v: 'made', key: 'resume-secret-output-value' });
  t.same(sent[0]!.secretOutputs, ['key']);
  t.same(sent[0]!.effects, [{ setEnv: 'RESUME_A', value: `${first.workspace}/a` }, { addPath: '/opt/made' }], 'the setEnv/addPath calls of the step');
  t.same(sent[1]!.effects, [], 'drained at each checkpoint');

  await t.test('the interrupted step has a check: it runs again; restored outputs and env reach later steps', async (t) => {
    const resumed = await run({ workspace: first.workspace, steps: sent.slice(0, 1), running: { index: 1, name: 'checked' } });
    t.same(resumed.invalid, []);
    t.equal(resumed.result?.status, 'completed', resumed.result?.reason ?? '');
    t.same(resumed.marks(), ['run checked', 'run plain', `last made resume-secret-output-value ${first.workspace}/a ${first.workspace}/a /opt/made`, 'job.onSuccess'], 'make not run again');
    t.same(resumed.steps().map((s) => `${s.name}:${s.status}`), ['checked:running', 'checked:completed', 'plain:running', 'plain:completed', 'last:running', 'last:completed'], 'no step.status for restored steps');
    t.same(resumed.result?.steps[0], { name: 'make', status: 'completed', startedAt: sent[0]!.startedAt, finishedAt: sent[0]!.finishedAt }, 'the restored step keeps its times');
    t.match(resumed.lines('(setup)').join('\n'), 'resumed after an agent restart: not run again: make');
  });

  await t.test('the interrupted step has no check: it fails, later steps are skipped, the failure hooks run', async (t) => {
    const resumed = await run({ workspace: first.workspace, steps: sent.slice(0, 2), running: { index: 2, name: 'plain' } });
    t.same(resumed.invalid, []);
    t.equal(resumed.result?.status, 'failed');
    t.match(resumed.result?.reason, /^step "plain" failed: the agent restarted while this step was running; it is not run again/);
    t.same(resumed.marks(), ['job.onFailure'], 'nothing ran again');
    t.same(resumed.result?.steps.map((s) => [s.name, s.status]), [['make', 'completed'], ['checked', 'completed'], ['plain', 'failed'], ['last', 'skipped']]);
    t.same(checkpoints(resumed).map((c) => [c.name, c.status]), [['plain', 'failed']], 'the refusal is checkpointed too');
  });

  await t.test('a restored failed step: the job stays on the failure path', async (t) => {
    const failed: StepCheckpoint = { ...sent[1]!, status: 'failed', reason: 'boom' };
    const resumed = await run({ workspace: first.workspace, steps: [sent[0]!, failed] });
    t.equal(resumed.result?.status, 'failed');
    t.equal(resumed.result?.reason, 'step "checked" failed: boom');
    t.same(resumed.marks(), ['job.onFailure']);
    t.same(resumed.result?.steps.map((s) => [s.name, s.status]), [['make', 'completed'], ['checked', 'failed'], ['plain', 'skipped'], ['last', 'skipped']]);
  });
});
