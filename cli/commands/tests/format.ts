// How `svc tests …` prints test results (docs/test-results.md): tables of failures, flaky tests,
// history and quarantine entries; `--json` prints the answer as the relay gave it.
import type { FlakyView, QuarantineView, RunTestsView, TestHistoryView, TestResultView } from '../../../schemas/wire/relay.ts';
import { formatTable } from '../../table.ts';

/** Milliseconds as people read them; `missing` when unknown. */
function formatDuration(ms: number | null, missing: string): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return missing;
  return ms < 1000 ? `${Math.round(ms)}ms` : `${(ms / 1000).toFixed(1)}s`;
}

const title = (t: { suite: string; name: string }) => (t.suite === '' ? t.name : `${t.suite} › ${t.name}`);
const firstLine = (text: string | null) => (text === null ? '' : text.split('\n')[0]!.slice(0, 120));

export function failureLines(results: readonly TestResultView[]): string[] {
  if (results.length === 0) return ['No failed tests.'];
  const rows = results.map((r) => [r.status + (r.quarantined ? ' (quarantined)' : ''), title(r), r.runId, r.jobName, firstLine(r.message)]);
  return formatTable(['STATUS', 'TEST', 'RUN', 'JOB', 'MESSAGE'], rows);
}

export function runLines(run: RunTestsView): string[] {
  const c = run.counts;
  const out = [`run ${run.runId}: ${c.total} tests, ${c.passed} passed, ${c.failed} failed, ${c.errored} errored, ${c.skipped} skipped${c.quarantined > 0 ? `, ${c.quarantined} quarantined failures` : ''}`];
  for (const s of run.steps) {
    const outcome = s.waived ? 'failed only in quarantined tests (job not failed)' : s.failedByTests ? 'failed by its tests' : s.exitFailure ? 'failed' : 'ok';
    out.push(`  ${s.jobName} / ${s.stepName}${s.attempt > 1 ? ` (attempt ${s.attempt})` : ''}: ${s.counts.total} tests, ${s.counts.failed + s.counts.errored} failed: ${outcome}`);
    for (const p of s.problems) out.push(`    ${p}`);
  }
  const failing = run.results.filter((r) => r.status === 'failed' || r.status === 'errored');
  if (failing.length > 0) out.push(...failureLines(failing));
  return out;
}

export function flakyLines(tests: readonly FlakyView[]): string[] {
  if (tests.length === 0) return ['No flaky tests (none both passed and failed on one commit).'];
  const rows = tests.map((t) => [title(t) + (t.quarantined ? ' (quarantined)' : ''), t.repository, t.sha.slice(0, 12), t.passedRuns.join(','), t.failedRuns.join(','), t.lastSeenAt]);
  return formatTable(['TEST', 'REPOSITORY', 'COMMIT', 'PASSED IN', 'FAILED IN', 'LAST SEEN'], rows);
}

export function historyLines(h: TestHistoryView): string[] {
  const rate = h.failureRate === null ? '-' : `${(h.failureRate * 100).toFixed(1)}%`;
  const out = [`${h.name}: ${h.results.length} results, failure rate ${rate}, median ${formatDuration(h.medianDurationMs, '-')}${h.flaky.length > 0 ? `, flaky on ${h.flaky.length} commit(s)` : ''}`];
  const active = h.quarantine.find((q) => q.removedAt === null);
  if (active !== undefined) out.push(`quarantined by ${active.addedBy} at ${active.addedAt}: ${active.reason}`);
  const rows = h.results.map((r) => [r.at, r.status + (r.quarantined ? ' (quarantined)' : ''), formatDuration(r.durationMs, '-'), r.runId, r.sha.slice(0, 12), firstLine(r.message)]);
  if (rows.length > 0) out.push(...formatTable(['AT', 'STATUS', 'DURATION', 'RUN', 'COMMIT', 'MESSAGE'], rows));
  return out;
}

export function quarantineLines(entries: readonly QuarantineView[]): string[] {
  if (entries.length === 0) return ['No test is quarantined.'];
  const rows = entries.map((q) => [title(q), q.repository ?? '(whole org)', `${q.addedBy} ${q.addedAt}: ${q.reason}`, q.removedAt === null ? '-' : `${q.removedBy ?? ''} ${q.removedAt}: ${q.removedReason ?? ''}`]);
  return formatTable(['TEST', 'SCOPE', 'ENTERED', 'LEFT'], rows);
}
