// The suite's own runner (scripts/test-runner/run-files.ts) on real tap scripts in real Node
// processes: a passing file, a failing one (its output follows its line), one without tap's
// closing count, one killed by a signal, one tap cannot end (a busy loop: the hang guard stops its process group),
// and the order and numbering of the lines when files run two at a time. The JUnit report
// (scripts/test-runner/junit.ts) of a file with subtests, read back by the agent's own result
// parser as svc's CI records it: one case per top-level subtest, the failure's first assertion as
// its message, a crashed file as a case of its own.
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parseResultText } from '../../agent/test-results/collect.ts';
import { junitOf } from '../../scripts/test-runner/junit.ts';
import { runFiles } from '../../scripts/test-runner/run-files.ts';
import type { TestCase } from '../../schemas/wire/agent.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-run-files-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

const files: Record<string, string> = {
  'pass.test.ts': "import t from 'tap';\nt.ok(true, 'one');\nt.equal(1, 1, 'two');\n",
  'fail.test.ts': "import t from 'tap';\nt.ok(true, 'fine');\nt.equal(1, 2, 'the failing assertion');\n",
  'plain.test.ts': "console.log('no tap here');\n",
  'killed.test.ts': "import t from 'tap';\nt.ok(true);\nprocess.kill(process.pid, 'SIGKILL');\n",
  'busy.test.ts': "import t from 'tap';\nt.ok(true, 'started');\nwhile (true) {}\n",
  'subtests.test.ts': [
    "import t from 'tap';",
    "t.ok(true, 'a top-level assertion is no test case');",
    "t.test('adds <two> & \\x1b[31mcolours\\x1b[0m', async (t) => { t.equal(1 + 1, 2); t.test('nested', async (t) => t.ok(true)); });",
    "t.test('breaks', async (t) => { t.ok(true, 'first fine'); t.equal(2, 3, 'two is not three'); });",
    "t.test('later', { skip: 'not today' }, async () => undefined);",
    '',
  ].join('\n'),
};
for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);

// tap resolves from the repository's node_modules, as for the suite's own files.
await symlink(join(import.meta.dirname, '..', '..', 'node_modules'), join(dir, 'node_modules'), 'dir');
const env = { ...process.env };

t.test('each file gets one line with its counts; a failure is followed by its output', async (t) => {
  const out: string[] = [];
  const results = await runFiles({ root: dir, files: ['pass.test.ts', 'fail.test.ts'], jobs: 2, timeout: 60, env, imports: [], write: (s) => out.push(s), tag: 'probe' });
  const text = out.join('');
  const pass = results.find((r) => r.file === 'pass.test.ts');
  const fail = results.find((r) => r.file === 'fail.test.ts');
  t.match(pass, { ok: true, counts: { total: 2, pass: 2 } });
  t.notOk(pass?.output, 'a passing file keeps its output to itself');
  t.match(fail, { ok: false, counts: { total: 2, pass: 1, fail: 1 } });
  t.notOk(fail?.reason, 'its assertions say why: no extra reason');
  t.match(text, /^TAP version 14\n1\.\.2\n/);
  t.match(text, /^ok \d - pass\.test\.ts # time=\d+ms \(total 2, pass 2\) \[probe\]$/m);
  t.match(text, /^not ok \d - fail\.test\.ts # time=\d+ms \(total 2, pass 1, fail 1\) \[probe\]\n {4}/m, 'the failed file\'s output follows its line, indented');
  t.match(text, /^ {4}.*not ok \d+ - the failing assertion$/m);
  t.same(text.match(/^(?:not )?ok (\d) /gm)?.map((l) => l.trim()).map((l) => l.split(' ').at(-1)), ['1', '2'], 'lines numbered in the order the files ended');
});

t.test('a file without tap\'s closing count, or ended by a signal, fails and says why', async (t) => {
  const results = await runFiles({ root: dir, files: ['plain.test.ts', 'killed.test.ts'], jobs: 1, timeout: 60, env, imports: [], write: () => undefined });
  t.match(results[0], { file: 'plain.test.ts', ok: false, reason: /without tap's closing count/ });
  t.match(results[1], { file: 'killed.test.ts', ok: false, reason: 'ended by SIGKILL' });
});

t.test('a file tap cannot end is stopped by the hang guard, with its reason', async (t) => {
  const out: string[] = [];
  const [busy] = await runFiles({ root: dir, files: ['busy.test.ts'], jobs: 1, timeout: 1, guardMarginSeconds: 1, env, imports: [], write: (s) => out.push(s) });
  t.match(busy, { ok: false, reason: /still running after 2 s \(the hang guard\): stopped/ });
  t.match(out.join(''), /^not ok 1 - busy\.test\.ts .*the hang guard/m);
});

t.test('JUnit: a case per top-level subtest, read back by the agent as svc CI records it', async (t) => {
  const results = await runFiles({ root: dir, files: ['subtests.test.ts', 'killed.test.ts', 'pass.test.ts'], jobs: 1, timeout: 60, env, imports: [], write: () => undefined });
  const [subtests] = results;
  t.same(subtests?.subtests.map((s) => [s.name, s.status]), [['adds <two> & \x1b[31mcolours\x1b[0m', 'passed'], ['breaks', 'failed'], ['later', 'skipped']]);
  t.ok((subtests?.subtests[0]?.ms ?? 0) > 0, 'with its time');
  const xml = junitOf(results.map((r) => ({ file: r.file, tier: 'unit', seconds: r.seconds, failed: !r.ok, subtests: r.subtests, ...(r.reason === undefined ? {} : { reason: r.reason }) })), ['unit']);
  const cases: TestCase[] = [];
  parseResultText(xml, (c) => (cases.push(c), true));
  t.same(
    cases.map((c) => [c.suite, c.name, c.status]),
    [
      ['unit › subtests.test.ts', 'adds <two> & [31mcolours[0m', 'passed'],
      ['unit › subtests.test.ts', 'breaks', 'failed'],
      ['unit › subtests.test.ts', 'later', 'skipped'],
      ['unit › killed.test.ts', 'killed.test.ts', 'failed'],
      ['unit › pass.test.ts', 'pass.test.ts', 'passed'],
    ],
    'the subtests by name (markup kept as text, control characters dropped); a file without subtests, or one that failed without a failing subtest, as itself',
  );
  const breaks = cases.find((c) => c.name === 'breaks');
  t.equal(breaks?.message, 'two is not three', "the failure's first failing assertion");
  t.match(breaks?.output, /^not ok 2 - two is not three\n[\s\S]*fileName: subtests.test.ts\n *lineNumber: 4\n/, 'its diagnostics (where it failed) as output, unindented');
  t.equal(cases.find((c) => c.name === 'killed.test.ts')?.message, 'ended by SIGKILL');
  t.equal(breaks?.file, 'subtests.test.ts');
});
