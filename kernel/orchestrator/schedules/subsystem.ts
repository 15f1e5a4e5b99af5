// The scheduler: on the cluster leader only, a fixed 30 s tick fires every due schedule
// (fire.ts). Tests may shorten the tick with SVC_TEST_CRON_TICK_MS (test-only, logged loudly);
// production always runs at the spec's 30 s.
import { messageOf } from '../../../core/errors.ts';
import type { Subsystem } from '../context.ts';
import { clusterServiceRef } from '../service-refs.ts';
import { fireDueSchedules } from './fire.ts';

/** The spec's cron evaluation tick. */
export const CRON_TICK_MS = 30_000;

export function cronTickMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env['SVC_TEST_CRON_TICK_MS'];
  if (raw === undefined || raw === '') return CRON_TICK_MS;
  const ms = Number(raw);
  return Number.isInteger(ms) && ms >= 50 && ms <= CRON_TICK_MS ? ms : CRON_TICK_MS;
}

export const schedulesSubsystem: Subsystem = {
  id: 'schedules',
  needs: [clusterServiceRef],
  async start(ctx, deps) {
    const logger = ctx.logger.child({ subsystem: 'schedules' });
    const cluster = deps.get(clusterServiceRef);
    const tickMs = cronTickMs();
    if (tickMs !== CRON_TICK_MS) logger.warn({ tickMs }, 'SVC_TEST_CRON_TICK_MS is set: the cron tick is shortened for tests; never set it in production');
    let running: Promise<void> | null = null;
    const tick = (): void => {
      if (running !== null || !cluster.isLeader()) return;
      running = fireDueSchedules(ctx.db)
        .then((firings) => {
          for (const f of firings) logger.info({ scheduleId: f.scheduleId, eventId: f.eventId, scheduledAt: f.scheduledAt, missed: f.missed }, 'schedule fired');
        })
        .catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'schedule tick failed'))
        .finally(() => {
          running = null;
        });
    };
    const timer = setInterval(tick, tickMs);
    timer.unref();
    // A node that becomes leader evaluates at once: a schedule missed while no node led fires now
    // (once), not a whole tick later.
    const unsubscribe = cluster.onLeaderChange((leader) => {
      if (leader) tick();
    });
    if (cluster.isLeader()) tick();
    deps.onStop(async () => {
      unsubscribe();
      clearInterval(timer);
      await running;
    });
  },
};
