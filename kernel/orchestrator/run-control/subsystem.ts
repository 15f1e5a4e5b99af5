// The run-control subsystem: starts this node's worker (holds, concurrency admission, job gates)
// and listens for what wakes it. Approval decisions arrive through the ingest pipeline (comment
// commands), the relay (dashboard and `svc approve`) and svc-admin, all via approvals.decideRun.
// It also answers the agents' step-hold requests (step-holds.ts).
import { isSvcError } from '../../../core/errors.ts';
import { createListener, FEED_SETTLE_MS, settledWake } from '../../services/db/index.ts';
import type { Subsystem } from '../context.ts';
import { RUN_CONTROL_CHANNEL } from '../dispatch/notify.ts';
import { dispatchServiceRef } from '../service-refs.ts';
import { answerStepHold } from './step-holds.ts';
import { RunControlWorker } from './worker.ts';

/** The status feed's channel (migration 0600): a run or job that changes may free a slot. */
const STATUS_FEED_CHANNEL = 'svc_run_status';

export interface RunControlTuning {
  /** Periodic pass; default 1000 ms (wait timers and hold expiry are exact to about this). */
  tickMs?: number;
}

export function createRunControlSubsystem(tuning: RunControlTuning = {}): Subsystem {
  return {
    id: 'run-control',
    // Dispatch carries the agents' step-hold requests (approval.step.request).
    needs: [dispatchServiceRef],
    async start(ctx, deps) {
      const logger = ctx.logger.child({ subsystem: 'run-control' });
      deps.get(dispatchServiceRef).handle('approval.step.request', (agent, message) =>
        answerStepHold(ctx.db, agent.agentId, message).catch((error: unknown) => {
          if (!isSvcError(error)) throw error;
          return { type: 'approval.step.response' as const, requestId: message.requestId, error: { code: error.code, message: error.message } };
        }),
      );
      // Completed passes, counted: "nothing moved" is read after a number of passes (holds not
      // expired early, a run not released twice) rather than after a wait.
      const passes = ctx.metrics.counter({ name: 'svc_orch_run_control_passes_total', help: 'Run-control passes (hold expiry, concurrency admission, job gates) completed by this node' });
      const worker = new RunControlWorker({ pool: ctx.db, logger, tickMs: tuning.tickMs ?? 1_000, passes });
      const listener = await createListener({ url: ctx.databaseUrl, logger });
      await listener.listen(RUN_CONTROL_CHANNEL, () => worker.wake());
      // Almost no status change frees a slot: a burst of them shares one pass.
      const feedWake = settledWake(() => worker.wake(), FEED_SETTLE_MS);
      await listener.listen(STATUS_FEED_CHANNEL, () => feedWake.wake());
      listener.onGap(() => worker.wake());
      worker.start();
      deps.onStop(async () => {
        await listener.close();
        feedWake.cancel();
        await worker.stop();
      });
    },
  };
}

export const runControlSubsystem: Subsystem = createRunControlSubsystem();
