// The orchestrator's spans of a run after its delivery (docs/tracing.md): each job's queue wait
// and dispatch, the agent's final report, and the run span itself, all under the run's reserved
// span (`runs.trace_context`, made at ingest). Called only when tracing is on.
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { nowMs, type Tracing } from '../../../core/tracing/index.ts';
import type { DispatchRow } from './message.ts';

/** OpenTelemetry CI/CD `cicd.pipeline.result` (and task result) for our terminal statuses. */
export function cicdResult(status: string): string {
  switch (status) {
    case 'completed':
      return 'success';
    case 'failed':
      return 'failure';
    case 'cancelled':
      return 'cancellation';
    case 'skipped':
      return 'skip';
    default:
      return status;
  }
}

/** Queued → claimed, and claimed → message written to the agent's socket. */
export function traceDispatch(tracing: Tracing, row: DispatchRow, claimedAt: number, sentAt: number, agentId: string): void {
  const parent = row.trace_context ?? undefined;
  if (parent === undefined) return;
  const attributes = { 'cicd.pipeline.run.id': row.run_id, 'cicd.pipeline.task.name': row.name, 'cicd.pipeline.task.run.id': row.job_id };
  if (row.queued_ms !== undefined && row.queued_ms !== null) tracing.record('queue wait', { parent, start: row.queued_ms, end: claimedAt, attributes });
  tracing.record('dispatch', { parent, start: claimedAt, end: sentAt, kind: 'producer', attributes: { ...attributes, 'cicd.worker.id': agentId, 'svc.job.attempt': row.attempts } });
}

interface RunTraceRow {
  trace_context: string | null;
  trace_parent: string | null;
  run_id: string;
  workflow: string;
  status: string;
  reason: string | null;
  repository: string;
  sha: string;
  ref: string | null;
  provider: string;
  created_ms: number;
  finished_ms: number | null;
  job_name: string;
}

/**
 * A job's final report, from its frame's arrival to its commit; and when it finished the run, the
 * run span (created → finished) with the id its children already carry.
 */
export async function traceJobReport(tracing: Tracing, pool: DatabasePool, jobId: string, receivedAt: number, runFinished: boolean): Promise<void> {
  const row = (await pool.maybeOne(sql.unsafe`
    SELECT r.trace_context, r.trace_parent, r.id::text AS run_id, r.workflow, r.status, r.reason, r.repository, r.sha, r.ref, r.provider,
      extract(epoch from r.created_at)::float8 * 1000 AS created_ms, extract(epoch from r.finished_at)::float8 * 1000 AS finished_ms, j.name AS job_name
    FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ${jobId}`)) as RunTraceRow | null;
  if (row === null || row.trace_context === null) return;
  const parent = row.trace_context;
  tracing.record('job report', { parent, start: receivedAt, end: nowMs(), kind: 'consumer', attributes: { 'cicd.pipeline.task.name': row.job_name, 'cicd.pipeline.task.run.id': jobId } });
  if (!runFinished || row.finished_ms === null) return;
  // The run span's own parent is the ingest span; `reserved` gives it the id stored with the run.
  tracing.record(`RUN ${row.workflow}`, {
    reserved: parent,
    parent: row.trace_parent ?? undefined,
    start: row.created_ms,
    end: Math.max(row.finished_ms, nowMs()),
    kind: 'server',
    error: row.status === 'failed' ? (row.reason ?? 'failed') : undefined,
    attributes: {
      'cicd.pipeline.name': row.workflow,
      'cicd.pipeline.run.id': row.run_id,
      'cicd.pipeline.action.name': 'RUN',
      'cicd.pipeline.result': cicdResult(row.status),
      'vcs.repository.name': row.repository,
      'vcs.ref.head.revision': row.sha,
      'vcs.ref.head.name': row.ref?.replace(/^refs\/(heads|tags)\//, ''),
      'vcs.provider.name': row.provider,
    },
  });
}
