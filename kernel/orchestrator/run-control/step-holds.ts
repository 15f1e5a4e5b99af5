// Step-level approval holds (lock `jobs[].steps[].approval`; docs/run-control.md "Step holds").
// A job whose step is held runs on its agent up to that step; the runner then pauses and the
// agent asks `approval.step.request`. The hold is an approval_holds row (level `step`) decided by
// the same deciders as the other levels. The job stays `running` the whole time (it holds its
// agent, so no new status or transition is needed); its `reason` says what it waits for. A
// decision is pushed to the agent (`approval.step.decision`, through NOTIFY to the node holding
// its socket) and is also the answer to any later request, so a lost push, a reconnect or a
// redispatch finds the same decision.
import type { CommonQueryMethods } from 'slonik';
import type { Static } from 'typebox';
import type { LockApproval, LockJob, LockStep, LockWorkflow } from '../../../schemas/lock.ts';
import type { ApprovalStepRequest, ApprovalStepResponse, StepHoldStatus } from '../../../schemas/wire/agent.ts';
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { InputError, NotAllowedError, NotFoundError } from '../../../core/errors.ts';
import { ensureHold, type HoldRow } from './approvals.ts';
import { STEP_HOLD_REASON_PREFIX, decisionReason } from './step-hold-decision.ts';
import { approvalApplies } from './gates-plan.ts';
import { describeClauses } from './principals.ts';

/** The sentence a job's reason carries while its step waits. */
function waitingReason(step: string, hold: Pick<HoldRow, 'reason' | 'clauses'>): string {
  return `${STEP_HOLD_REASON_PREFIX}${step}): ${hold.reason ?? `needs ${describeClauses(hold.clauses)}`}`;
}

interface HeldJob {
  id: string;
  run_id: string;
  org_id: string;
  name: string;
  status: string;
  agent_id: string | null;
  cancel_requested_at: unknown;
  definition: LockJob | null;
  lock_entry: LockWorkflow;
  trust_tier: string;
  is_fork: string;
}

function heldStep(job: HeldJob, index: number, name: string): { step: LockStep; approval: LockApproval } {
  const entry = job.definition ?? job.lock_entry.jobs.find((j) => j.name === job.name);
  const step = entry?.steps[index];
  if (step === undefined || step.name !== name) {
    throw new InputError('SVC_ERR_APPROVAL_STEP_UNKNOWN', `job ${job.name} has no step ${JSON.stringify(name)} at index ${index} in its lock entry; the agent and the lock disagree (re-run the workflow)`);
  }
  if (step.approval === undefined || !approvalApplies(step.approval, { trustTier: job.trust_tier, isFork: job.is_fork })) {
    throw new InputError('SVC_ERR_APPROVAL_STEP_NOT_HELD', `step ${name} of job ${job.name} has no approval that applies to this run; nothing to wait for`);
  }
  return { step, approval: step.approval };
}

type Answer = Static<typeof ApprovalStepResponse>;

/**
 * Answers `approval.step.request` from `agentId`: opens the step's hold the first time (pending,
 * expiring after `timeoutSeconds`) and says where it stands. Only the agent running the job may
 * ask; a job already being cancelled gets `cancelled` and its pending hold ends with it.
 */
export async function answerStepHold(pool: DatabasePool, agentId: string, message: Static<typeof ApprovalStepRequest>): Promise<Answer> {
  return pool.transaction(async (tx) => {
    const runId = (await tx.maybeOneFirst(sql.unsafe`SELECT run_id::text FROM jobs WHERE id::text = ${message.jobId}`)) as string | null;
    if (runId === null) throw new NotFoundError('SVC_ERR_APPROVAL_STEP_JOB_NOT_FOUND', `no job has id ${message.jobId}`);
    // Run first, then the hold: the order decisions take, so they never deadlock.
    await tx.query(sql.unsafe`SELECT id FROM runs WHERE id = ${runId} FOR NO KEY UPDATE`);
    const job = (await tx.one(sql.unsafe`
      SELECT j.id::text AS id, j.run_id::text AS run_id, j.org_id, j.name, j.status, j.agent_id, j.cancel_requested_at, j.definition,
             r.lock_entry, r.trust_tier, r.is_fork
      FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = ${message.jobId} FOR UPDATE OF j`)) as unknown as HeldJob;
    if (job.agent_id !== agentId || !['dispatched', 'running'].includes(job.status)) {
      throw new NotAllowedError('SVC_ERR_APPROVAL_STEP_NOT_OWNER', `agent ${agentId} is not running job ${job.id} (it is ${job.status}); only the job's agent opens its step holds`);
    }
    const { approval } = heldStep(job, message.index, message.name);
    const hold = await ensureHold(tx, {
      orgId: job.org_id,
      runId: job.run_id,
      jobId: job.id,
      level: 'step',
      stepIndex: message.index,
      stepName: message.name,
      clauses: approval.clauses,
      ...(approval.reason !== undefined ? { reason: approval.reason } : {}),
      ...(approval.timeoutSeconds !== undefined ? { timeoutSeconds: approval.timeoutSeconds } : {}),
    });
    if (hold.status === 'pending' && job.cancel_requested_at !== null) {
      await tx.query(sql.unsafe`
        UPDATE approval_holds SET status = 'cancelled', outcome = 'cancelled: the job is being cancelled', decided_by = 'svc:cancel', decided_at = now()
        WHERE id = ${hold.id} AND status = 'pending'`);
      return { type: 'approval.step.response', requestId: message.requestId, status: 'cancelled', reason: 'Approval cancelled: the job is being cancelled' };
    }
    if (hold.status === 'pending') {
      const reason = waitingReason(message.name, hold);
      await tx.query(sql.unsafe`UPDATE jobs SET reason = ${reason}, updated_at = now() WHERE id = ${job.id} AND reason IS DISTINCT FROM ${reason}`);
      return { type: 'approval.step.response', requestId: message.requestId, status: 'pending', reason };
    }
    return { type: 'approval.step.response', requestId: message.requestId, status: hold.status, reason: decisionReason(hold.status, hold.outcome) };
  });
}

export { STEP_HOLD_REASON_PREFIX, decisionReason, stepHoldDecided } from './step-hold-decision.ts';
