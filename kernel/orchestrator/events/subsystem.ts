// The events subsystem (this part: storage only): answers `event.emit` from the agent running
// the job by storing the event and its NOTIFY in one transaction.
import type { Static } from 'typebox';
import type { EventEmit, EventEmitResponse } from '../../../schemas/wire/agent.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { isSvcError } from '../../../core/errors.ts';
import { activeJobOf } from '../caches/job-access.ts';
import type { OrchestratorContext, Subsystem } from '../context.ts';
import { dispatchServiceRef } from '../service-refs.ts';
import { emitInternalEvent } from './emit.ts';

/** `event.emit` → `event.emit.response { requestId, deliveryId }`; refusals carry `error`. */
export async function answerEventEmit(
  pool: DatabasePool,
  agent: { agentId: string },
  message: Static<typeof EventEmit>,
): Promise<Static<typeof EventEmitResponse>> {
  try {
    const stored = await pool.transaction(async (tx) => {
      // The share lock keeps the job from finishing between the check and the insert.
      const job = await activeJobOf(tx, agent.agentId, message.jobId, { lock: true, area: 'EVENT' });
      return emitInternalEvent(tx, {
        name: message.eventName,
        payload: message.payload,
        orgId: job.org_id,
        target: message.target ?? null,
        source: 'step',
        runId: job.run_id,
        jobId: job.job_id,
      });
    });
    return { type: 'event.emit.response', requestId: message.requestId, deliveryId: stored.id };
  } catch (error) {
    if (!isSvcError(error)) throw error;
    return { type: 'event.emit.response', requestId: message.requestId, error: { code: error.code, message: error.message } };
  }
}

export const eventsSubsystem: Subsystem = {
  id: 'events',
  needs: [dispatchServiceRef],
  async start(ctx: OrchestratorContext, deps): Promise<void> {
    const dispatch = deps.get(dispatchServiceRef);
    const logger = ctx.logger.child({ subsystem: 'events' });
    dispatch.handle('event.emit', async (agent, message) => {
      const answer = await answerEventEmit(ctx.db, agent, message);
      if (answer.error) logger.info({ agentId: agent.agentId, jobId: message.jobId, code: answer.error.code }, 'event.emit refused');
      return answer;
    });
  },
};
