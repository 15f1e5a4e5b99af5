// Restart from failed jobs (docs/run-states.md "Restart from failed jobs"): a re-run that runs
// again only the jobs that did not complete in the parent run (failed, cancelled, and the jobs
// skipped because of them) and every job that needs one of those, transitively. The others are
// copied into the new run `completed` with their outputs (`reused_from`), so a dependent reads
// the same `needs` outputs. It reuses the parent's stored event and its frozen lock entry.
// The workflow filter and the workflow hooks always run again: the filter computes the run's
// concurrency keys, the hooks report the new run's outcome.
import type { CommonQueryMethods } from 'slonik';
import type { LockWorkflow } from '../../../../schemas/lock.ts';
import { ConflictError } from '../../../../core/errors.ts';
import { sql } from '../../../services/db/index.ts';
import { generatorJobName } from '../../scheduling/names.ts';

interface ParentJob {
  name: string;
  kind: string;
  status: string;
  generated_by: string | null;
}

/** Lock job names whose parent-run jobs all completed and that need nothing re-run: reused. */
export async function reusableJobs(db: CommonQueryMethods, parentRunId: string, workflow: LockWorkflow): Promise<Set<string>> {
  const rows = (await db.any(sql.unsafe`
    SELECT name, kind, status, generated_by FROM jobs WHERE run_id = ${parentRunId} AND retried_as IS NULL`)) as readonly ParentJob[];
  const entryOf = (row: ParentJob): string | null => {
    if (row.kind === 'job') return row.generated_by ?? row.name;
    if (row.kind === 'generate') return workflow.jobs.find((j) => generatorJobName(j.name) === row.name)?.name ?? null;
    return null;
  };
  const notDone = new Set<string>();
  const seen = new Set<string>();
  for (const row of rows) {
    const entry = entryOf(row);
    if (entry === null) continue;
    seen.add(entry);
    if (row.status !== 'completed') notDone.add(entry);
  }
  // A lock job with no row at all (its generator never ran) did not complete either.
  for (const job of workflow.jobs) if (!seen.has(job.name)) notDone.add(job.name);
  if (notDone.size === 0) {
    throw new ConflictError('SVC_ERR_RUNS_RERUN_NOTHING_FAILED', `run ${parentRunId} has no failed, cancelled or skipped job to restart; re-run the whole run instead`);
  }
  // Every job needing a re-run job runs again too (fixed point over the lock's needs).
  for (let changed = true; changed; ) {
    changed = false;
    for (const job of workflow.jobs) {
      if (!notDone.has(job.name) && job.needs.some((n) => notDone.has(n))) {
        notDone.add(job.name);
        changed = true;
      }
    }
  }
  return new Set(workflow.jobs.map((j) => j.name).filter((n) => !notDone.has(n)));
}

/** Copies the parent's rows of the reused entries into the new run, `completed`, with their outputs. */
export async function copyReusedJobs(tx: CommonQueryMethods, runId: string, parentRunId: string, reused: ReadonlySet<string>): Promise<number> {
  if (reused.size === 0) return 0;
  const names = [...reused];
  const generators = names.map((n) => generatorJobName(n));
  const rows = await tx.any(sql.unsafe`
    INSERT INTO jobs (id, run_id, org_id, name, display_name, kind, matrix, needs, runs_on, status, reason, outputs, generated_by, definition,
                      concurrency_group, finished_at, reused_from)
    SELECT gen_random_uuid(), ${runId}, org_id, name, display_name, kind, matrix, needs, runs_on, 'completed',
           ${`Reused from run ${parentRunId}, where it completed`}, outputs, generated_by, definition, concurrency_group, now(), id
    FROM jobs
    WHERE run_id = ${parentRunId} AND retried_as IS NULL AND status = 'completed'
      AND ((kind = 'job' AND (name = ANY(${sql.array(names, 'text')}) OR generated_by = ANY(${sql.array(names, 'text')})))
        OR (kind = 'generate' AND name = ANY(${sql.array(generators, 'text')})))
    RETURNING id`);
  return rows.length;
}

/** Only a finished run can be restarted from its failed jobs. */
export function checkRestartable(runId: string, status: string): void {
  if (!['failed', 'cancelled'].includes(status)) {
    throw new ConflictError('SVC_ERR_RUNS_RERUN_NOT_FAILED', `run ${runId} is ${status}: only a failed or cancelled run can be restarted from its failed jobs`);
  }
}
