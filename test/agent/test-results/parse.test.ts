// The agent's result-file reading (agent/test-results): JUnit XML and TAP parsed into cases with
// suite, name, file, status, duration, message and output; hostile or broken files (DOCTYPE and
// entity bombs, deep nesting, huge attributes, binary, not UTF-8, neither format) refused with a
// reason, never thrown at the caller; limits clip fields and stop at the step's test budget;
// paths outside the workspace are refused; what a test printed is masked like a log line and
// sent in batches of 5,000.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { collectTests, parseResultText, REPORT_BATCH } from '../../../agent/test-results/collect.ts';
import { ResultFileError } from '../../../agent/test-results/junit.ts';
import { TEST_LIMITS } from '../../../agent/test-results/limits.ts';
import { SecretSet } from '../../../agent/logs/masker.ts';
import type { RunnerApiContext } from '../../../agent/jobs/runner-api-context.ts';
import type { AgentToOrchestrator, TestCase } from '../../../schemas/wire/agent.ts';

function parse(text: string): TestCase[] {
  const out: TestCase[] = [];
  parseResultText(text, (c) => (out.push(c), true));
  return out;
}

function refused(text: string): string {
  try {
    parse(text);
  } catch (error) {
    if (error instanceof ResultFileError) return error.message;
    throw error;
  }
  throw new Error('not refused');
}

const JUNIT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="all">
  <testsuite name="math" tests="4" time="0.5">
    <testcase classname="math" name="adds" time="0.012" file="test/math.test.ts"/>
    <testcase classname="math" name="divides &amp; conquers" time="1.5">
      <failure message="expected 2, got 3" type="AssertionError">AssertionError: expected 2, got 3
    at test/math.test.ts:10:5
    at run (node:internal)</failure>
    </testcase>
    <testcase name="skips"><skipped/></testcase>
    <testcase name="throws"><error message="boom">Error: boom</error></testcase>
    <testsuite name="nested"><testcase name="inner" time="0"/></testsuite>
  </testsuite>
</testsuites>`;

const TAP = `TAP version 14
# Subtest: strings
    ok 1 - trims
    not ok 2 - pads
      ---
      message: expected "  a" got "a"
      at:
        fileName: test/strings.test.ts
        lineNumber: 12
      ...
    1..2
not ok 1 - strings # time=5.1ms
ok 2 - lonely # SKIP not today
ok 3 - top level passes
1..3
`;

t.test('JUnit XML: suites (nested), statuses, durations, messages, first lines of output, files', async (t) => {
  const cases = parse(JUNIT);
  t.equal(cases.length, 5);
  const by = (name: string) => cases.find((c) => c.name === name)!;
  t.match(by('adds'), { suite: 'math', status: 'passed', durationMs: 12, file: 'test/math.test.ts' });
  t.match(by('divides & conquers'), { status: 'failed', durationMs: 1500, message: 'expected 2, got 3' });
  t.match(by('divides & conquers').output, /^AssertionError: expected 2, got 3\n\s+at test\/math\.test\.ts:10:5/);
  t.match(by('skips'), { status: 'skipped' });
  t.match(by('throws'), { status: 'errored', message: 'boom' });
  t.match(by('inner'), { suite: 'math › nested', status: 'passed', durationMs: 0 });
  t.same(parse('<testsuite name="solo"><testcase name="a"/></testsuite>').map((c) => [c.suite, c.name]), [['solo', 'a']], 'a bare <testsuite> root');
  t.match(parse('<testsuite name="s"><testcase name="t"><failure>plain text body</failure></testcase></testsuite>')[0], { status: 'failed', message: 'plain text body', output: 'plain text body' }, 'a failure that is only text');
});

t.test("tap's own JUnit reporter: subtest cases are not tests, YAML diagnostics are not the message", async (t) => {
  const xml = `<?xml version="1.0" encoding="UTF-8" ?>
<testsuites id="x" name="TAP Tests" tests="4" failures="3">
<testsuite name="test/a.test.ts" tests="3" failures="2">
<testsuite name="group" tests="2" failures="1">
<testcase id="1" name="adds" classname="test/a.test.ts &gt; group" file="test/a.test.ts"></testcase>
<testcase id="2" name="two is three" classname="test/a.test.ts &gt; group" file="test/a.test.ts">
<failure><![CDATA[
compare: ===
at:
  fileName: test/a.test.ts
  lineNumber: 2
]]></failure>
</testcase>
</testsuite>
<testcase id="1" name="group" classname="test/a.test.ts" file="test/a.test.ts" time="0.2"><failure><![CDATA[
test: group
]]></failure></testcase>
<testcase id="2" name="top" classname="test/a.test.ts"></testcase>
</testsuite>
</testsuites>`;
  t.same(parse(xml).map((c) => [c.suite, c.name, c.status, c.message]), [
    ['test/a.test.ts', 'top', 'passed', undefined],
    ['test/a.test.ts › group', 'adds', 'passed', undefined],
    ['test/a.test.ts › group', 'two is three', 'failed', 'two is three'],
  ]);
});

t.test('JUnit XML: character references are decoded once (surefire writes &#10;), &amp; first is not a reference', async (t) => {
  const xml = `<testsuite name="refs &#x2014; &#60;x&#62;"><testcase name="a &lt;b&gt; &amp;#60; &quot;c&apos;"><failure message="line one&#10;line two">out &#38;amp; &#x41;</failure></testcase></testsuite>`;
  const [c] = parse(xml);
  t.equal(c!.suite, 'refs \u2014 <x>');
  t.equal(c!.name, 'a <b> &#60; "c\'', 'an escaped ampersand stays text');
  t.equal(c!.message, 'line one\nline two');
  t.equal(c!.output, 'out &amp; A');
});

t.test('TAP: subtests become suites, a subtest point is not a test, skip and diagnostics', async (t) => {
  const cases = parse(TAP);
  t.same(cases.map((c) => [c.suite, c.name, c.status]), [
    ['strings', 'trims', 'passed'],
    ['strings', 'pads', 'failed'],
    ['', 'lonely', 'skipped'],
    ['', 'top level passes', 'passed'],
  ]);
  const pads = cases[1]!;
  t.equal(pads.message, 'expected "  a" got "a"');
  t.equal(pads.file, 'test/strings.test.ts');
  t.match(pads.output, /lineNumber/);
});

t.test('hostile and broken files are refused with a reason', async (t) => {
  const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><testsuite name="s"><testcase name="&x;"/></testsuite>`;
  t.match(refused(xxe), /DOCTYPE or entity declaration/);
  const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><testsuite name="&lol2;"/>`;
  t.match(refused(laughs), /DOCTYPE/);
  const deep = `<testsuites>${'<testsuite name="d">'.repeat(500)}${'</testsuite>'.repeat(500)}</testsuites>`;
  t.match(refused(deep), /not well-formed XML|nest/i, 'deep nesting stops at the parser bound');
  t.match(refused('<html><body>not junit</body></html>'), /no <testsuites> or <testsuite>/);
  t.match(refused('hello world\nthis is a log'), /neither JUnit XML nor TAP/);
  const deepTap = `${' '.repeat(4 * (TEST_LIMITS.maxDepth + 1))}ok 1 - deep\n1..1\n`;
  t.match(refused(deepTap), /deeper than/);
  t.match(refused('TAP version 14\n1..0\n'), /no test points/);
  const huge = `<testsuite name="s"><testcase name="${'n'.repeat(200_000)}"><failure message="${'m'.repeat(100_000)}">${'o\n'.repeat(10_000)}</failure></testcase></testsuite>`;
  const [c] = parse(huge);
  t.equal(c!.name.length, TEST_LIMITS.nameLength, 'a huge attribute is clipped');
  t.equal(c!.message!.length, TEST_LIMITS.messageLength);
  t.equal(c!.output!.split('\n').length, TEST_LIMITS.outputLines, 'only the first lines of the output');
});

t.test('collectTests: files from globs and reports, refusals, masking, batches, budget', async (t) => {
  const ws = await mkdtemp(join(tmpdir(), 'svc-tests-ws-'));
  const outside = await mkdtemp(join(tmpdir(), 'svc-tests-out-'));
  t.teardown(() => Promise.all([rm(ws, { recursive: true, force: true }), rm(outside, { recursive: true, force: true })]));
  await mkdir(join(ws, 'reports'));
  await writeFile(join(ws, 'reports', 'a.xml'), JUNIT.replace('expected 2, got 3', 'token hunter2secret leaked'));
  await writeFile(join(ws, 'reports', 'b.tap'), TAP);
  await writeFile(join(ws, 'reports', 'bin.xml'), Buffer.from([0x3c, 0x00, 0x01, 0x02]));
  await writeFile(join(ws, 'reports', 'latin1.tap'), Buffer.from([0x6f, 0x6b, 0x20, 0x31, 0x20, 0xe9, 0xff]));
  await writeFile(join(outside, 'x.xml'), JUNIT);
  await symlink(join(outside, 'x.xml'), join(ws, 'reports', 'link.xml'));
  const many = `<testsuite name="many">${Array.from({ length: 12_000 }, (_, i) => `<testcase name="t${i}"/>`).join('')}</testsuite>`;
  await writeFile(join(ws, 'many.xml'), many);

  const sent: Array<Extract<AgentToOrchestrator, { type: 'tests.report.request' }>> = [];
  const secrets = new SecretSet();
  secrets.add('hunter2secret');
  const ctx: RunnerApiContext = {
    jobId: '00000000-0000-4000-8000-000000000001',
    workspace: ws,
    scratch: ws,
    secrets,
    signal: new AbortController().signal,
    send: () => {},
    request: async (message) => {
      if (message.type !== 'tests.report.request') throw new Error(`unexpected ${message.type}`);
      sent.push(message);
      return message.final ? { type: 'tests.report.response', requestId: message.requestId, failed: 9, quarantinedFailed: 9, waived: true } : { type: 'tests.report.response', requestId: message.requestId };
    },
  };
  const result = await collectTests({ index: 2, name: 'unit', patterns: ['reports/**', 'nothing/*.xml'], paths: ['many.xml', '../escape.xml', join(outside, 'x.xml')], exitFailure: true }, ctx);
  t.equal(result.files, 3, 'a.xml, b.tap and many.xml were read');
  t.equal(result.total, 5 + 4 + 12_000);
  t.same({ failed: result.failed, quarantinedFailed: result.quarantinedFailed, waived: result.waived }, { failed: 9, quarantinedFailed: 9, waived: true }, 'the orchestrator\'s answer');
  const problems = result.problems.join('\n');
  t.match(problems, /bin\.xml is binary/);
  t.match(problems, /latin1\.tap is not UTF-8/);
  t.match(problems, /link\.xml links outside the workspace/);
  t.match(problems, /"nothing\/\*\.xml" matched no file/);
  t.match(problems, /"\.\.\/escape\.xml" is outside the workspace/);
  t.match(problems, /x\.xml" is outside the workspace/);
  t.equal(sent.length, Math.ceil(result.total / REPORT_BATCH), 'batches of 5,000');
  t.ok(sent.slice(0, -1).every((m) => !m.final && m.results.length === REPORT_BATCH));
  const last = sent.at(-1)!;
  t.ok(last.final && last.exitFailure === true && JSON.stringify(last.problems) === JSON.stringify(result.problems), 'the last batch settles the step with the problems');
  const all = sent.flatMap((m) => m.results);
  t.notOk(JSON.stringify(all).includes('hunter2secret'), 'a secret in a failure message is masked');
  t.ok(all.some((c) => c.message === 'token *** leaked'));
  t.same(sent[0]!.step, { index: 2, name: 'unit' });

  // Past the step's budget: the rest are counted in a problem line, not sent.
  sent.length = 0;
  const big = `<testsuite name="big">${Array.from({ length: TEST_LIMITS.maxTests + 10 }, (_, i) => `<testcase name="b${i}"/>`).join('')}</testsuite>`;
  await writeFile(join(ws, 'big.xml'), big);
  const capped = await collectTests({ index: 0, name: 'big', patterns: ['big.xml'], paths: [], exitFailure: false }, ctx);
  t.equal(capped.total, TEST_LIMITS.maxTests);
  t.match(capped.problems.join('\n'), /more than 50000 tests/);
});

t.test('any text, XML-ish or TAP-ish: cases or a ResultFileError, nothing else', async (t) => {
  const pieces = fc.constantFrom('<testsuites>', '</testsuites>', '<testsuite name="s">', '</testsuite>', '<testcase name="c"', '/>', '>', '</testcase>', '<failure message="m">', '</failure>', '<skipped/>', '<![CDATA[', ']]>', '&amp;', '&bogus;', '<!DOCTYPE x>', '<?xml version="1.0"?>', 'TAP version 14\n', 'ok 1 - a\n', 'not ok 2 - b\n', '    ok 1 - sub\n', '# Subtest: s\n', '  ---\n', '  message: x\n', '  ...\n', '1..2\n', 'Bail out! no\n', '\u0000', '\uFFFF', '"', "'", ' ');
  let cases = 0;
  let refused = 0;
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.array(pieces, { maxLength: 60 }).map((p) => p.join(''))), (text) => {
      try {
        parseResultText(text, (c) => {
          if (typeof c.name !== 'string' || c.name === '' || !['passed', 'failed', 'skipped', 'errored'].includes(c.status)) throw new Error(`bad case ${JSON.stringify(c)}`);
          cases++;
          return true;
        });
      } catch (error) {
        if (!(error instanceof ResultFileError)) throw error;
        refused++;
      }
    }),
    { numRuns: 400 },
  );
  t.ok(cases > 0 && refused > 0, `both outcomes seen (${cases} cases, ${refused} refusals)`);
});
