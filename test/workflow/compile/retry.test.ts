// Job retry policies at compile (docs/run-states.md "Retries"): the lock form with its defaults,
// the lock's minReaderVersion (43 only when a retry is declared), every condition accepted (exit
// codes included, now that agents report them), and every bad value refused with
// SVC_ERR_COMPILE_RETRY naming the field path.
import t from 'tap';
import { RETRY_LOCK_VERSION } from '../../../schemas/lock.ts';
import { workflowToLockEntry } from '../../../workflow/compile/lock-entry.ts';
import { minReaderVersionFor } from '../../../workflow/lock/lock-file.ts';
import { backoffSeconds } from '../../../kernel/orchestrator/dispatch/retry.ts';
import { unhonouredFeatures, unhonouredRunFeatures } from '../../../workflow/runtime-support.ts';
import { job, push, step, workflow } from '../../../sdk/index.ts';

const opts = { sourcePath: '.svc/workflows/ci.ts', exportName: 'default', contentHash: 'a'.repeat(64) };
const noop = async (): Promise<void> => {};

function compileWith(retry: unknown) {
  const wf = workflow('ci', { on: push(), jobs: { unit: job({ runsOn: 'linux', retry: retry as never, steps: [step('t', noop)] }) } });
  return workflowToLockEntry(wf, opts);
}

t.test('a retry policy in the lock, with default back-off', async (t) => {
  const entry = compileWith({ maxAttempts: 3, on: ['agent-lost', { exitCodes: [137, 1, 137] }, 'failed-tests'] });
  t.same(entry.jobs[0]!.retry, { maxAttempts: 3, agentLost: true, failedTests: true, exitCodes: [1, 137], backoff: { delaySeconds: 10, factor: 2, maxDelaySeconds: 600 } });
  t.equal(minReaderVersionFor([entry]), RETRY_LOCK_VERSION, 'a lock with a retry needs an orchestrator that honours it');
  t.same(unhonouredFeatures(entry), [], 'agent loss, failed tests and exit codes are all carried out (agents report the exit code)');
  t.same(unhonouredRunFeatures(entry), [], 'an orchestrator runs a lock that retries on exit codes');
  const exitOnly = compileWith({ maxAttempts: 2, on: [{ exitCodes: [3] }, { exitCodes: [75, 3] }], backoff: { delaySeconds: 0 } });
  t.same(exitOnly.jobs[0]!.retry, { maxAttempts: 2, agentLost: false, failedTests: false, exitCodes: [3, 75], backoff: { delaySeconds: 0, factor: 2, maxDelaySeconds: 600 } }, 'exit codes alone, from several conditions, merged and sorted');
  const plain = workflowToLockEntry(workflow('ci', { on: push(), jobs: { unit: job({ runsOn: 'linux', steps: [step('t', noop)] }) } }), opts);
  t.equal(plain.jobs[0]!.retry, undefined, 'no policy, no field');
  t.equal(minReaderVersionFor([plain]), 38, 'a lock without one stays readable by older orchestrators');
  const custom = compileWith({ maxAttempts: 2, on: ['agent-lost'], backoff: { delaySeconds: 0, factor: 1.5, maxDelaySeconds: 30 } });
  t.same(custom.jobs[0]!.retry!.backoff, { delaySeconds: 0, factor: 1.5, maxDelaySeconds: 30 });
});

t.test('back-off grows by the factor up to the ceiling', async (t) => {
  const policy = compileWith({ maxAttempts: 5, on: ['agent-lost'], backoff: { delaySeconds: 10, factor: 3, maxDelaySeconds: 60 } }).jobs[0]!.retry!;
  t.same([1, 2, 3, 4].map((a) => backoffSeconds(policy, a)), [10, 30, 60, 60]);
});

t.test('bad policies are refused with the field path', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [{ on: ['agent-lost'] }, /jobs\.unit\.options\.retry\.maxAttempts: is required/],
    [{ maxAttempts: 1, on: ['agent-lost'] }, /retry\.maxAttempts: maxAttempts .* from 2 to 10, got 1/],
    [{ maxAttempts: 11, on: ['agent-lost'] }, /from 2 to 10, got 11/],
    [{ maxAttempts: 2.5, on: ['agent-lost'] }, /got 2\.5/],
    [{ maxAttempts: 3, on: [] }, /retry\.on: must list at least one condition/],
    [{ maxAttempts: 3 }, /retry\.on: must list at least one condition/],
    [{ maxAttempts: 3, on: ['flaky'] }, /retry\.on\[0\]: "flaky" is not a retry condition/],
    [{ maxAttempts: 3, on: [{ exitCodes: [] }] }, /on\[0\]\.exitCodes: must list at least one exit code/],
    [{ maxAttempts: 3, on: [{ exitCodes: [0] }] }, /exitCodes\[0\]: an exit code must be an integer from 1 to 255, got 0/],
    [{ maxAttempts: 3, on: [{ exitCodes: [256] }] }, /got 256/],
    [{ maxAttempts: 3, on: [{ codes: [1] }] }, /on\[0\]\.codes: unknown field/],
    [{ maxAttempts: 3, on: ['agent-lost'], backoff: { delaySeconds: -1 } }, /backoff\.delaySeconds: .* from 0 to 3600, got -1/],
    [{ maxAttempts: 3, on: ['agent-lost'], backoff: { factor: 0.5 } }, /backoff\.factor: the back-off factor must be a number from 1 to 10/],
    [{ maxAttempts: 3, on: ['agent-lost'], backoff: { delaySeconds: 120, maxDelaySeconds: 60 } }, /longest delay \(60 s\) is shorter than the first one \(120 s\)/],
    [{ maxAttempts: 3, on: ['agent-lost'], backoff: { jitter: true } }, /backoff\.jitter: unknown field/],
    [{ maxAttempts: 3, on: ['agent-lost'], every: 1 }, /retry\.every: unknown field/],
    ['always', /retry: must be an object/],
  ];
  for (const [retry, message] of cases) {
    t.throws(() => compileWith(retry), { code: /SVC_ERR_COMPILE_(RETRY|INVALID_DEFINITION)/, message }, JSON.stringify(retry));
  }
});
