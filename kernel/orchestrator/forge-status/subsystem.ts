// The forge status subsystem (docs/forge-status.md): reports every run status change back to
// where the run came from, a check run through the source's provider (`reportRunStatus` on the
// provider extension point) and the source's run-status webhook, from a durable delivery queue
// with retries. Serves the operator routes for its deliveries.
import { createListener, REPORT_SETTLE_MS, settledWake } from '../../services/db/index.ts';
import type { OrchestratorContext, Subsystem } from '../context.ts';
import { adminAuthRef } from '../service-refs.ts';
import { FORGE_STATUS_CHANNEL, RUN_STATUS_CHANNEL } from './feed.ts';
import { defaultRunUrlTemplate } from './report.ts';
import { forgeStatusRoutes } from './routes.ts';
import { ForgeStatusWorker } from './worker.ts';

export interface ForgeStatusTuning {
  /** Deliveries sent at once per node (default 8). */
  concurrency?: number;
}

/** Whether signed-in providers of `kind` report run status. */
function reportsFor(ctx: OrchestratorContext): (kind: string) => boolean {
  return (kind) => ctx.host.has('provider', kind) && typeof ctx.host.get('provider', kind).reportRunStatus === 'function';
}

export function createForgeStatusSubsystem(tuning: ForgeStatusTuning = {}): Subsystem {
  return {
    id: 'forge-status',
    needs: [adminAuthRef],
    async start(ctx: OrchestratorContext, deps): Promise<void> {
      const logger = ctx.logger.child({ subsystem: 'forge-status' });
      const settings = ctx.config.forgeStatus;
      const runUrlTemplate = settings.runUrlTemplate ?? defaultRunUrlTemplate(ctx.config.platform.url, ctx.publicUrl());
      const worker = new ForgeStatusWorker({
        pool: ctx.db,
        logger,
        metrics: ctx.metrics,
        nodeId: ctx.nodeId,
        feed: { pool: ctx.db, reports: reportsFor(ctx) },
        send: {
          pool: ctx.db,
          host: ctx.host,
          keys: ctx.masterKeys.all,
          runUrlTemplate,
          maxAttempts: settings.maxAttempts,
          retryBaseMs: settings.retryBaseMs,
          retryMaxMs: settings.retryMaxMs,
          requestTimeoutMs: settings.requestTimeoutMs,
        },
        tickMs: settings.tickMs,
        // An attempt is one request: a lease a few time limits long outlives any live one.
        leaseMs: Math.max(30_000, settings.requestTimeoutMs * 3),
        ...(tuning.concurrency === undefined ? {} : { concurrency: tuning.concurrency }),
      });
      const listener = await createListener({ url: ctx.databaseUrl, logger });
      // Status changes come in bursts under webhook load: one pass reports a burst.
      const feedWake = settledWake(() => worker.wake(), REPORT_SETTLE_MS);
      await listener.listen(RUN_STATUS_CHANNEL, () => feedWake.wake());
      await listener.listen(FORGE_STATUS_CHANNEL, () => worker.wake());
      listener.onGap(() => worker.wake());
      worker.start();
      await ctx.http.register(forgeStatusRoutes({ pool: ctx.db, auth: deps.get(adminAuthRef) }));
      deps.onStop(async () => {
        await listener.close();
        feedWake.cancel();
        await worker.stop();
      });
      logger.debug({ runUrlTemplate }, 'forge status reporter started');
    },
  };
}

export const forgeStatusSubsystem: Subsystem = createForgeStatusSubsystem();
