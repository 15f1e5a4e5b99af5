// Hook order on success, failure and cancellation (read from the log lines hooks write), hook
// failures (compound reason, rest of the level skipped, other levels run), cancel with and
// without force. Real runner child processes, real `sleep` commands.
import t, { type Test } from 'tap';
import { runRunner, type RunnerControl, type RunnerRun } from '../../fixtures/run-runner.ts';
import type { RunnerToAgent } from '../../../schemas/wire/runner.ts';


const hooks = (jobName: string, extra: Partial<Parameters<typeof runRunner>[0]> = {}) =>
  runRunner({ file: 'hooks.ts', workflowName: 'hooks', jobName, ...extra, start: { workflowHooks: true, ...extra.start } });

function clean(t: Test, run: RunnerRun): void {
  t.same(run.invalid, [], 'every message matches the wire schema');
  t.equal(run.exitCode, 0, 'exit code 0');
}

/** Sends a cancel when a stdout line starting with `child-pid` appears under `label`. */
function cancelOnChild(label: string, force: boolean, pids: number[]) {
  return (message: RunnerToAgent, control: RunnerControl) => {
    if (message.type === 'runner.log' && message.step === label && message.text.startsWith('child-pid ')) {
      pids.push(Number(message.text.slice('child-pid '.length)));
      control.cancel('cancelled', force);
    }
  };
}

/** The process has exited: no such pid, or a zombie (killed, waiting to be reaped). */
async function gone(pid: number): Promise<boolean> {
  const { readFile } = await import('node:fs/promises');
  // Polled; the bound is a hang guard only.
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    try {
      process.kill(pid, 0);
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      if (/^\d+ \(.*\) Z/.test(stat)) return true;
    } catch {
      return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

t.test('success: beforeStep, step, step cleanup, afterStep per step; job onSuccess, cleanup; workflow onSuccess, cleanup', async (t) => {
  const run = await hooks('ok');
  clean(t, run);
  t.equal(run.result?.status, 'completed');
  t.same(run.marks(), [
    'job.beforeStep a',
    'run a',
    'step a.cleanup',
    'job.afterStep a success',
    'job.beforeStep b',
    'run b',
    'step b.cleanup',
    'job.afterStep b success',
    'job.onSuccess',
    'job.cleanup',
    'workflow.onSuccess',
    'workflow.cleanup',
  ]);
  t.ok(run.lines('(hook) job onSuccess').includes('H job.onSuccess'), 'hook lines are labelled (hook) <level> <name>');
  const noWorkflow = await hooks('ok', { start: { workflowHooks: false } });
  t.notOk(noWorkflow.marks().some((m) => m.startsWith('workflow.')), 'workflow hooks run only when runner.start asks');
});

t.test('failure: later steps skipped; job onFailure then cleanup, workflow likewise; outcome metadata', async (t) => {
  const run = await hooks('fail');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'step "bad" failed: boom');
  t.same(run.marks(), [
    'job.beforeStep a',
    'run a',
    'step a.cleanup',
    'job.afterStep a success',
    'job.beforeStep bad',
    'run bad',
    'step bad.cleanup',
    'job.afterStep bad failed',
    'job.onFailure',
    'job.cleanup',
    'workflow.onFailure',
    'workflow.cleanup',
  ]);
  t.match(run.result?.steps, [
    { name: 'a', status: 'completed' },
    { name: 'bad', status: 'failed', reason: 'boom' },
    { name: 'c', status: 'skipped', reason: 'an earlier step failed' },
  ]);
  const outcome = run.lines('(hook) job onFailure', 'system').find((l) => l.startsWith('outcome '));
  t.same(JSON.parse(outcome!.slice('outcome '.length)), {
    status: 'failed',
    reason: 'step "bad" failed: boom',
    failedStep: 'bad',
    steps: ['a'],
    duration: 'number',
  });
});

t.test('cancel: running step aborted (its command killed); step onCancel, cleanup; job onCancel, cleanup; workflow onCancel, cleanup', async (t) => {
  const pids: number[] = [];
  const run = await hooks('cancel', { onMessage: cancelOnChild('long', false, pids) });
  clean(t, run);
  t.equal(run.result?.status, 'cancelled');
  t.equal(run.result?.reason, 'cancelled');
  t.same(run.marks(), [
    'job.beforeStep a',
    'run a',
    'step a.cleanup',
    'job.afterStep a success',
    'job.beforeStep long',
    'run long',
    'step long.onCancel',
    'step long.cleanup',
    'job.onCancel',
    'job.cleanup',
    'workflow.onCancel',
    'workflow.cleanup',
  ]);
  t.match(run.result?.steps, [
    { name: 'a', status: 'completed' },
    { name: 'long', status: 'cancelled', reason: 'cancelled' },
    { name: 'c', status: 'skipped', reason: 'the job was cancelled' },
  ]);
  t.equal(pids.length, 1);
  t.ok(await gone(pids[0]!), 'the step’s sleep was killed');
  // The bound sits halfway between a run that was cancelled (seconds, ~18 s seen with both cores
  // busy) and one that waited for its 600 s sleep.
  t.ok(run.elapsedMs < 300_000, `did not wait for sleep 600 (${run.elapsedMs} ms)`);
});

t.test('a hook that throws: compound reason, rest of its level skipped, other levels run', async (t) => {
  const run = await hooks('hook-throw');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'job onSuccess hook failed: boom');
  t.same(run.marks().slice(-3), ['job.onSuccess', 'workflow.onSuccess', 'workflow.cleanup'], 'job cleanup skipped; workflow hooks still run');
  t.ok(run.lines('(hook) job cleanup', 'system').includes('skipped: an earlier job hook failed'));
});

t.test('a hook that times out ({ run, timeout }) fails the job like a throw', async (t) => {
  const run = await hooks('hook-timeout');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'job onSuccess hook failed: timed out after 200 ms');
  t.same(run.marks().slice(-3), ['job.onSuccess', 'workflow.onSuccess', 'workflow.cleanup']);
});

t.test('the default hook timeout comes from hookTimeoutMs and kills the hook’s command', async (t) => {
  const run = await hooks('hook-default-timeout', { start: { hookTimeoutMs: 300 } });
  clean(t, run);
  t.equal(run.result?.reason, 'job cleanup hook failed: timed out after 300 ms');
  t.same(run.marks().slice(-3), ['job.cleanup', 'workflow.onSuccess', 'workflow.cleanup']);
  t.ok(run.elapsedMs < 300_000, `hang guard: did not wait for the hour-long sleep (${run.elapsedMs} ms)`);
});

t.test('cancel plus a failing onCancel hook: "cancelled; job onCancel hook failed: boom"', async (t) => {
  const run = await hooks('cancel-hook-throw', { onMessage: cancelOnChild('long', false, []) });
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'cancelled; job onCancel hook failed: boom');
  t.same(run.marks().slice(-5), ['step long.onCancel', 'step long.cleanup', 'job.onCancel', 'workflow.onCancel', 'workflow.cleanup']);
});

t.test('a failing step hook fails the job but does not stop later steps', async (t) => {
  const run = await hooks('step-hook-throw');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'step a cleanup hook failed: cleanup broke');
  t.same(run.marks().slice(1), [
    'run a',
    'step a.cleanup',
    'job.afterStep a success',
    'job.beforeStep b',
    'run b',
    'step b.cleanup',
    'job.afterStep b success',
    'job.onSuccess',
    'job.cleanup',
    'workflow.onSuccess',
    'workflow.cleanup',
  ]);
});

t.test('force cancel kills a long-running hook at once and finishes cancelled', async (t) => {
  const pids: number[] = [];
  const run = await hooks('force', { onMessage: cancelOnChild('(hook) job cleanup', true, pids) });
  clean(t, run);
  t.equal(run.result?.status, 'cancelled');
  t.match(run.result?.reason, /^cancelled \(force cancel/);
  t.same(run.marks(), ['run a', 'step a.cleanup', 'job.onSuccess', 'job.cleanup'], 'no hook ran after the force cancel');
  t.ok(await gone(pids[0]!), 'the hook’s sleep was killed');
  t.ok(run.elapsedMs < 300_000, `finished at once, not after the 600 s sleep (${run.elapsedMs} ms)`);
});

t.test('force cancel during a step: no hooks, step cancelled, rest skipped', async (t) => {
  const pids: number[] = [];
  const run = await hooks('force-step', { onMessage: cancelOnChild('long', true, pids) });
  clean(t, run);
  t.equal(run.result?.status, 'cancelled');
  t.same(run.marks(), ['job.beforeStep long', 'run long']);
  t.match(run.result?.steps, [
    { name: 'long', status: 'cancelled' },
    { name: 'c', status: 'skipped', reason: 'the job was cancelled' },
  ]);
  t.ok(await gone(pids[0]!), 'the step’s sleep was killed');
});

t.test('an invalid hook (bad timeout) is a hook failure with a clear reason', async (t) => {
  const run = await hooks('bad-hook');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'job onSuccess hook failed: its timeout must be a positive number of milliseconds, got -5');
  t.same(run.marks(), ['run a', 'step a.cleanup', 'workflow.onSuccess', 'workflow.cleanup'], 'job cleanup skipped');
});
