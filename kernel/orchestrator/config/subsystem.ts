// The config subsystem (docs/config.md): the `/admin/config…` routes and the reload triggers —
// SIGHUP, `POST /admin/config/reload` (and `svc-admin config reload`), and the cluster: every
// version written on any node, and every reload an operator starts on one node, is announced on
// CONFIG_VERSION_CHANNEL and every other node reloads too (source `cluster`).
import { randomUUID } from 'node:crypto';
import { createListener, notify } from '../../services/db/index.ts';
import type { Subsystem } from '../context.ts';
import { adminAuthRef } from '../service-refs.ts';
import { ConfigReloader } from './reload.ts';
import { configRoutes } from './routes.ts';
import { CONFIG_VERSION_CHANNEL } from './versions.ts';

export const configSubsystem: Subsystem = {
  id: 'config',
  needs: [adminAuthRef],
  async start(ctx, deps) {
    const logger = ctx.logger.child({ subsystem: 'config' });
    const holder = ctx.configHolder;
    // Marks this node's own announcements (node ids may repeat when unset on one host).
    const self = randomUUID();
    ctx.metrics.configVersion.set(holder.snapshot.version ?? 0);
    const reloader = new ConfigReloader({
      holder,
      pool: ctx.db,
      keys: ctx.masterKeys.all,
      metrics: ctx.metrics,
      logger,
      announce: (source) => notify(ctx.db, CONFIG_VERSION_CHANNEL, { reload: source, node: ctx.nodeId, from: self }),
    });
    deps.onStop(() => reloader.stop());

    await ctx.http.register(configRoutes({ pool: ctx.db, masterKeys: ctx.masterKeys, holder, reloader, auth: deps.get(adminAuthRef) }));

    const onSighup = (): void => {
      logger.info('SIGHUP: reloading the config');
      void reloader.trigger('sighup');
    };
    process.on('SIGHUP', onSighup);
    deps.onStop(() => {
      process.off('SIGHUP', onSighup);
    });

    const listener = await createListener({ url: ctx.databaseUrl, logger });
    deps.onStop(() => listener.close());
    await listener.listen(CONFIG_VERSION_CHANNEL, (payload) => {
      // `{version}`: a version was written (this node too reloads); `{reload, from}`: another
      // node reloaded on an operator's request. Our own announcement is not news.
      let from: unknown;
      try {
        from = (JSON.parse(payload) as { from?: unknown }).from;
      } catch {
        from = undefined;
      }
      if (from === self) return;
      logger.info({ payload }, 'the cluster config changed: reloading');
      void reloader.trigger('cluster');
    });
    // Missed notifications while disconnected: a version may have been written meanwhile.
    listener.onGap(() => void reloader.trigger('cluster'));
  },
};
