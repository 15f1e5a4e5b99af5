// Test results in the step runner (agent/runner/test-results.ts) with the agent's real reader
// behind `tests.collect` (agent/test-results/collect.ts): after a step the declared globs (job
// and step), ctx.tests.report paths and the lines of the SVC_TEST_RESULTS file go to the agent,
// which parses them in its own process; a failure from the command's exit code is waived when
// the orchestrator says every failing test is quarantined (the job then completes), and fails
// the job otherwise.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { collectTests, type CollectArgs } from '../../../agent/test-results/collect.ts';
import { SecretSet } from '../../../agent/logs/masker.ts';
import { runRunner } from '../../fixtures/run-runner.ts';
import type { TestCase } from '../../../schemas/wire/agent.ts';

async function run(t: { teardown(fn: () => unknown): void }, failTests: boolean, quarantined: boolean) {
  const ws = await mkdtemp(join(tmpdir(), 'svc-runner-tests-'));
  t.teardown(() => rm(ws, { recursive: true, force: true }));
  const reported: Array<{ args: CollectArgs; cases: TestCase[] }> = [];
  const result = await runRunner({
    file: 'test-results.ts',
    workflowName: 'tests',
    jobName: 'unit',
    start: { workspace: ws, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...(failTests ? { FAIL_TESTS: '1' } : {}) } },
    api: async (request) => {
      if (request.api !== 'tests.collect') throw { code: 'SVC_ERR_TEST_NO_API', message: request.api };
      const args = request.args as CollectArgs;
      const cases: TestCase[] = [];
      reported.push({ args, cases });
      return collectTests(args, {
        jobId: 'job-1',
        workspace: ws,
        scratch: ws,
        secrets: new SecretSet(),
        signal: new AbortController().signal,
        send: () => {},
        request: async (m) => {
          if (m.type !== 'tests.report.request') throw new Error(m.type);
          cases.push(...m.results);
          const failed = cases.filter((c) => c.status === 'failed').length;
          return { type: 'tests.report.response', requestId: m.requestId, failed, quarantinedFailed: quarantined ? failed : 0, waived: quarantined && failed > 0 && m.exitFailure === true };
        },
      });
    },
  });
  return { result, reported };
}

t.test('a passing step: every declared and reported file read', async (t) => {
  const { result, reported } = await run(t, false, false);
  t.equal(result.result?.status, 'completed', result.stderr);
  const write = reported.find((r) => r.args.name === 'write')!;
  t.same(write.args.patterns, ['reports/*.xml']);
  t.same([...write.args.paths].sort(), ['extra.tap', 'shell.tap'], 'ctx.tests.report and the SVC_TEST_RESULTS file');
  t.equal(write.args.exitFailure, false);
  t.same(write.cases.map((c) => c.name).sort(), ['adds', 'flips', 'from the shell', 'reported']);
  const after = reported.find((r) => r.args.name === 'after')!;
  t.same(after.args.patterns, ['reports/*.xml', 'more/*.tap'], "the job's globs and the step's");
  t.match(result.lines('write').join('\n'), /test results: 4 tests from 3 files, 0 failed/);
  t.match(result.lines('after').join('\n'), /pattern "more\/\*\.tap" matched no file/);
});

t.test('a failing test command: the job fails', async (t) => {
  const { result, reported } = await run(t, true, false);
  t.equal(result.result?.status, 'failed');
  t.equal(reported.find((r) => r.args.name === 'write')!.args.exitFailure, true, 'the failure came from a command exit');
  t.equal(result.result?.exitCode, 3, "the job's result carries the failing command's exit code (a retry on exitCodes reads it)");
  t.equal(result.result?.steps[0]?.status, 'failed');
  t.equal(result.result?.steps[0]?.exitCode, 3, 'so does the failed step');
  t.equal(result.result?.steps[1]?.status, 'skipped');
  t.match(result.lines('write').join('\n'), /1 failed/);
});

t.test('every failing test quarantined: the step passes with the reason, the job completes', async (t) => {
  const { result } = await run(t, true, true);
  t.equal(result.result?.status, 'completed', result.stderr);
  t.match(result.result?.steps[0], { status: 'completed', reason: /failed only in quarantined tests: 1 failing test is quarantined/ });
  t.equal(result.result?.exitCode, undefined, 'a waived failure reports no exit code');
  t.equal(result.result?.steps[0]?.exitCode, undefined);
  t.equal(result.result?.steps[1]?.status, 'completed', 'the next step runs');
  t.match(result.lines('after').join('\n'), /SVC_TEST_RESULTS set/);
});
