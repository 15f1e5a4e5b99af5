// A step hold's decision reaching its job and agent. Its own module: approvals.ts records the
// decision and calls this, and step-holds.ts (which opens holds through approvals.ts) shares the
// wording, so neither imports the other in a cycle.
import type { CommonQueryMethods } from 'slonik';
import type { StepHoldStatus } from '../../../schemas/wire/agent.ts';
import { sql } from '../../services/db/index.ts';
import { notifyAgent } from '../dispatch/notify.ts';

/** Prefix of a job's reason while one of its steps awaits a decision (cleared on release). */
export const STEP_HOLD_REASON_PREFIX = 'Awaiting approval (step ';
/** Largest reason pushed through NOTIFY (its payload must stay under 8000 bytes). */
const MAX_PUSHED_REASON = 3_000;

/** What the agent shows for a final decision (the failed step's reason unless approved). */
export function decisionReason(status: Exclude<StepHoldStatus, 'pending'>, outcome: string | null): string {
  return `Approval ${outcome ?? status}`;
}

/**
 * A step hold was decided inside `tx`: the job's waiting reason is cleared and its agent is told
 * (delivered at commit; an agent that is away learns it when it asks again).
 */
export async function stepHoldDecided(tx: CommonQueryMethods, hold: { job_id: string | null; step_index: number | null }, status: Exclude<StepHoldStatus, 'pending'>, outcome: string): Promise<void> {
  if (hold.job_id === null || hold.step_index === null) return;
  const job = (await tx.maybeOne(sql.unsafe`
    UPDATE jobs SET reason = NULL, updated_at = now()
    WHERE id = ${hold.job_id} AND status IN ('dispatched', 'running', 'recovering') AND reason LIKE ${`${STEP_HOLD_REASON_PREFIX}%`}
    RETURNING agent_id, status`)) as { agent_id: string | null; status: string } | null;
  const agent = job?.agent_id ?? ((await tx.maybeOneFirst(sql.unsafe`SELECT agent_id FROM jobs WHERE id = ${hold.job_id} AND status IN ('dispatched', 'running')`)) as string | null);
  if (agent === null || agent === undefined) return;
  await notifyAgent(tx, agent, {
    type: 'approval.step.decision',
    jobId: hold.job_id,
    index: hold.step_index,
    status,
    reason: decisionReason(status, outcome).slice(0, MAX_PUSHED_REASON),
  });
}
