// What the dashboard's run page shows beyond `run.show` (relayed as `run.detail.request`): each
// job's outputs as stored, the whole re-run lineage of the run, and its attestations with their
// verdicts. Job outputs are stored masked: the agent replaces released secrets and secret outputs
// with `***` before it reports them (agent/jobs/executor.ts), so nothing here unmasks anything.
import { Type } from 'typebox';
import type { RunDetail, RunJobOutputs, RunLineageEntry } from '../../../../schemas/wire/relay.ts';
import { MAX_LINEAGE_RUNS } from '../../../../schemas/wire/relay.ts';
import { sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { Nullable } from '../run-record.ts';
import { attestationsOfRun, type AttestationTrust } from './attestations.ts';
import { findRun } from './show.ts';

const OutputRow = Type.Object({ id: Type.String(), display_name: Type.String(), outputs: Type.Unknown() });
const LineageRow = Type.Object({
  id: Type.String(),
  parent_run_id: Nullable(Type.String()),
  status: Type.String(),
  triggered_by: Nullable(Type.String()),
  created_at: Type.Number(),
});

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Jobs that stored outputs (a job without an outputs function stores none), in the run's job order. */
export async function jobOutputsOf(pool: DatabasePool, runId: string): Promise<RunJobOutputs[]> {
  const rows = await pool.any(sqlTyped(OutputRow)`
    select id::text as id, display_name, outputs from jobs
    where run_id = ${runId} and kind = 'job' and outputs is not null order by created_at, id`);
  return rows.filter((r) => isPlainObject(r.outputs)).map((r) => ({ jobId: r.id, job: r.display_name, outputs: r.outputs as Record<string, unknown> }));
}

/**
 * The original run and every re-run of it (each re-run records the original in `original_run_id`
 * and the run it re-ran in `parent_run_id`), oldest first. A tree in general; a chain when each
 * re-run was of the newest run.
 */
export async function lineageOf(pool: DatabasePool, orgId: string, run: { id: string; original_run_id: string | null }): Promise<{ lineage: RunLineageEntry[]; truncated: boolean }> {
  const root = run.original_run_id ?? run.id;
  const rows = await pool.any(sqlTyped(LineageRow)`
    select id::text as id, parent_run_id::text as parent_run_id, status, triggered_by, created_at from runs
    where org_id = ${orgId} and (id = ${root} or original_run_id = ${root})
    order by created_at, id limit ${MAX_LINEAGE_RUNS + 1}`);
  const lineage = rows.slice(0, MAX_LINEAGE_RUNS).map((r) => ({
    runId: r.id,
    parentRunId: r.parent_run_id,
    status: r.status,
    triggeredBy: r.triggered_by,
    createdAt: new Date(r.created_at).toISOString(),
  }));
  return { lineage, truncated: rows.length > MAX_LINEAGE_RUNS };
}

export async function loadRunDetail(pool: DatabasePool, trust: AttestationTrust, orgId: string, runId: string): Promise<RunDetail> {
  const run = await findRun(pool, orgId, runId);
  const [outputs, { lineage, truncated }, attestations] = await Promise.all([
    jobOutputsOf(pool, run.id),
    lineageOf(pool, orgId, run),
    attestationsOfRun(pool, trust, run.id),
  ]);
  return { runId: run.id, outputs, lineage, lineageTruncated: truncated, attestations };
}
