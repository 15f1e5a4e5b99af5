// The runner paused before a held step (docs/run-control.md "Step holds"): ask the orchestrator
// to open the step's hold, then wait for its decision. The decision is pushed
// (`approval.step.decision`); the agent also asks again every RECHECK_MS, so a push lost to a
// disconnect, or sent while the agent's socket was on another node, is found by the next ask.
// The orchestrator's answer is the same hold every time, so asking again never opens a second one.
import { randomUUID } from 'node:crypto';
import { SvcError } from '../../core/errors.ts';
import { receivedCode } from '../../core/error-codes.ts';
import type { StepHoldStatus } from '../../schemas/wire/agent.ts';
import { cancelledFailure } from './failure.ts';

/** How often a waiting step asks again when nothing was pushed. */
export const RECHECK_MS = 20_000;

export interface StepDecision {
  status: StepHoldStatus;
  reason: string;
}

export type FinalStepDecision = { status: Exclude<StepHoldStatus, 'pending'>; reason: string };

export interface StepApprovalContext {
  jobId: string;
  request: (message: { type: 'approval.step.request'; jobId: string; requestId: string; index: number; name: string }) => Promise<unknown>;
  signal: AbortSignal;
  /** A pushed decision for the step, or null after `ms` (or an abort). */
  awaitStepDecision?: (index: number, ms: number) => Promise<StepDecision | null>;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Asks until the hold is decided; an abort (cancel) rejects with the cancel failure. */
export async function awaitStepApproval(index: number, name: string, ctx: StepApprovalContext): Promise<FinalStepDecision> {
  for (;;) {
    if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : cancelledFailure('cancelled');
    let answer: { status?: StepHoldStatus; reason?: string; error?: { code: string; message: string } };
    try {
      answer = (await ctx.request({ type: 'approval.step.request', jobId: ctx.jobId, requestId: randomUUID(), index, name })) as typeof answer;
    } catch (error) {
      // The orchestrator is away (a reconnect, a restart): the hold is kept there; ask again.
      if (error instanceof SvcError && (error.code === 'SVC_ERR_AGENT_REQUEST_TIMEOUT' || error.code === 'SVC_ERR_INTERNAL')) {
        await sleep(Math.min(RECHECK_MS, 5_000), ctx.signal);
        continue;
      }
      throw error;
    }
    if (answer.error !== undefined) throw new SvcError(receivedCode(answer.error.code), answer.error.message);
    const status = answer.status ?? 'pending';
    if (status !== 'pending') return { status, reason: answer.reason ?? `Approval ${status}` };
    const pushed = ctx.awaitStepDecision === undefined ? (await sleep(RECHECK_MS, ctx.signal), null) : await ctx.awaitStepDecision(index, RECHECK_MS);
    if (pushed !== null && pushed.status !== 'pending') return { status: pushed.status, reason: pushed.reason };
  }
}
