// The run as JUnit XML for a CI (`scripts/test-tiers.ts --junit FILE`; svc's own CI records it as
// test results, docs/test-results.md): one <testsuite> per tier, in it one per test file, in that
// one a <testcase> per top-level subtest of the file, so a test's history and flakiness follow
// each subtest by name ("unit › test/x.test.ts", "the subtest's name"). A file without subtests
// is one test case named after the file; a file that failed without a failing subtest (a crash,
// the hang guard) gets one more case, named after the file, failed with the reason.

/** A top-level subtest of a file, read from the file's TAP output. */
export interface Subtest {
  name: string;
  status: 'passed' | 'failed' | 'skipped';
  /** tap's `# time=` of the subtest, when it printed one. */
  ms?: number;
  /** A failed subtest's first failing assertion and the lines from it on (at most 30). */
  failure?: { message: string; output: string };
}

const POINT = /^(not ok|ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*| # time=([\d.]+)ms)?$/;
const FAILED_ASSERTION = /^\s+not ok \d+ - (.*)$/;
const OUTPUT_LINES = 30;

/**
 * The top-level subtests of a tap file's output: each `ok`/`not ok` line at the left margin that
 * closes a `# Subtest:` (or is skipped), in order. Top-level assertions are not subtests.
 */
export function topLevelSubtests(output: string): Subtest[] {
  const lines = output.split('\n');
  const found: Subtest[] = [];
  let opened: { name: string; at: number } | undefined;
  lines.forEach((line, i) => {
    if (line.startsWith('# Subtest: ')) {
      opened = { name: line.slice('# Subtest: '.length), at: i };
      return;
    }
    const point = POINT.exec(line);
    if (point === null) return;
    const [, verdict, name = '', directive, time] = point;
    const closes = opened !== undefined && opened.name === name;
    if (!closes && directive === undefined) return;
    const subtest: Subtest = { name, status: directive !== undefined ? 'skipped' : verdict === 'ok' ? 'passed' : 'failed' };
    if (time !== undefined) subtest.ms = Number(time);
    if (subtest.status === 'failed' && opened !== undefined) {
      const body = lines.slice(opened.at + 1, i);
      const first = body.findIndex((l) => FAILED_ASSERTION.test(l));
      subtest.failure =
        first < 0
          ? { message: `${name} failed`, output: body.slice(-OUTPUT_LINES).join('\n') }
          : { message: FAILED_ASSERTION.exec(body[first]!)![1]!, output: body.slice(first, first + OUTPUT_LINES).map((l) => l.replace(/^ {4}/, '')).join('\n') };
    }
    found.push(subtest);
    opened = undefined;
  });
  return found;
}

export interface JunitFile {
  file: string;
  tier: string;
  seconds: number;
  failed: boolean;
  /** Why the file failed when its assertions do not say (run-files.ts). */
  reason?: string;
  subtests: readonly Subtest[];
}

const ESCAPES: Record<string, string> = { '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' };
// Control characters (a test's colours) are not allowed in XML 1.0; markup characters are escaped.
const xml = (text: string): string => text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '').replace(/[<>&"']/g, (c) => ESCAPES[c]!);

function testcase(suite: string, name: string, file: string, seconds: number | undefined, verdict: { failure?: { message: string; output: string }; skipped?: boolean }): string {
  const head = `      <testcase classname="${xml(suite)}" name="${xml(name)}" file="${xml(file)}"${seconds === undefined ? '' : ` time="${seconds.toFixed(3)}"`}`;
  if (verdict.failure !== undefined) return `${head}><failure message="${xml(verdict.failure.message)}">${xml(verdict.failure.output)}</failure></testcase>`;
  if (verdict.skipped === true) return `${head}><skipped/></testcase>`;
  return `${head}/>`;
}

function fileSuite(f: JunitFile): string[] {
  const suite = `${f.tier} › ${f.file}`;
  const cases = f.subtests.map((s) => testcase(suite, s.name, f.file, s.ms === undefined ? undefined : s.ms / 1000, { ...(s.failure !== undefined ? { failure: s.failure } : {}), skipped: s.status === 'skipped' }));
  const failedSubtest = f.subtests.some((s) => s.status === 'failed');
  // The file as its own case: when it has no subtests, or when it failed and no subtest says why.
  if (f.subtests.length === 0 || (f.failed && !failedSubtest)) {
    cases.push(testcase(suite, f.file, f.file, f.seconds, f.failed ? { failure: { message: f.reason ?? `${f.file} failed`, output: `see the ${f.file} lines of the run's output` } } : {}));
  }
  const failures = cases.filter((c) => c.includes('<failure')).length;
  return [`    <testsuite name="${xml(f.file)}" file="${xml(f.file)}" tests="${cases.length}" failures="${failures}" time="${f.seconds.toFixed(3)}">`, ...cases, '    </testsuite>'];
}

/** The run as JUnit XML, tiers in the order given. */
export function junitOf(files: readonly JunitFile[], tiers: readonly string[]): string {
  const lines = ['<?xml version="1.0" encoding="UTF-8"?>', '<testsuites name="svc">'];
  for (const tier of tiers) {
    const inTier = files.filter((f) => f.tier === tier);
    if (inTier.length === 0) continue;
    const seconds = inTier.reduce((n, f) => n + f.seconds, 0);
    lines.push(`  <testsuite name="${tier}" tests="${inTier.length}" failures="${inTier.filter((f) => f.failed).length}" time="${seconds.toFixed(3)}">`);
    for (const f of inTier) lines.push(...fileSuite(f));
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>', '');
  return lines.join('\n');
}
