// What a pseudo-job's terminal `job.status` means for its run, applied in the transaction that
// records it (the run is locked; progression runs right after), BEFORE the job's status is
// written, so the job moves once to its final status (run-control/states.ts has no move out of a
// terminal one): a filter that said no ends `skipped` (progression then skips the run); a
// generator's output is inserted as jobs, or the generator fails when its output as a whole
// cannot be used; a filter that also computed concurrency group keys records them.
import type { Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import type { JobStatus } from '../../../schemas/wire/agent.ts';
import { sql } from '../../services/db/index.ts';
import type { LockWorkflow } from '../../../schemas/lock.ts';
import { applyGroupKeys, type ReportedGroups } from '../run-control/concurrency.ts';
import { insertGenerated } from './generated.ts';
import { needsGroupKeys } from './plan.ts';

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

/** Applies the scheduling meaning of a terminal report; returns the status and reason the job ends with. */
export async function applySchedulingReport(
  tx: CommonQueryMethods,
  job: ReportedJob,
  message: Static<typeof JobStatus>,
): Promise<{ status: string; reason: string | undefined }> {
  const same = { status: message.status as string, reason: message.reason };
  if (message.status !== 'completed') return same;
  if (job.kind === 'filter' && message.skipped === true) {
    return { status: 'skipped', reason: verdictReason(message.reason) };
  }
  if (job.kind === 'filter') {
    const run = (await tx.one(sql.unsafe`SELECT lock_entry FROM runs WHERE id = ${job.runId}`)) as { lock_entry: LockWorkflow };
    if (needsGroupKeys(run.lock_entry)) {
      const groups: ReportedGroups | undefined = message.concurrencyGroups;
      const failure = await applyGroupKeys(tx, { id: job.runId, workflow: run.lock_entry }, groups);
      if (failure !== undefined) return { status: 'failed', reason: failure };
    }
  }
  if (job.kind === 'generate') {
    const outcome = await insertGenerated(tx, { id: job.id, runId: job.runId, orgId: job.orgId, name: job.name }, message.generated);
    if (outcome.failure !== undefined) return { status: 'failed', reason: outcome.failure };
  }
  return same;
}
