// Reconciliation after downtime (docs/ingest.md "Reconciliation"): on the cluster leader (every
// node when there is no cluster), a pass over every source whose provider keeps a log of the
// webhooks it sent, soon after start and every `reconcile.intervalMs`; a node that becomes
// leader runs one at once. In linked mode a pass waits for the relay link: asking the forge to
// send again while nothing can receive would only fail again.
import { messageOf } from '../../../core/errors.ts';
import type { Subsystem } from '../context.ts';
import { ProviderResolver } from '../ingest/steps/resolve-provider.ts';
import { relayLinkStateOf } from '../relay-link/link-state.ts';
import { clusterServiceRef } from '../service-refs.ts';
import { allSourceRows, openSource } from '../sources/store.ts';
import { canReconcile, reconcileSource } from './reconcile.ts';

/** The first pass after start: soon, the downtime has just ended; not at once, the link is still dialling. */
const FIRST_PASS_MS = 2000;

export const reconcileSubsystem: Subsystem = {
  id: 'reconcile',
  provides: [],
  needs: [],
  optionalNeeds: [clusterServiceRef],
  async start(ctx, deps) {
    const logger = ctx.logger.child({ subsystem: 'reconcile' });
    const providers = new ProviderResolver(ctx.host);
    const { intervalMs, lookbackMs } = ctx.config.reconcile;
    const cluster = deps.getOptional(clusterServiceRef);
    let running: Promise<void> | null = null;

    async function pass(): Promise<void> {
      const since = new Date(Date.now() - lookbackMs);
      for (const row of await allSourceRows(ctx.db)) {
        const provider = providers.resolve(row.routing_key);
        if (!canReconcile(provider)) continue;
        let opened;
        try {
          opened = openSource(row, ctx.masterKeys.all);
        } catch (error) {
          logger.warn({ source: row.id, err: messageOf(error) }, 'source cannot be opened; not reconciled');
          continue;
        }
        const source = { id: opened.id, orgId: opened.orgId, routingKey: opened.routingKey, settings: opened.settings, credentials: opened.credentials };
        const counts = await reconcileSource(ctx.db, provider, source, since);
        const level = counts.errors.length > 0 ? 'warn' : counts.redelivered > 0 ? 'info' : 'debug';
        logger[level]({ source: row.id, ...counts }, counts.redelivered > 0 ? 'deliveries the forge could not hand over were sent again' : 'source reconciled');
      }
    }

    function tick(): void {
      if (running !== null || (cluster !== undefined && !cluster.isLeader())) return;
      const link = relayLinkStateOf(ctx);
      if (link.configured && !link.connected) return;
      running = pass()
        .catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'reconciliation pass failed; tried again at the next interval'))
        .finally(() => {
          running = null;
        });
    }

    const timer = setInterval(tick, intervalMs);
    timer.unref();
    const first = setTimeout(tick, Math.min(intervalMs, FIRST_PASS_MS));
    first.unref();
    const unsubscribe = cluster?.onLeaderChange((leader) => {
      if (leader) tick();
    });
    deps.onStop(async () => {
      unsubscribe?.();
      clearInterval(timer);
      clearTimeout(first);
      await running;
    });
    return [];
  },
};
