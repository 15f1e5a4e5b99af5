// Reading test results (docs/test-results.md): a run's tests, recent failures, a test's history
// with its failure rate and median duration, the flaky list, and what retries ask:
// `jobFailedOnlyByTests`. Every read names the org: an orchestrator serving several orgs never
// answers one org's question with another's rows.
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { NotFoundError } from '../../../core/errors.ts';
import type { FlakyView, RunTestsView, TestCounts, TestHistoryView, TestResultView } from '../../../schemas/wire/relay-tests.ts';
import { sql, sqlTyped } from '../../services/db/index.ts';
import { quarantineEntries } from './quarantine.ts';

/** Passed and skipped cases shown in a run's Tests tab besides every failure. */
export const RUN_PASSED_SHOWN = 500;
export const RUN_FAILED_SHOWN = 2000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const N = Type.Union([Type.String(), Type.Null()]);
const I = Type.Union([Type.Number(), Type.Null()]);

const ResultRow = Type.Object({
  run_id: Type.String(),
  job_id: Type.String(),
  job_name: Type.String(),
  attempt: Type.Number(),
  step_index: Type.Number(),
  step_name: Type.String(),
  repository: Type.String(),
  sha: Type.String(),
  suite: Type.String(),
  name: Type.String(),
  file: N,
  status: Type.String(),
  duration_ms: I,
  message: N,
  output: N,
  quarantined: Type.Boolean(),
  at: Type.String(),
});
type ResultRow = Static<typeof ResultRow>;

function resultView(r: ResultRow): TestResultView {
  return {
    runId: r.run_id,
    jobId: r.job_id,
    jobName: r.job_name,
    attempt: r.attempt,
    stepIndex: r.step_index,
    stepName: r.step_name,
    repository: r.repository,
    sha: r.sha,
    suite: r.suite,
    name: r.name,
    file: r.file,
    status: r.status as TestResultView['status'],
    durationMs: r.duration_ms,
    message: r.message,
    output: r.output,
    quarantined: r.quarantined,
    at: r.at,
  };
}

const RESULT_COLUMNS = sql.fragment`
  t.run_id::text, t.job_id::text, j.display_name AS job_name, t.attempt, t.step_index, t.step_name, t.repository, t.sha,
  t.suite, t.name, t.file, t.status, t.duration_ms, t.message, t.output, t.quarantined,
  to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at`;

const CountRow = Type.Object({ total: Type.Number(), passed: Type.Number(), failed: Type.Number(), skipped: Type.Number(), errored: Type.Number(), quarantined: Type.Number() });

const StepRow = Type.Object({
  job_id: Type.String(),
  job_name: Type.String(),
  attempt: Type.Number(),
  step_index: Type.Number(),
  step_name: Type.String(),
  total: Type.Number(),
  passed: Type.Number(),
  failed: Type.Number(),
  skipped: Type.Number(),
  errored: Type.Number(),
  quarantined_failed: Type.Number(),
  exit_failure: Type.Boolean(),
  failed_by_tests: Type.Boolean(),
  waived: Type.Boolean(),
  problems: Type.Unknown(),
});

export async function runTests(db: CommonQueryMethods, orgId: string, runId: string): Promise<RunTestsView> {
  const run = UUID.test(runId)
    ? await db.maybeOne(sqlTyped(Type.Object({ id: Type.String(), repository: Type.String(), sha: Type.String() }))`
        SELECT id::text, repository, sha FROM runs WHERE id = ${runId.toLowerCase()} AND org_id = ${orgId}`)
    : null;
  if (run === null) throw new NotFoundError('SVC_ERR_RUNS_NOT_FOUND', `run ${runId} not found in org ${orgId}`);
  // A restart from failed jobs copies the jobs that had completed (jobs.reused_from): their tests
  // are the original job's, recorded under the original run.
  const jobsOfRun = sql.fragment`(
    SELECT coalesce(o.run_id, r.run_id), coalesce(r.reused_from, r.id) FROM jobs r LEFT JOIN jobs o ON o.id = r.reused_from WHERE r.run_id = ${run.id})`;
  const counts: TestCounts = await db.one(sqlTyped(CountRow)`
    SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'passed')::int AS passed, count(*) FILTER (WHERE status = 'failed')::int AS failed,
           count(*) FILTER (WHERE status = 'skipped')::int AS skipped, count(*) FILTER (WHERE status = 'errored')::int AS errored,
           count(*) FILTER (WHERE quarantined)::int AS quarantined
    FROM test_results WHERE (run_id, job_id) IN ${jobsOfRun}`);
  const steps = await db.any(sqlTyped(StepRow)`
    SELECT s.job_id::text, j.display_name AS job_name, s.attempt, s.step_index, s.step_name, s.total, s.passed, s.failed, s.skipped, s.errored,
           s.quarantined_failed, s.exit_failure, s.failed_by_tests, s.waived, s.problems
    FROM test_steps s JOIN jobs j ON j.id = s.job_id WHERE (s.run_id, s.job_id) IN ${jobsOfRun} ORDER BY j.display_name, s.attempt, s.step_index`);
  const failing = await db.any(sqlTyped(ResultRow)`
    SELECT ${RESULT_COLUMNS} FROM test_results t JOIN jobs j ON j.id = t.job_id
    WHERE (t.run_id, t.job_id) IN ${jobsOfRun} AND t.status IN ('failed', 'errored') ORDER BY t.quarantined, t.suite, t.name, t.attempt LIMIT ${RUN_FAILED_SHOWN}`);
  const others = await db.any(sqlTyped(ResultRow)`
    SELECT ${RESULT_COLUMNS} FROM test_results t JOIN jobs j ON j.id = t.job_id
    WHERE (t.run_id, t.job_id) IN ${jobsOfRun} AND t.status IN ('passed', 'skipped') ORDER BY t.id LIMIT ${RUN_PASSED_SHOWN}`);
  return {
    runId: run.id,
    repository: run.repository,
    sha: run.sha,
    counts,
    steps: steps.map((s) => ({
      jobId: s.job_id,
      jobName: s.job_name,
      attempt: s.attempt,
      stepIndex: s.step_index,
      stepName: s.step_name,
      counts: { total: s.total, passed: s.passed, failed: s.failed, skipped: s.skipped, errored: s.errored, quarantined: s.quarantined_failed },
      exitFailure: s.exit_failure,
      failedByTests: s.failed_by_tests,
      waived: s.waived,
      problems: Array.isArray(s.problems) ? (s.problems as unknown[]).filter((p): p is string => typeof p === 'string') : [],
    })),
    results: [...failing, ...others].map(resultView),
    omitted: counts.total - failing.length - others.length,
  };
}

export async function failedTests(db: CommonQueryMethods, orgId: string, options: { repository?: string; limit: number }): Promise<TestResultView[]> {
  const repo = options.repository === undefined ? sql.fragment`` : sql.fragment`AND t.repository = ${options.repository}`;
  const rows = await db.any(sqlTyped(ResultRow)`
    SELECT ${RESULT_COLUMNS} FROM test_results t JOIN jobs j ON j.id = t.job_id
    WHERE t.org_id = ${orgId} ${repo} AND t.status IN ('failed', 'errored')
    ORDER BY t.created_at DESC, t.id DESC LIMIT ${options.limit}`);
  return rows.map(resultView);
}

const FlakyRow = Type.Object({
  repository: Type.String(),
  suite: Type.String(),
  name: Type.String(),
  sha: Type.String(),
  passed_runs: Type.Array(Type.String()),
  failed_runs: Type.Array(Type.String()),
  first_seen_at: Type.String(),
  last_seen_at: Type.String(),
  quarantined: Type.Boolean(),
});

export async function flakyTests(db: CommonQueryMethods, orgId: string, options: { repository?: string; suite?: string; name?: string; limit: number }): Promise<FlakyView[]> {
  const repo = options.repository === undefined ? sql.fragment`` : sql.fragment`AND f.repository = ${options.repository}`;
  const suite = options.suite === undefined ? sql.fragment`` : sql.fragment`AND f.suite = ${options.suite}`;
  const name = options.name === undefined ? sql.fragment`` : sql.fragment`AND f.name = ${options.name}`;
  const rows = await db.any(sqlTyped(FlakyRow)`
    SELECT f.repository, f.suite, f.name, f.sha, f.passed_runs::text[] AS passed_runs, f.failed_runs::text[] AS failed_runs,
           to_char(f.first_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS first_seen_at, to_char(f.last_seen_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS last_seen_at,
           EXISTS (SELECT 1 FROM test_quarantine q WHERE q.org_id = f.org_id AND q.repository IN ('', f.repository)
                   AND q.suite = f.suite AND q.name = f.name AND q.removed_at IS NULL) AS quarantined
    FROM test_flaky f WHERE f.org_id = ${orgId} ${repo} ${suite} ${name}
    ORDER BY f.last_seen_at DESC LIMIT ${options.limit}`);
  return rows.map((r) => ({
    repository: r.repository,
    suite: r.suite,
    name: r.name,
    sha: r.sha,
    passedRuns: r.passed_runs,
    failedRuns: r.failed_runs,
    firstSeenAt: r.first_seen_at,
    lastSeenAt: r.last_seen_at,
    quarantined: r.quarantined,
  }));
}

const HistoryRow = Type.Object({
  run_id: Type.String(),
  job_id: Type.String(),
  repository: Type.String(),
  suite: Type.String(),
  sha: Type.String(),
  attempt: Type.Number(),
  status: Type.String(),
  duration_ms: I,
  quarantined: Type.Boolean(),
  message: N,
  at: Type.String(),
});

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The last `limit` results of one test (by name; narrowed by repository and suite when given). */
export async function testHistory(db: CommonQueryMethods, orgId: string, options: { repository?: string; suite?: string; name: string; limit: number }): Promise<TestHistoryView> {
  const repo = options.repository === undefined ? sql.fragment`` : sql.fragment`AND t.repository = ${options.repository}`;
  const suite = options.suite === undefined ? sql.fragment`` : sql.fragment`AND t.suite = ${options.suite}`;
  const rows = await db.any(sqlTyped(HistoryRow)`
    SELECT t.run_id::text, t.job_id::text, t.repository, t.suite, t.sha, t.attempt, t.status, t.duration_ms, t.quarantined, left(t.message, 300) AS message,
           to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
    FROM test_results t WHERE t.org_id = ${orgId} ${repo} ${suite} AND t.name = ${options.name}
    ORDER BY t.created_at DESC, t.id DESC LIMIT ${options.limit}`);
  const ran = rows.filter((r) => r.status !== 'skipped');
  const failing = ran.filter((r) => r.status === 'failed' || r.status === 'errored').length;
  const durations = ran.map((r) => r.duration_ms).filter((d): d is number => d !== null);
  const flaky = await flakyTests(db, orgId, { ...options, limit: 50 });
  const quarantine = (await quarantineEntries(db, orgId, { includeRemoved: true, ...(options.repository === undefined ? {} : { repository: options.repository }) })).filter(
    (q) => q.name === options.name && (options.suite === undefined || q.suite === options.suite),
  );
  return {
    repository: options.repository ?? null,
    suite: options.suite ?? null,
    name: options.name,
    results: rows.map((r) => ({
      runId: r.run_id,
      jobId: r.job_id,
      repository: r.repository,
      suite: r.suite,
      sha: r.sha,
      attempt: r.attempt,
      status: r.status as TestResultView['status'],
      durationMs: r.duration_ms,
      quarantined: r.quarantined,
      message: r.message,
      at: r.at,
    })),
    failureRate: ran.length === 0 ? null : failing / ran.length,
    medianDurationMs: median(durations),
    flaky,
    quarantine,
  };
}

/**
 * For retries "on failed tests only" (issue 41 item 4): true when this job (one attempt: each retry
 * is a jobs row of its own) has a step whose failure came from its tests alone (a non-zero command
 * exit, every result file read without a problem, at least one failing test) and was not waived
 * by quarantine.
 */
export async function jobFailedOnlyByTests(db: CommonQueryMethods, jobId: string): Promise<boolean> {
  if (!UUID.test(jobId)) return false;
  const row = await db.maybeOne(sqlTyped(Type.Object({ yes: Type.Boolean() }))`
    SELECT EXISTS (
      SELECT 1 FROM test_steps s
      WHERE s.job_id = ${jobId.toLowerCase()} AND s.final AND s.failed_by_tests AND NOT s.waived
    ) AS yes`);
  return row?.yes === true;
}
