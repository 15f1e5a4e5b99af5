// The scaling subsystem: scale-up for queued jobs no online agent can take, reaping of the agents
// it started (service.ts), and the scaler config (`scaler.configPath` / `scaler.configDir`,
// docs/scalers.md). Without a scaler config it only tells the dispatcher nothing is spawnable.
import { messageOf } from '../../../core/errors.ts';
import { createListener } from '../../services/db/index.ts';
import type { Subsystem } from '../context.ts';
import { JOBS_CHANNEL } from '../dispatch/notify.ts';
import { clusterServiceRef, dispatchServiceRef } from '../service-refs.ts';
import { ScalingService, type ScalingTuning } from './service.ts';
import { mandatoryLabelsGap } from './store.ts';
import type { RegistrationCheck } from '../dispatch/service.ts';
import { NotAllowedError } from '../../../core/errors.ts';

export { ScalingService, type ScalingTuning } from './service.ts';
export { planScaleUps } from './plan.ts';

/**
 * An agent a scaler started registers with the scale-up's whole gate (the scale-up event's
 * `mandatoryLabels`), or it is refused: it would never take the job it was started for, and the
 * dispatcher would count on labels it does not have.
 */
const mandatoryLabelsCheck: RegistrationCheck = async (tx, agent) => {
  const gap = await mandatoryLabelsGap(tx, agent.agentId, agent.labels);
  if (gap === null) return null;
  return new NotAllowedError(
    'SVC_ERR_DISPATCH_MANDATORY_LABELS_MISSING',
    `agent ${agent.agentId} was started by scaler ${gap.scaler} and must register with ${gap.gate.join(', ')}; it registered without ${gap.missing.join(', ')}. ` +
      'Check the scaler plugin passes mandatoryLabels as SVC_AGENT_LABELS, and the scaler entry\'s os, arch and sandboxes (docs/scalers.md)',
    { details: { scaler: gap.scaler, missing: gap.missing } },
  );
};

/** How often the subsystem looks for a swapped config snapshot (a reload happened). */
const RELOAD_CHECK_MS = 1_000;

export function createScalingSubsystem(tuning: ScalingTuning = {}): Subsystem {
  return {
    id: 'scaling',
    needs: [dispatchServiceRef],
    optionalNeeds: [clusterServiceRef],
    async start(ctx, deps) {
      const logger = ctx.logger.child({ subsystem: 'scaling' });
      const dispatch = deps.get(dispatchServiceRef);
      const cluster = deps.getOptional(clusterServiceRef);
      const paths = () => ctx.config.scaler;
      // A bad file stops the start with one line naming the file and the field.
      const config = ScalingService.load(paths(), ctx.host);
      const service = new ScalingService(
        { ...tuning, pool: ctx.db, host: ctx.host, logger, nodeId: ctx.nodeId, isLeader: () => cluster?.isLeader() ?? true, paths, metrics: ctx.metrics },
        config,
      );
      // The paths are held until a restart: without them nothing can ever be scaled, no passes run.
      if (config.files.length === 0) return;
      dispatch.dispatcher.setSpawnable((matchers) => service.spawnable(matchers), () => service.spawnableKey());
      dispatch.setRegistrationCheck(mandatoryLabelsCheck);
      await service.start();
      deps.onStop(() => service.stop());

      const listener = await createListener({ url: ctx.databaseUrl, logger });
      await listener.listen(JOBS_CHANNEL, () => service.wake());
      listener.onGap(() => service.wake());
      deps.onStop(() => listener.close());
      const unsubscribe = cluster?.onLeaderChange((leader) => (leader ? service.wake() : undefined));
      if (unsubscribe) deps.onStop(unsubscribe);
      // A reload (SIGHUP, POST /admin/config/reload, a cluster notice) swaps the snapshot.
      let snapshot = ctx.configHolder.snapshot;
      const timer = setInterval(() => {
        if (ctx.configHolder.snapshot === snapshot) return;
        snapshot = ctx.configHolder.snapshot;
        try {
          service.reload();
        } catch (error) {
          logger.error({ err: messageOf(error) }, 'scaler config reload failed');
        }
      }, RELOAD_CHECK_MS);
      timer.unref();
      deps.onStop(() => clearInterval(timer));
    },
  };
}

export const scalingSubsystem: Subsystem = createScalingSubsystem();
