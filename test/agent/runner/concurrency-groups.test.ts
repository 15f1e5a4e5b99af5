// The `filter` role evaluates concurrency group keys after the filter and rules said "run":
// static strings (trimmed), functions of the rule context, job-level groups, failures naming the
// workflow or the job, the time limit, cancel. Real runner child processes on
// test/fixtures/runner-workflows/groups.ts; every message is checked against the wire schema.
import t, { type Test } from 'tap';
import type { RunnerStart } from '../../../schemas/wire/runner.ts';
import { runRunner, type RunnerRun } from '../../fixtures/run-runner.ts';


function filterRole(exportName: string, workflowName: string, start: Partial<RunnerStart> = {}, extra: Partial<Parameters<typeof runRunner>[0]> = {}) {
  return runRunner({ file: 'groups.ts', exportName, workflowName, jobName: 'svc:filter', ...extra, start: { role: 'filter', evaluateWorkflowFilter: true, ...start } });
}

function clean(t: Test, run: RunnerRun): void {
  t.same(run.invalid, [], 'every message matches the wire schema');
  t.equal(run.exitCode, 0, 'exit code 0');
}

t.test('filter and rules say run: the workflow and job keys are reported', async (t) => {
  const r = await filterRole('default', 'gate', { event: { type: 'push', branch: 'feature/x', ref: 'refs/heads/feature/x' } });
  clean(t, r);
  t.equal(r.result?.status, 'completed', r.result?.reason ?? '');
  t.same(r.result?.concurrencyGroups, {
    workflow: 'deploy-feature/x',
    jobs: { build: 'builders', release: 'release/refs/heads/feature/x/job-value' },
  }, 'function of the branch, trimmed static string, function using the ref, env and ctx.$; no key for test/lint/gen');
  t.same(r.result?.steps, []);
  t.ok(r.lines('(setup)', 'system').some((l) => l.startsWith('concurrency groups: ')), 'the keys are logged');
});

t.test('the key follows the context: another branch, another key', async (t) => {
  const r = await filterRole('default', 'gate', { event: { type: 'push', branch: 'main' } });
  clean(t, r);
  t.equal(r.result?.concurrencyGroups?.workflow, 'deploy-main');
  t.equal(r.result?.concurrencyGroups?.jobs?.['release'], 'release/main/job-value');
});

t.test('filter or rule says no: skipped, no group evaluated', async (t) => {
  const filtered = await filterRole('default', 'gate', { changedFiles: ['SKIP'] });
  clean(t, filtered);
  t.equal(filtered.result?.status, 'skipped');
  t.equal(filtered.result?.reason, 'workflow filter returned false');
  t.equal(filtered.result?.concurrencyGroups, undefined);
  const ruled = await filterRole('default', 'gate', { changedFiles: ['DRAFT'] });
  t.equal(ruled.result?.status, 'skipped');
  t.equal(ruled.result?.reason, 'workflow rule "not-draft" returned false');
  t.equal(ruled.result?.concurrencyGroups, undefined);
});

t.test('a workflow with only a group (no filter, no rules) completes and reports it', async (t) => {
  const r = await filterRole('onlyGroup', 'only-group');
  clean(t, r);
  t.equal(r.result?.status, 'completed', r.result?.reason ?? '');
  t.same(r.result?.concurrencyGroups, { workflow: 'the-one' });
});

t.test('only job groups (array form): no workflow key', async (t) => {
  const r = await filterRole('jobGroups', 'job-groups');
  clean(t, r);
  t.equal(r.result?.status, 'completed', r.result?.reason ?? '');
  t.same(r.result?.concurrencyGroups, { jobs: { a: 'a-push' } });
});

t.test('no declared group: completed without concurrencyGroups', async (t) => {
  const r = await filterRole('noGroups', 'no-groups');
  clean(t, r);
  t.equal(r.result?.status, 'completed', r.result?.reason ?? '');
  t.notOk(r.result !== undefined && 'concurrencyGroups' in r.result, 'the field is absent');
});

t.test('a throwing group function fails the pseudo-job naming where', async (t) => {
  const inJob = await filterRole('throwsInJob', 'throws-in-job');
  clean(t, inJob);
  t.equal(inJob.result?.status, 'failed');
  t.equal(inJob.result?.reason, 'concurrency group of job deploy: threw: deploy key broke');
  t.equal(inJob.result?.concurrencyGroups, undefined, 'no keys on a failure');
  t.ok(inJob.lines('(setup)', 'stderr').includes('concurrency group of job deploy: threw: deploy key broke'));
});

t.test('a group function returning an empty string fails the pseudo-job', async (t) => {
  const r = await filterRole('emptyInJob', 'empty-in-job');
  clean(t, r);
  t.equal(r.result?.status, 'failed');
  t.equal(r.result?.reason, 'concurrency group of job deploy: returned an empty string');
});

t.test('every bad key is named: workflow throws, blank, too long, not a string; exactly 200 after trimming is fine', async (t) => {
  const r = await filterRole('bad', 'bad');
  clean(t, r);
  t.equal(r.result?.status, 'failed');
  t.equal(
    r.result?.reason,
    [
      'concurrency group of the workflow: threw: no key today',
      'concurrency group of job empty: returned an empty string',
      'concurrency group of job long: returned 201 characters after trimming; the limit is 200',
      'concurrency group of job num: returned number, expected a string',
    ].join('; '),
  );
});

t.test('a group function that never settles fails at the time limit', async (t) => {
  const r = await filterRole('slow', 'slow', { hookTimeoutMs: 300 });
  clean(t, r);
  t.equal(r.result?.status, 'failed');
  t.equal(r.result?.reason, 'concurrency group of the workflow: timed out after 300 ms');
  const capped = await filterRole('slow', 'slow', { jobTimeoutMs: 250 });
  t.equal(capped.result?.reason, 'concurrency group of the workflow: timed out after 250 ms', 'the job timeout caps the limit');
});

t.test('a cancel stops a running group function: cancelled, no keys', async (t) => {
  let sent = false;
  const r = await filterRole('sleepy', 'sleepy', {}, {
    onMessage: (message, control) => {
      if (!sent && message.type === 'runner.log' && message.text === 'group-started') {
        sent = true;
        control.cancel('user asked', false);
      }
    },
  });
  clean(t, r);
  t.ok(sent, 'the group function was running when the cancel went');
  t.equal(r.result?.status, 'cancelled');
  t.equal(r.result?.reason, 'user asked');
  t.equal(r.result?.concurrencyGroups, undefined);
  t.ok(r.elapsedMs < 300_000, `hang guard: the hour-long sleep was stopped (${r.elapsedMs} ms)`);
});
