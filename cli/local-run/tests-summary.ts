// The test results of a local run (docs/test-results.md), summed for the run's summary: counts,
// then each failure with its job, suite, name and the first line of its message.
import type { LocalTestResult } from './host/hub.ts';

export interface LocalTestsSummary {
  total: number;
  passed: number;
  failed: number;
  skipped: number;
  errored: number;
  failures: Array<{ job: string; step: string; suite: string; name: string; status: string; message: string | null }>;
}

export function localTestsSummary(tests: readonly LocalTestResult[], label: (jobId: string) => string): LocalTestsSummary | undefined {
  if (tests.length === 0) return undefined;
  const count = (status: string) => tests.filter((t) => t.test.status === status).length;
  return {
    total: tests.length,
    passed: count('passed'),
    failed: count('failed'),
    skipped: count('skipped'),
    errored: count('errored'),
    failures: tests
      .filter((t) => t.test.status === 'failed' || t.test.status === 'errored')
      .map((t) => ({ job: label(t.jobId), step: t.step, suite: t.test.suite, name: t.test.name, status: t.test.status, message: t.test.message ?? null })),
  };
}

export function localTestsLines(summary: LocalTestsSummary | undefined): string[] {
  if (summary === undefined) return [];
  const lines = [`  tests: ${summary.total} (${summary.passed} passed, ${summary.failed} failed, ${summary.errored} errored, ${summary.skipped} skipped)`];
  for (const f of summary.failures.slice(0, 50)) {
    const where = f.suite === '' ? f.name : `${f.suite} › ${f.name}`;
    lines.push(`    ${f.status.padEnd(8)} [${f.job}] ${where}${f.message === null ? '' : `: ${f.message.split('\n')[0]!.slice(0, 200)}`}`);
  }
  if (summary.failures.length > 50) lines.push(`    … ${summary.failures.length - 50} more failures`);
  return lines;
}
