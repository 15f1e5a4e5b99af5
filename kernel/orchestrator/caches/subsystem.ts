// The caches subsystem: answers the agent's cache messages through dispatch and runs the
// sweepers (stale temporary uploads, TTL expiry). Needs dispatch.
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { isSvcError, messageOf } from '../../../core/errors.ts';
import type { OrchestratorContext, Subsystem } from '../context.ts';
import { dispatchServiceRef } from '../service-refs.ts';
import { answerUploadRequest, completeUpload, type CacheDeps } from './build-cache.ts';
import { checkStorageAtStart } from './storage-check.ts';
import { sweepCaches } from './sweep.ts';
import { answerRestore, answerSaveRequest, completeSave, type UserCacheOptions } from './user-cache.ts';

export interface CachesTuning {
  /** Sweeper interval; default 60 s. 0 disables the timer (tests call sweepCaches). */
  sweepMs?: number;
}

/** The storage plugin serving `storage.type`; undefined when none is configured. */
export function cacheStorageOf(ctx: OrchestratorContext): StorageExtensionPoint | undefined {
  try {
    return ctx.host.select('storage', ctx.config.storage.type);
  } catch {
    return undefined;
  }
}

export function cacheDepsOf(ctx: OrchestratorContext): CacheDeps {
  return { pool: ctx.db, storage: cacheStorageOf(ctx), metrics: ctx.metrics, logger: ctx.logger.child({ subsystem: 'caches' }) };
}

export function userCacheOptionsOf(ctx: OrchestratorContext): UserCacheOptions {
  return { ...cacheDepsOf(ctx), ttlDays: ctx.config.cache.ttlDays, quotaBytes: ctx.config.cache.userQuotaBytes };
}

const errorBody = (error: unknown) => {
  if (!isSvcError(error)) throw error;
  return { code: error.code, message: error.message };
};

export function createCachesSubsystem(tuning: CachesTuning = {}): Subsystem {
  return {
    id: 'caches',
    needs: [dispatchServiceRef],
    async start(ctx, deps) {
      const dispatch = deps.get(dispatchServiceRef);
      const options = userCacheOptionsOf(ctx);
      const logger = options.logger;
      if (options.storage === undefined) logger.warn('no cache storage configured: no build caches, user cache saves are skipped');
      else await checkStorageAtStart(options.storage, ctx.config.storage.type, ctx.nodeId);

      dispatch.handle('cache.upload.request', async (agent, message) =>
        answerUploadRequest(options, agent, message).catch((error: unknown) => ({ type: 'cache.upload.response' as const, requestId: message.requestId, error: errorBody(error) })),
      );
      // `complete` messages have no response type: a refusal goes back as protocol.error.
      dispatch.handle('cache.upload.complete', async (agent, message) => {
        await completeUpload(options, agent, message);
        return undefined;
      });
      dispatch.handle('cache.user.restore.request', async (agent, message) =>
        answerRestore(options, agent, message).catch((error: unknown) => ({
          type: 'cache.user.restore.response' as const,
          requestId: message.requestId,
          hit: false,
          error: errorBody(error),
        })),
      );
      dispatch.handle('cache.user.save.request', async (agent, message) =>
        answerSaveRequest(options, agent, message).catch((error: unknown) => ({
          type: 'cache.user.save.response' as const,
          requestId: message.requestId,
          skip: false,
          error: errorBody(error),
        })),
      );
      dispatch.handle('cache.user.save.complete', async (agent, message) => {
        await completeSave(options, agent, message);
        return undefined;
      });

      const sweepMs = tuning.sweepMs ?? 60_000;
      if (sweepMs > 0 && options.storage !== undefined) {
        let busy = false;
        const timer = setInterval(() => {
          if (busy) return;
          busy = true;
          sweepCaches(options, options.ttlDays)
            .then((result) => {
              if (result.staleUploads + result.expiredUserEntries + result.expiredBuildEntries > 0) logger.info(result, 'cache sweep');
            })
            .catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'cache sweep failed'))
            .finally(() => {
              busy = false;
            });
        }, sweepMs);
        timer.unref();
        deps.onStop(() => clearInterval(timer));
      }
    },
  };
}

export const cachesSubsystem: Subsystem = createCachesSubsystem();
