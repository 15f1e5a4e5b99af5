// A held step in the real step runner (runner.start approvalSteps), with a scripted agent
// answering `step.approval`: the runner pauses before the step (before its hooks and rules) and
// goes on when approved; a rejection or expiry fails the step with the reason and skips the
// rest; a cancel or the job timeout ends the wait.
import t, { type Test } from 'tap';
import { runRunner, type ApiRequestMessage, type RunnerRun } from '../../fixtures/run-runner.ts';


// Job `ruled` of steps.ts: first, never (rule: skipped), docs (rule: skipped), last.
/** Only a hang guard: a loaded machine may take long to start a runner. */
const HANG_GUARD_MS = 300_000;
const HELD_LAST = { approvalSteps: [{ index: 3, name: 'last' }] };

function clean(t: Test, run: RunnerRun): void {
  t.same(run.invalid, [], 'every message matches the wire schema');
  t.equal(run.exitCode, 0, 'exit code 0');
}

const approvalRequests = (run: RunnerRun) => run.messages.filter((m): m is ApiRequestMessage => m.type === 'api.request' && m.api === 'step.approval');

t.test('approved: the step waits for the decision, then runs', async (t) => {
  let startedBeforeAnswer: boolean | undefined;
  const run = await runRunner({
    file: 'steps.ts', timeoutMs: HANG_GUARD_MS,
    workflowName: 'steps',
    jobName: 'ruled',
    start: HELD_LAST,
    api: async (request, control) => {
      t.equal(request.api, 'step.approval');
      // Answered once the runner has said it waits (its own line), not after a fixed time.
      const waiting = () => control.messages.some((m) => m.type === 'runner.log' && m.step === 'last' && m.text.startsWith('waiting for an approval'));
      for (const deadline = Date.now() + HANG_GUARD_MS; !waiting() && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 10));
      startedBeforeAnswer = control.messages.some((m) => m.type === 'runner.step' && m.name === 'last');
      return { status: 'approved', reason: 'Approval approved by alice' };
    },
  });
  t.equal(startedBeforeAnswer, false, 'the held step had not started when the answer went');
  clean(t, run);
  t.equal(run.result?.status, 'completed', run.result?.reason ?? '');
  t.same(approvalRequests(run).map((m) => m.args), [{ index: 3, name: 'last' }], 'asked once, for step 4');
  t.same(run.marks(), ['first', 'last'], 'the held step ran after its approval');
  t.same(run.lines('last', 'system').slice(0, 2), ['waiting for an approval before this step runs', 'Approval approved by alice']);
  const order = run.messages.map((m) => (m.type === 'api.request' ? 'ask' : m.type === 'runner.step' && m.name === 'last' ? `last:${m.status}` : '')).filter((x) => x !== '');
  t.same(order, ['ask', 'last:running', 'last:completed'], 'the step starts only after the ask');
});

t.test('rejected: the step fails with the reason, nothing after it runs', async (t) => {
  const run = await runRunner({
    file: 'steps.ts', timeoutMs: HANG_GUARD_MS,
    workflowName: 'steps',
    jobName: 'ruled',
    start: { approvalSteps: [{ index: 0, name: 'first' }] },
    api: () => ({ status: 'rejected', reason: 'Approval rejected by bob: not now' }),
  });
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'step "first" failed: Approval rejected by bob: not now');
  t.same(run.marks(), [], 'neither the held step nor later steps ran');
  t.match(run.result?.steps, [
    { name: 'first', status: 'failed', reason: 'Approval rejected by bob: not now' },
    { name: 'never', status: 'skipped', reason: 'an earlier step failed' },
    { name: 'docs', status: 'skipped', reason: 'an earlier step failed' },
    { name: 'last', status: 'skipped', reason: 'an earlier step failed' },
  ]);
  t.same(run.lines('first', 'stderr'), ['step failed: Approval rejected by bob: not now']);
});

t.test('expired: the step fails with the expiry', async (t) => {
  const run = await runRunner({ file: 'steps.ts', timeoutMs: HANG_GUARD_MS, workflowName: 'steps', jobName: 'ruled', start: HELD_LAST, api: () => ({ status: 'expired', reason: 'Approval expired: no decision within 60 s' }) });
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'step "last" failed: Approval expired: no decision within 60 s');
  t.same(run.marks(), ['first'], 'the steps before the hold ran');
});

t.test('a cancel while the step waits: the step is cancelled, the job takes the cancel path', async (t) => {
  const run = await runRunner({
    file: 'steps.ts', timeoutMs: HANG_GUARD_MS,
    workflowName: 'steps',
    jobName: 'ruled',
    start: HELD_LAST,
    // The decision never comes.
    api: () => new Promise(() => {}),
    onMessage: (message, control) => {
      if (message.type === 'api.request') setTimeout(() => control.cancel('run cancelled by carol', false), 500);
    },
  });
  clean(t, run);
  t.equal(run.result?.status, 'cancelled');
  t.equal(run.result?.reason, 'run cancelled by carol');
  t.match(run.result?.steps.at(-1), { name: 'last', status: 'cancelled', reason: 'run cancelled by carol' });
  t.same(run.marks(), ['first']);
});

t.test('the job timeout ends the wait: the step fails with the timeout', async (t) => {
  const run = await runRunner({ file: 'steps.ts', timeoutMs: HANG_GUARD_MS, workflowName: 'steps', jobName: 'ruled', start: { ...HELD_LAST, jobTimeoutMs: 1_500 }, api: () => new Promise(() => {}) });
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'step "last" failed: job timed out after 1500 ms');
  t.same(run.marks(), ['first']);
});

t.test('no approvalSteps: nothing is asked', async (t) => {
  const run = await runRunner({ file: 'steps.ts', timeoutMs: HANG_GUARD_MS, workflowName: 'steps', jobName: 'ruled' });
  clean(t, run);
  t.equal(run.result?.status, 'completed');
  t.equal(approvalRequests(run).length, 0);
});
