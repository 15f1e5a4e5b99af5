// `svc run <event> --local` with test results (docs/test-results.md): a step writes a JUnit file
// and a TAP file, one test fails and the test command exits non-zero; the run fails (there is no
// orchestrator, so no quarantine), and the summary counts the tests and names the failure with
// its job and message, in text and in --json.
import t from 'tap';
import { commitAll, runSvc, tempRepo } from '../../fixtures/workflow-trees/index.ts';

const CI = `import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { job, push, step, workflow } from 'svc/sdk';

export default workflow('ci', {
  on: push({ branches: ['main'] }),
  jobs: {
    unit: job({
      runsOn: 'linux',
      testResults: '*.xml',
      steps: [
        step('test', async (ctx) => {
          await writeFile(join(ctx.repoRoot, 'junit.xml'), '<testsuite name="math"><testcase name="adds"/><testcase name="divides"><failure message="expected 2, got 3">at math.test.ts:4</failure></testcase></testsuite>');
          await writeFile(join(ctx.repoRoot, 'more.tap'), 'TAP version 14\\nok 1 - trims\\nok 2 - pads # SKIP later\\n1..2\\n');
          ctx.tests.report('more.tap');
          await ctx.$\`node -e \${'process.exit(1)'}\`;
        }),
      ],
    }),
  },
});
`;

t.test('a failing test: the run fails and the summary names it', async (t) => {
  const dir = tempRepo(t, { '.svc/.svcignore': 'node_modules/\ntypes/\n', '.svc/workflows/ci.ts': CI }, { git: true });
  commitAll(dir, 'workflows');
  const text = await runSvc(dir, ['run', 'push', '--local']);
  t.equal(text.code, 1, text.stderr);
  t.match(text.stdout, /test results: 4 tests from 2 files, 1 failed/, 'the step log says what was read');
  t.match(text.stdout, /\n {2}tests: 4 \(2 passed, 1 failed, 0 errored, 1 skipped\)\n/);
  t.match(text.stdout, /\n {4}failed {3}\[unit\] math › divides: expected 2, got 3\n/);
  const json = await runSvc(dir, ['run', 'push', '--local', '--json']);
  const summary = JSON.parse(json.stdout) as { tests?: { total: number; failures: Array<{ job: string; suite: string; name: string; message: string }> } };
  t.match(summary.tests, { total: 4, passed: 2, failed: 1, skipped: 1, errored: 0 });
  t.same(summary.tests?.failures, [{ job: 'unit', step: 'test', suite: 'math', name: 'divides', status: 'failed', message: 'expected 2, got 3' }]);
});
