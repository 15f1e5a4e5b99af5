// NOTIFY channels of the dispatch queue. Anything that makes jobs `queued` calls
// `notifyJobsQueued(tx)` inside the same transaction, so dispatchers wake only once the rows are
// visible.
import type { CommonQueryMethods } from 'slonik';
import { notify } from '../../services/db/index.ts';

/** Queued jobs appeared (or may have): every node's dispatcher runs a pass. */
export const JOBS_CHANNEL = 'svc_jobs';
/** Gates to pass, runs to admit, holds to act on: every node's run-control worker runs a pass. */
export const RUN_CONTROL_CHANNEL = 'svc_run_control';
/** A message for an agent that may be connected to another node (`job.cancel`). */
export const AGENT_COMMANDS_CHANNEL = 'svc_agent_cmd';

/** Wake every dispatcher; delivered only if the surrounding transaction commits. */
export async function notifyJobsQueued(tx: CommonQueryMethods): Promise<void> {
  await notify(tx, JOBS_CHANNEL, '');
}
