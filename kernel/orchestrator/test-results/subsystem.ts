// The test-results subsystem: answers the agent's `tests.report.request` through dispatch
// (record.ts). The relay's `tests.request` is answered by the runs subsystem's relay handler,
// which calls relayed.ts.
import { isSvcError } from '../../../core/errors.ts';
import type { Subsystem } from '../context.ts';
import { dispatchServiceRef } from '../service-refs.ts';
import { recordTestReport } from './record.ts';

export const testResultsSubsystem: Subsystem = {
  id: 'test-results',
  needs: [dispatchServiceRef],
  async start(ctx, deps) {
    const dispatch = deps.get(dispatchServiceRef);
    dispatch.handle('tests.report.request', async (agent, message) => {
      const base = { type: 'tests.report.response' as const, requestId: message.requestId };
      return recordTestReport(ctx.db, agent.agentId, message).then(
        (answer) => ({ ...base, ...answer }),
        (error: unknown) => {
          if (!isSvcError(error)) throw error;
          return { ...base, error: { code: error.code, message: error.message } };
        },
      );
    });
  },
};
