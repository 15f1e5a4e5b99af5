// Run progress for the terminal: polls the orchestrator's own records (runs, jobs, job_logs)
// and reports each status transition and each new log line once. Polling (not LISTEN) because
// the log chunks have no notification and a poll of three indexed queries every few hundred
// milliseconds costs nothing on a laptop; runs that were already finished when svc dev started
// are listed once in the ready summary instead.
import { Type } from 'typebox';
import { sql, sqlTyped, type DatabasePool } from '../../kernel/services/db/index.ts';
import type { DevEvent } from './reporter.ts';

export const TERMINAL_RUN = ['completed', 'failed', 'cancelled', 'skipped'] as const;
const TERMINAL_JOB = new Set(['completed', 'failed', 'cancelled', 'skipped']);

const RunRow = Type.Object({
  id: Type.String(),
  workflow: Type.String(),
  status: Type.String(),
  reason: Type.Union([Type.String(), Type.Null()]),
  sha: Type.String(),
  ref: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.Number(),
});
const JobRow = Type.Object({
  id: Type.String(),
  run_id: Type.String(),
  display_name: Type.String(),
  kind: Type.String(),
  status: Type.String(),
  reason: Type.Union([Type.String(), Type.Null()]),
});
const LogRow = Type.Object({ job_id: Type.String(), seq: Type.Number(), lines: Type.Unknown() });

export interface RecentRun {
  runId: string;
  workflow: string;
  status: string;
  sha: string;
  createdAt: string;
}

export async function recentRuns(pool: DatabasePool, orgId: string, limit = 5): Promise<RecentRun[]> {
  const rows = await pool.any(sqlTyped(RunRow)`
    select id::text as id, workflow, status, reason, sha, ref, created_at from runs
    where org_id = ${orgId} order by created_at desc, id limit ${limit}`);
  return rows.map((r) => ({ runId: r.id, workflow: r.workflow, status: r.status, sha: r.sha, createdAt: new Date(r.created_at).toISOString() }));
}

export interface RunWatcher {
  /** Resolves once the current poll (if any) is done and no more will start. */
  stop(): Promise<void>;
  /** One poll now (tests, and the final sweep before stopping). */
  poll(): Promise<void>;
}

interface JobSeen {
  status: string;
  nextSeq: number;
  runId: string;
  name: string;
}

export function watchRuns(options: {
  pool: DatabasePool;
  orgId: string;
  emit: (event: DevEvent) => void;
  onError: (error: unknown) => void;
  intervalMs?: number;
  /** Runs finished before this are not followed (they are history). */
  since: number;
}): RunWatcher {
  const { pool, orgId, emit } = options;
  const runs = new Map<string, string>();
  const jobs = new Map<string, JobSeen>();
  const done = new Set<string>();
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  const pollOnce = async (): Promise<void> => {
    // Active runs, plus runs created since start that are not done yet in our eyes.
    const rows = await pool.any(sqlTyped(RunRow)`
      select id::text as id, workflow, status, reason, sha, ref, created_at from runs
      where org_id = ${orgId}
        and (status not in ('completed', 'failed', 'cancelled', 'skipped') or created_at >= ${sql.timestamp(new Date(options.since))})
      order by created_at, id`);
    const open = rows.filter((r) => !done.has(r.id));
    if (open.length === 0) return;
    const ids = open.map((r) => r.id);
    const jobRows = await pool.any(sqlTyped(JobRow)`
      select id::text as id, run_id::text as run_id, display_name, kind, status, reason from jobs
      where run_id = any(${sql.array(ids, 'uuid')}) order by created_at, id`);
    for (const run of open) {
      if (runs.get(run.id) === undefined) {
        runs.set(run.id, run.status);
        emit({ event: 'run', runId: run.id, workflow: run.workflow, status: run.status, reason: run.reason, sha: run.sha, ref: run.ref });
      }
    }
    // Logs before job transitions, so a job's lines come before its "completed".
    const jobIds = jobRows.map((j) => j.id);
    if (jobIds.length > 0) {
      const next = jobIds.map((id) => jobs.get(id)?.nextSeq ?? 0);
      const logRows = await pool.any(sqlTyped(LogRow)`
        select l.job_id::text as job_id, l.seq, l.lines from job_logs l
        join unnest(${sql.array(jobIds, 'uuid')}, ${sql.array(next, 'int4')}) as c(id, next) on l.job_id = c.id and l.seq >= c.next
        order by l.job_id, l.seq`);
      const jobById = new Map(jobRows.map((j) => [j.id, j]));
      for (const chunk of logRows) {
        const job = jobById.get(chunk.job_id)!;
        const seen = jobs.get(chunk.job_id) ?? { status: '', nextSeq: 0, runId: job.run_id, name: job.display_name };
        jobs.set(chunk.job_id, seen);
        seen.nextSeq = Math.max(seen.nextSeq, chunk.seq + 1);
        for (const line of Array.isArray(chunk.lines) ? (chunk.lines as Array<Record<string, unknown>>) : []) {
          for (const text of String(line['text'] ?? '').replace(/\n$/, '').split('\n')) {
            emit({
              event: 'log',
              runId: job.run_id,
              jobId: job.id,
              job: job.display_name,
              step: String(line['step'] ?? ''),
              stream: String(line['stream'] ?? 'stdout'),
              text,
              at: String(line['at'] ?? ''),
            });
          }
        }
      }
    }
    for (const job of jobRows) {
      const seen = jobs.get(job.id) ?? { status: '', nextSeq: 0, runId: job.run_id, name: job.display_name };
      jobs.set(job.id, seen);
      // `waiting` is the quiet default: say nothing until a job moves.
      if (seen.status !== job.status && !(seen.status === '' && job.status === 'waiting')) {
        emit({ event: 'job', runId: job.run_id, jobId: job.id, job: job.display_name, kind: job.kind, status: job.status, reason: job.reason });
      }
      seen.status = job.status;
    }
    for (const run of open) {
      if (runs.get(run.id) !== run.status) {
        runs.set(run.id, run.status);
        emit({ event: 'run', runId: run.id, workflow: run.workflow, status: run.status, reason: run.reason, sha: run.sha, ref: run.ref });
      }
      const runJobs = jobRows.filter((j) => j.run_id === run.id);
      if ((TERMINAL_RUN as readonly string[]).includes(run.status) && runJobs.every((j) => TERMINAL_JOB.has(j.status) || j.status === 'waiting')) {
        done.add(run.id);
        for (const j of runJobs) jobs.delete(j.id);
      }
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      current = pollOnce().catch(options.onError).finally(schedule);
    }, options.intervalMs ?? 300);
  };
  schedule();

  return {
    poll: () => (current = current.then(pollOnce)),
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await current.catch(() => undefined);
    },
  };
}
