// The step runner as a real child process: steps, outputs, rules, filters, schemas, check /
// whenInSync, timeouts, shell quoting, log capture, environment and escaped errors.
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { runRunner, type RunnerRun } from '../../fixtures/run-runner.ts';

// Each case forks a real runner (about half a second each on two cores).

const steps = (jobName: string, extra: Partial<Parameters<typeof runRunner>[0]> = {}) =>
  runRunner({ file: 'steps.ts', workflowName: 'steps', jobName, ...extra });

function clean(t: Test, run: RunnerRun): void {
  t.same(run.invalid, [], 'every message matches the wire schema');
  t.equal(run.exitCode, 0, 'the runner exits 0 (the result message carries the status)');
  t.equal(run.stderr, '', 'nothing on the runner’s own stderr');
}

t.test('three steps pass outputs along; job outputs come from step outputs', async (t) => {
  const run = await steps('three');
  clean(t, run);
  t.equal(run.messages[0]?.type, 'runner.ready', 'ready first (sent once listening)');
  t.equal(run.result?.status, 'completed');
  t.same(run.result?.outputs, { combined: 'hello-env-set' });
  t.same(
    run.steps().map((s) => `${s.index}:${s.name}:${s.status}`),
    ['0:produce:running', '0:produce:completed', '1:transform:running', '1:transform:completed', '2:consume:running', '2:consume:completed'],
  );
  t.same(run.lines('produce', 'stdout'), ['hello'], 'command output streamed as the step’s stdout');
  t.same(run.lines('consume', 'stdout'), ['env-set/job-value/unset'], 'setEnv reaches later steps; job env present; secrets not in env');
  for (const s of run.result!.steps) t.ok(s.startedAt && s.finishedAt && s.startedAt <= s.finishedAt, `${s.name} has times`);
});

t.test('a step skipped by a rule does not fail the job; later steps run', async (t) => {
  const run = await steps('ruled', { start: { changedFiles: ['README.md'] } });
  clean(t, run);
  t.equal(run.result?.status, 'completed');
  t.same(
    run.result?.steps.map((s) => [s.name, s.status, s.reason]),
    [
      ['first', 'completed', undefined],
      ['never', 'skipped', 'step rule "on-release" returned false'],
      ['docs', 'skipped', 'skipped by step rule: docs only'],
      ['last', 'completed', undefined],
    ],
  );
  t.same(run.marks(), ['first', 'last']);
  const runsDocs = await steps('ruled', { start: { changedFiles: ['src/a.ts'] } });
  t.same(runsDocs.marks(), ['first', 'docs', 'last'], 'the skip predicate sees changedFiles');
});

t.test('a false job rule skips the job and every step', async (t) => {
  const run = await steps('job-rule');
  clean(t, run);
  t.equal(run.result?.status, 'skipped');
  t.equal(run.result?.reason, 'job rule "main only" returned false');
  t.same(run.result?.steps.map((s) => s.status), ['skipped']);
});

t.test('a rule returning a non-boolean fails the step with its name', async (t) => {
  const run = await steps('bad-rule');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'step "a" failed: step rule "broken" returned string, expected a boolean');
  t.equal(run.result?.exitCode, undefined, 'a thrown error carries no exit code');
  t.same(run.result?.steps.map((s) => [s.status, s.reason]), [
    ['failed', 'step rule "broken" returned string, expected a boolean'],
    ['skipped', 'an earlier step failed'],
  ]);
});

t.test('outputs that do not match the step schema fail the step naming the path', async (t) => {
  const run = await steps('schema');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.match(run.result?.reason, /^step "count" failed: outputs do not match the step's outputs schema: count: must be number$/);
  t.match(run.result?.steps[1], { name: 'after', status: 'skipped', reason: 'an earlier step failed' });
});

t.test('check / whenInSync: no drift uses whenInSync outputs and skips the body', async (t) => {
  const run = await steps('sync');
  clean(t, run);
  t.equal(run.result?.status, 'failed', 'the step without whenInSync cannot produce its required outputs');
  t.same(run.result?.steps.map((s) => [s.name, s.status]), [
    ['in-sync', 'completed'],
    ['drifted', 'completed'],
    ['no-when', 'failed'],
  ]);
  t.equal(run.result?.steps[0]?.reason, 'in sync: already deployed; body not run');
  t.match(run.result?.steps[2]?.reason, /v: is required \(check reported no drift and the step has no whenInSync/);
});

t.test('a step timeout fails the step and kills its command', async (t) => {
  const run = await steps('timeout');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'step "slow" failed: step timed out after 300 ms');
  t.equal(run.result?.exitCode, undefined, 'a timeout carries no exit code (its command was killed)');
  t.equal(run.result?.steps[0]?.exitCode, undefined);
  t.ok(run.elapsedMs < 300_000, `hang guard: finished without waiting for the hour-long sleep (${run.elapsedMs} ms)`);
});

t.test('jobTimeoutMs fails the running step and skips the rest', async (t) => {
  const run = await steps('long-job', { start: { jobTimeoutMs: 400 } });
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.equal(run.result?.reason, 'step "waits" failed: job timed out after 400 ms');
  t.equal(run.result?.exitCode, undefined, 'nor does the job timeout');
  t.match(run.result?.steps, [{ name: 'waits', status: 'failed' }, { name: 'after', status: 'skipped' }]);
  t.ok(run.elapsedMs < 300_000, `hang guard: did not wait for the hour-long sleep (${run.elapsedMs} ms)`);
});

t.test('job outputs that cannot cross IPC fail the job', async (t) => {
  const run = await steps('bad-outputs');
  clean(t, run);
  t.equal(run.result?.status, 'failed');
  t.match(run.result?.reason, /^job outputs failed: job outputs must be JSON-serializable: /);
});

t.test('SIGTERM to the runner is a force cancel: the result is sent at once', async (t) => {
  let signalled = false;
  const run = await steps('long-job', {
    onMessage: (m, control) => {
      if (m.type === 'runner.step' && m.status === 'running' && !signalled) {
        signalled = true;
        setTimeout(() => control.child.kill('SIGTERM'), 200);
      }
    },
  });
  clean(t, run);
  t.equal(run.result?.status, 'cancelled');
  t.match(run.result?.reason, /^runner received SIGTERM \(force cancel/);
  t.ok(run.elapsedMs < 300_000, `hang guard: finished, not after the hour-long sleep (${run.elapsedMs} ms)`);
});

t.test('shell metacharacters in values stay single arguments', async (t) => {
  const run = await steps('quoting');
  clean(t, run);
  t.same(run.result?.outputs, {
    one: "[a b; echo pwned $(whoami) `id` \"q\" 'q' | cat > x && *]",
    many: '[x y]\n[$HOME]\n[; ls]',
  });
  t.notOk(existsSync(`${run.workspace}/x`), 'no redirection happened');
});

t.test('console, process writes, command output and ctx.log become log lines of the step', async (t) => {
  const run = await steps('logs');
  clean(t, run);
  t.same(run.lines('printing', 'stdout'), ['from console.log', 'partial line', 'out1', 'out2', 'no newline at end']);
  t.same(run.lines('printing', 'stderr'), ['from console.error', 'err1', 'an error line']);
});

t.test('an exit hook that throws after the result went out ends the runner at once, saying so', async (t) => {
  const run = await steps('exit-hook');
  t.same(run.invalid, []);
  t.equal(run.result?.status, 'completed', 'the result was sent before the exit');
  t.equal(run.exitCode, 0);
  // Without the exit path the error was swallowed, the exit aborted, and the runner (with the
  // job's sandbox) lived on until its 5 s fallback timer; now it says why and exits.
  t.match(run.stderr, /svc step runner: uncaught exception while exiting: exit hook failed/);
});

t.test('an unhandled rejection or uncaught exception in workflow code fails the step', async (t) => {
  const rejected = await steps('escaped');
  clean(t, rejected);
  t.equal(rejected.result?.status, 'failed');
  t.equal(rejected.result?.reason, 'step "rejects" failed: unhandled rejection: lost promise');
  t.ok(rejected.elapsedMs < 300_000, `hang guard: the step failed, not after its hour-long wait (${rejected.elapsedMs} ms)`);
  const thrown = await steps('thrown');
  clean(t, thrown);
  t.equal(thrown.result?.reason, 'step "throws-later" failed: uncaught exception: from a timer');
});

t.test('environment, cwd, secrets, needs, matrix, temp files', async (t) => {
  const run = await steps('env', {
    runnerEnv: { RUNNER_ONLY: 'leak' },
    start: { secrets: { TOKEN: 't0k', 'prod:KEY': 'pk' }, needs: { build: { v: 1 } }, matrix: { os: 'linux' }, isTestRun: true },
  });
  clean(t, run);
  const out = run.result!.outputs as Record<string, string>;
  t.equal(out['cwd'], run.workspace, 'process.cwd() is the workspace');
  t.match(out['path'], /^\/opt\/extra-bin:/, 'addPath prepends to PATH for commands');
  t.equal(out['runnerSecretInEnv'], 'absent', 'the runner’s own environment is not the job’s');
  t.equal(out['secret'], 't0k');
  t.equal(out['qualified'], 'pk');
  t.equal(out['unqualified'], 'pk', 'an unqualified name finds the one context that has it');
  t.equal(out['need'], '{"v":1}');
  t.equal(out['isTestRun'], 'true');
  t.equal(out['matrix'], '{"os":"linux"}');
  t.equal(out['hasSignal'], 'true');
  t.notOk(existsSync(out['tmp']!), 'mktemp directory removed at the end of the job');
  t.notOk(existsSync(out['file']!), 'mktempFile removed at the end of the job');
});

t.test('workflow filter and workflow rules when evaluateWorkflowFilter is set', async (t) => {
  const base = { file: 'steps.ts', exportName: 'filtered', workflowName: 'filtered', jobName: 'only' } as const;
  const docs = await runRunner({ ...base, start: { evaluateWorkflowFilter: true, changedFiles: ['docs/a.md'] } });
  clean(t, docs);
  t.equal(docs.result?.status, 'skipped');
  t.equal(docs.result?.reason, 'workflow filter returned false');
  t.same(docs.marks(), []);
  const bot = await runRunner({ ...base, start: { evaluateWorkflowFilter: true, changedFiles: ['src/a.ts'], event: { type: 'push', sender: 'bot' } } });
  t.equal(bot.result?.status, 'skipped');
  t.equal(bot.result?.reason, 'skipped by workflow rule: bot pushes');
  const src = await runRunner({ ...base, start: { evaluateWorkflowFilter: true, changedFiles: ['src/a.ts'] } });
  t.equal(src.result?.status, 'completed');
  t.same(src.marks(), ['ran']);
  const later = await runRunner({ ...base, start: { evaluateWorkflowFilter: false, changedFiles: ['docs/a.md'] } });
  t.equal(later.result?.status, 'completed', 'jobs after the first do not evaluate the filter again');
});
