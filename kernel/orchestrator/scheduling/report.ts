// What a pseudo-job's terminal `job.status` means for its run, applied in the transaction that
// records it (the run is locked; progression runs right after): a filter that said no becomes
// `skipped` (progression then skips the run); a generator's output is inserted as jobs, or the
// generator fails when its output as a whole cannot be used.
import type { Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import type { JobStatus } from '../../../schemas/wire/agent.ts';
import { sql } from '../../services/db/index.ts';
import { insertGenerated } from './generated.ts';

export interface ReportedJob {
  id: string;
  runId: string;
  orgId: string;
  name: string;
  kind: string;
}

export const FILTER_FALSE_REASON = 'workflow filter returned false';

/** The agent reports a rules verdict as `completed` with reason `skipped: <why>`. */
function verdictReason(reason: string | undefined): string {
  if (reason === undefined || reason === '' || reason === 'skipped') return FILTER_FALSE_REASON;
  return reason.startsWith('skipped: ') ? reason.slice('skipped: '.length) : reason;
}

/** Applies the scheduling meaning of a terminal report; returns the job's final status and reason. */
export async function applySchedulingReport(
  tx: CommonQueryMethods,
  job: ReportedJob,
  message: Static<typeof JobStatus>,
): Promise<{ status: string; reason: string | undefined }> {
  const same = { status: message.status as string, reason: message.reason };
  if (message.status !== 'completed') return same;
  if (job.kind === 'filter' && message.skipped === true) {
    const reason = verdictReason(message.reason);
    await tx.query(sql.unsafe`UPDATE jobs SET status = 'skipped', reason = ${reason}, updated_at = now() WHERE id = ${job.id}`);
    return { status: 'skipped', reason };
  }
  if (job.kind === 'generate') {
    const outcome = await insertGenerated(tx, { id: job.id, runId: job.runId, orgId: job.orgId, name: job.name }, message.generated);
    if (outcome.failure !== undefined) {
      await tx.query(sql.unsafe`UPDATE jobs SET status = 'failed', reason = ${outcome.failure}, updated_at = now() WHERE id = ${job.id}`);
      return { status: 'failed', reason: outcome.failure };
    }
  }
  return same;
}
