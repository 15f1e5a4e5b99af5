// `testResults` on jobs and steps (docs/test-results.md): the lock carries the globs (a string
// becomes a one-item list), and `svc compile` refuses what the agent could not honour: absolute
// paths, `..`, negations, empty or over-long patterns, too many, invalid globs, non-strings.
import t from 'tap';
import { LockWorkflow } from '../../../schemas/lock.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { workflowToLockEntry } from '../../../workflow/compile/lock-entry.ts';
import { job, push, step, workflow } from '../../../sdk/index.ts';

const opts = { sourcePath: '.svc/workflows/ci.ts', exportName: 'default', contentHash: 'a'.repeat(64) };
const check = compileSchema(LockWorkflow);
const noop = async () => {};

t.test('the lock carries job and step globs', async (t) => {
  const def = workflow('ci', {
    on: push(),
    jobs: {
      unit: job({ runsOn: 'linux', testResults: 'reports/**/*.xml', steps: [step('tap', noop, { testResults: ['out/a.tap', 'out/b.tap'] }), step('plain', noop)] }),
      other: job({ runsOn: 'linux', steps: [step('s', noop)] }),
    },
  });
  const entry = workflowToLockEntry(def, opts);
  const checked = check.validate(entry);
  t.ok(checked.ok, checked.ok ? '' : formatIssues(checked.issues));
  const unit = entry.jobs.find((j) => j.name === 'unit')!;
  t.same(unit.testResults, ['reports/**/*.xml']);
  t.same(unit.steps[0]!.testResults, ['out/a.tap', 'out/b.tap']);
  t.notOk('testResults' in unit.steps[1]!, 'omitted when not declared');
  t.notOk('testResults' in entry.jobs.find((j) => j.name === 'other')!);
});

const refusals: Array<[string, unknown, RegExp]> = [
  ['absolute', '/tmp/junit.xml', /is absolute/],
  ['windows absolute', 'C:\\reports\\x.xml', /is absolute/],
  ['parent', 'reports/../../etc/x.xml', /reaches outside the workspace/],
  ['negation', '!reports/x.xml', /is a negation/],
  ['empty', '  ', /a pattern is empty/],
  ['too long', 'x'.repeat(501), /longer than 500/],
  ['control character', 'a\u0001.xml', /control character/],
  ['invalid glob', 'reports/[a.xml', /is not a valid glob/],
  ['empty list', [], /the list is empty/],
  ['too many', Array.from({ length: 21 }, (_, i) => `r${i}.xml`), /21 patterns; at most 20/],
  ['not a string', [42], /each pattern must be a string/],
  ['wrong type', { junit: 'x.xml' }, /must be a glob or a list of globs/],
];

for (const [what, value, message] of refusals) {
  t.test(`job testResults refused: ${what}`, async (t) => {
    const def = workflow('ci', { on: push(), jobs: { unit: job({ runsOn: 'linux', testResults: value as never, steps: [step('s', noop)] }) } });
    t.throws(() => workflowToLockEntry(def, opts), { code: 'SVC_ERR_COMPILE_TEST_RESULTS', message });
  });
}

t.test('step testResults refused with the step path', async (t) => {
  const def = workflow('ci', { on: push(), jobs: { unit: job({ runsOn: 'linux', steps: [step('s', noop, { testResults: '../x.xml' })] }) } });
  t.throws(() => workflowToLockEntry(def, opts), { code: 'SVC_ERR_COMPILE_TEST_RESULTS', message: /steps\[0\]\.options\.testResults/ });
});
