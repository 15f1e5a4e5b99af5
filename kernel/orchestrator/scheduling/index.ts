// Scheduling across a run's jobs (docs/scheduling.md): the workflow filter before any job, the
// workflow hooks after every job, job outputs to dependents, the run timeout, dynamic jobs.
//
// Run creation (runs/create.ts) adds the pseudo-jobs from schedulingPlanOf; dispatch builds their
// jobConfig with schedulingJobConfig, applies their reports with applySchedulingReport and
// progresses runs with the pseudo-job rules (dispatch/progression.ts). This subsystem owns the
// run-deadline sweeper.
//
// Public API:
//   schedulingSubsystem / createSchedulingSubsystem({ sweepMs })  the deadline sweeper
//   sweepRunDeadlines(pool) → runIds                               one sweep (safe on several nodes)
//   schedulingPlanOf(workflow), generatorOf(job)                   what a lock entry adds to a run
//   FILTER_JOB_NAME, HOOKS_JOB_NAME, generatorJobName(entry)       pseudo-job names
//   outputsOf(pool, runId, names)                                  outputs as dependents see them
import type { Subsystem } from '../context.ts';
import { messageOf } from '../../../core/errors.ts';
import { sweepRunDeadlines } from './deadline.ts';

export { FILTER_JOB_NAME, HOOKS_JOB_NAME, generatorJobName, generatorEntryOf, isInternalJobName, matrixKey } from './names.ts';
export { schedulingPlanOf, generatorOf, type SchedulingPlan, type GeneratorSpec } from './plan.ts';
export { sweepRunDeadlines, runTimeoutReason, TIMEOUT_CANCELLED_BY } from './deadline.ts';
export { outputsOf } from './outputs.ts';
export { schedulingJobConfig, workflowOutcomeOf } from './config.ts';
export { applySchedulingReport, FILTER_FALSE_REASON } from './report.ts';
export { insertGenerated, checkGenerated, checkAxes, MAX_GENERATED_INSTANCES } from './generated.ts';

export interface SchedulingTuning {
  /** Deadline sweep interval; default 5000 ms. */
  sweepMs?: number;
}

export function createSchedulingSubsystem(tuning: SchedulingTuning = {}): Subsystem {
  const sweepMs = tuning.sweepMs ?? 5_000;
  return {
    id: 'scheduling',
    async start(ctx, deps) {
      const logger = ctx.logger.child({ subsystem: 'scheduling' });
      let busy = false;
      let stopped = false;
      const timer = setInterval(() => {
        if (busy || stopped) return;
        busy = true;
        sweepRunDeadlines(ctx.db)
          .then((runs) => {
            if (runs.length > 0) logger.info({ runs }, 'runs past their deadline cancelled');
          })
          .catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'run deadline sweep failed'))
          .finally(() => {
            busy = false;
          });
      }, sweepMs);
      timer.unref();
      deps.onStop(async () => {
        stopped = true;
        clearInterval(timer);
        // Let a sweep in progress finish before the pool closes.
        for (let i = 0; busy && i < 200; i += 1) await new Promise((r) => setTimeout(r, 25));
      });
    },
  };
}

export const schedulingSubsystem: Subsystem = createSchedulingSubsystem();
