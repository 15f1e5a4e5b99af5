// `tests.report.request` (docs/test-results.md): the cases one step of a job reported, stored a
// batch at a time. Each batch is inserted in one statement (unnest), marked quarantined where an
// active entry covers a failing case, added to the step's counts, and checked for flakiness
// against the other results of the same commit. The step's last batch settles the step: whether
// its failure came from its tests alone (`failed_by_tests`) and whether all of those were
// quarantined (`waived`: the runner then lets the step pass).
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { NotAllowedError, NotFoundError } from '../../../core/errors.ts';
import type { TestsReportRequest } from '../../../schemas/wire/agent.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const JobRow = Type.Object({
  job_id: Type.String(),
  run_id: Type.String(),
  org_id: Type.String(),
  repository: Type.String(),
  sha: Type.String(),
  attempt: Type.Number(),
  agent_id: Type.Union([Type.String(), Type.Null()]),
  status: Type.String(),
});
type JobRow = Static<typeof JobRow>;
const Counts = Type.Object({
  first_id: Type.Union([Type.String(), Type.Null()]),
  total: Type.Number(),
  passed: Type.Number(),
  failed: Type.Number(),
  skipped: Type.Number(),
  errored: Type.Number(),
  quarantined_failed: Type.Number(),
});
const StepRow = Type.Object({ failed: Type.Number(), errored: Type.Number(), quarantined_failed: Type.Number(), failed_by_tests: Type.Boolean(), waived: Type.Boolean() });

export interface ReportAnswer {
  failed?: number;
  quarantinedFailed?: number;
  waived?: boolean;
}

async function reportingJob(db: CommonQueryMethods, agentId: string, jobId: string): Promise<JobRow> {
  if (!UUID.test(jobId)) throw new NotFoundError('SVC_ERR_TESTS_JOB_UNKNOWN', `job ${JSON.stringify(jobId.slice(0, 80))} does not exist`);
  const row = await db.maybeOne(sqlTyped(JobRow)`
    SELECT j.id::text AS job_id, j.run_id::text AS run_id, j.org_id, r.repository, r.sha, j.attempt::int AS attempt,
           j.agent_id, j.status
    FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ${jobId.toLowerCase()}`);
  if (row === null) throw new NotFoundError('SVC_ERR_TESTS_JOB_UNKNOWN', `job ${jobId} does not exist`);
  if (row.agent_id !== agentId) throw new NotAllowedError('SVC_ERR_TESTS_JOB_NOT_OWNED', `job ${jobId} is not dispatched to agent ${agentId}; only the agent running a job may report its tests`);
  if (row.status !== 'dispatched' && row.status !== 'running') throw new NotAllowedError('SVC_ERR_TESTS_JOB_INACTIVE', `job ${jobId} is ${row.status}, not running; its test results are refused`);
  return row;
}

async function insertBatch(tx: CommonQueryMethods, job: JobRow, message: Static<typeof TestsReportRequest>): Promise<Static<typeof Counts>> {
  const tuples = message.results.map((r) => [r.suite, r.name, r.file ?? null, r.status, r.durationMs ?? null, r.message ?? null, r.output ?? null]);
  return tx.one(sqlTyped(Counts)`
    WITH v AS (
      SELECT * FROM ${sql.unnest(tuples as never, ['text', 'text', 'text', 'text', 'int4', 'text', 'text'])} AS v(suite, name, file, status, duration_ms, message, output)
    ), q AS (
      SELECT DISTINCT suite, name FROM test_quarantine
      WHERE org_id = ${job.org_id} AND repository IN ('', ${job.repository}) AND removed_at IS NULL
    ), ins AS (
      INSERT INTO test_results (org_id, repository, sha, run_id, job_id, attempt, step_index, step_name, suite, name, file, status, duration_ms, message, output, quarantined)
      SELECT ${job.org_id}, ${job.repository}, ${job.sha}, ${job.run_id}, ${job.job_id}, ${job.attempt}, ${message.step.index}, ${message.step.name},
             v.suite, v.name, v.file, v.status, v.duration_ms, v.message, v.output,
             v.status IN ('failed', 'errored') AND q.name IS NOT NULL
      FROM v LEFT JOIN q ON q.suite = v.suite AND q.name = v.name
      RETURNING id, status, quarantined
    )
    SELECT min(id)::text AS first_id, count(*)::int AS total,
           count(*) FILTER (WHERE status = 'passed')::int AS passed,
           count(*) FILTER (WHERE status = 'failed')::int AS failed,
           count(*) FILTER (WHERE status = 'skipped')::int AS skipped,
           count(*) FILTER (WHERE status = 'errored')::int AS errored,
           count(*) FILTER (WHERE quarantined)::int AS quarantined_failed
    FROM ins`);
}

/** Tests of this batch that now have both outcomes on this commit: marked, with the runs. */
async function markFlaky(tx: CommonQueryMethods, job: JobRow, firstId: string): Promise<void> {
  // The first results of a commit (the usual case) cannot be flaky yet: one index probe, done.
  const other = await tx.maybeOne(sql.unsafe`
    SELECT 1 AS one FROM test_results WHERE org_id = ${job.org_id} AND repository = ${job.repository} AND sha = ${job.sha}
      AND (job_id <> ${job.job_id} OR attempt <> ${job.attempt}) LIMIT 1`);
  if (other === null) return;
  await tx.query(sql.unsafe`
    INSERT INTO test_flaky (org_id, repository, suite, name, sha, passed_runs, failed_runs)
    SELECT t.org_id, t.repository, t.suite, t.name, t.sha,
           array_agg(DISTINCT t.run_id) FILTER (WHERE t.status = 'passed'),
           array_agg(DISTINCT t.run_id) FILTER (WHERE t.status IN ('failed', 'errored'))
    FROM test_results t
    JOIN (SELECT DISTINCT suite, name FROM test_results WHERE id >= ${firstId}::bigint AND job_id = ${job.job_id} AND status <> 'skipped') b
      ON b.suite = t.suite AND b.name = t.name
    WHERE t.org_id = ${job.org_id} AND t.repository = ${job.repository} AND t.sha = ${job.sha} AND t.status <> 'skipped'
    GROUP BY t.org_id, t.repository, t.suite, t.name, t.sha
    HAVING bool_or(t.status = 'passed') AND bool_or(t.status IN ('failed', 'errored'))
    ON CONFLICT (org_id, repository, suite, name, sha) DO UPDATE
      SET passed_runs = EXCLUDED.passed_runs, failed_runs = EXCLUDED.failed_runs, last_seen_at = clock_timestamp()`);
}

export async function recordTestReport(pool: DatabasePool, agentId: string, message: Static<typeof TestsReportRequest>): Promise<ReportAnswer> {
  return pool.transaction(async (tx) => {
    const job = await reportingJob(tx, agentId, message.jobId);
    const counts = message.results.length === 0 ? undefined : await insertBatch(tx, job, message);
    if (counts !== undefined && counts.first_id !== null) await markFlaky(tx, job, counts.first_id);
    const c = counts ?? { total: 0, passed: 0, failed: 0, skipped: 0, errored: 0, quarantined_failed: 0 };
    await tx.query(sql.unsafe`
      INSERT INTO test_steps (job_id, attempt, step_index, run_id, org_id, step_name, total, passed, failed, skipped, errored, quarantined_failed)
      VALUES (${job.job_id}, ${job.attempt}, ${message.step.index}, ${job.run_id}, ${job.org_id}, ${message.step.name},
              ${c.total}, ${c.passed}, ${c.failed}, ${c.skipped}, ${c.errored}, ${c.quarantined_failed})
      ON CONFLICT (job_id, attempt, step_index) DO UPDATE SET
        total = test_steps.total + EXCLUDED.total, passed = test_steps.passed + EXCLUDED.passed,
        failed = test_steps.failed + EXCLUDED.failed, skipped = test_steps.skipped + EXCLUDED.skipped,
        errored = test_steps.errored + EXCLUDED.errored, quarantined_failed = test_steps.quarantined_failed + EXCLUDED.quarantined_failed,
        updated_at = clock_timestamp()`);
    if (!message.final) return {};
    const problems = message.problems ?? [];
    const exitFailure = message.exitFailure === true;
    const step = await tx.one(sqlTyped(StepRow)`
      UPDATE test_steps SET final = true, exit_failure = ${exitFailure}, problems = ${sql.jsonb(problems)},
        failed_by_tests = ${exitFailure} AND ${problems.length === 0} AND failed + errored > 0,
        waived = ${exitFailure} AND ${problems.length === 0} AND failed + errored > 0 AND quarantined_failed = failed + errored,
        updated_at = clock_timestamp()
      WHERE job_id = ${job.job_id} AND attempt = ${job.attempt} AND step_index = ${message.step.index}
      RETURNING failed, errored, quarantined_failed, failed_by_tests, waived`);
    return { failed: step.failed + step.errored, quarantinedFailed: step.quarantined_failed, waived: step.waived };
  });
}
