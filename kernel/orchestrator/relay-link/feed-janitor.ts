// Keeps the run status feed (migration 0600) bounded on the relay side. The feed's rows are
// deleted once BOTH consumers handled them (`relay_sent_at` here, `forge_done_at` by the forge
// status reporter) and an hour has passed; deleting needs both, so each consumer must mark every
// row eventually, whether or not it had anything to do with it:
// - linked (`platform.url` set): the status forwarder marks rows it sent; rows of orgs its link
//   does not serve are marked after a grace period (status-forwarder.ts calls `pruneFeed`);
// - unlinked (no `platform.url`): there is no relay to send to and the forwarder does not run;
//   this janitor marks every pending row as handled after the same grace period (so a node of the
//   same cluster that is linked sends first) and prunes like the forwarder does.
// The grace period bounds the relay column's backlog to a few minutes of changes; the forge
// reporter (or a retention job) is responsible for `forge_done_at` the same way.
import type { Logger } from 'pino';
import type { DatabasePool } from '../../services/db/index.ts';
import { pruneHandled, settleUnservable } from './status-feed.ts';

export interface FeedRetention {
  /** Pending rows no link of this node can send are marked handled after this long (default 10 min). */
  graceMs: number;
  /** Rows both consumers handled are deleted this long after (default 1 h). */
  pruneAfterMs: number;
  /** Rows per statement (default 5000), statements per call (default 10). */
  batch: number;
  maxBatches: number;
  /** How often the janitor (or the forwarder) prunes (default 1 min). */
  everyMs: number;
}

export const FEED_RETENTION_DEFAULTS: FeedRetention = {
  graceMs: 10 * 60_000,
  pruneAfterMs: 60 * 60_000,
  batch: 5_000,
  maxBatches: 10,
  everyMs: 60_000,
};

/** linked: the link serves `orgId`; unlinked: no relay link at all; wait: a link whose org is not known yet. */
export type FeedScope = { mode: 'linked'; orgId: string } | { mode: 'unlinked' } | { mode: 'wait' };

export async function pruneFeed(pool: DatabasePool, log: Logger, scope: FeedScope, retention: Partial<FeedRetention> = {}): Promise<{ settled: number; deleted: number }> {
  const r = { ...FEED_RETENTION_DEFAULTS, ...retention };
  let settled = 0;
  let deleted = 0;
  if (scope.mode !== 'wait') {
    const org = scope.mode === 'linked' ? scope.orgId : undefined;
    for (let i = 0; i < r.maxBatches; i++) {
      const n = await settleUnservable(pool, org, r.graceMs, r.batch);
      settled += n;
      if (n < r.batch) break;
    }
  }
  for (let i = 0; i < r.maxBatches; i++) {
    const n = await pruneHandled(pool, r.pruneAfterMs, r.batch);
    deleted += n;
    if (n < r.batch) break;
  }
  if (settled > 0 || deleted > 0) {
    log.debug({ settled, deleted, scope: scope.mode }, settled > 0 ? 'status feed: rows no relay link serves marked handled; old rows pruned' : 'status feed: old rows pruned');
  }
  return { settled, deleted };
}

/** The unlinked node's janitor: prunes every `everyMs` until stopped. */
export function startFeedJanitor(options: { pool: DatabasePool; logger: Logger; retention?: Partial<FeedRetention> }): { stop(): Promise<void> } {
  const log = options.logger.child({ component: 'status-feed-janitor' });
  const everyMs = options.retention?.everyMs ?? FEED_RETENTION_DEFAULTS.everyMs;
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (running !== undefined) return;
    running = pruneFeed(options.pool, log, { mode: 'unlinked' }, options.retention)
      .catch((error: unknown) => log.warn({ err: error }, 'status feed pruning failed; retried at the next tick'))
      .finally(() => (running = undefined));
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
