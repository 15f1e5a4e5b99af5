// The artifacts subsystem: answers the agent's artifact messages through dispatch and runs the
// retention sweep on every node (batches claimed with SKIP LOCKED, as the cache sweep does).
// Needs dispatch. The relay's `svc runs artifacts|download` requests are answered by the runs
// subsystem's relay handlers (runs/api/relay-handlers.ts), which call ./api.ts.
import { isSvcError, messageOf } from '../../../core/errors.ts';
import type { OrchestratorContext, Subsystem } from '../context.ts';
import { dispatchServiceRef } from '../service-refs.ts';
import { cacheStorageOf } from '../caches/subsystem.ts';
import { answerDownload, commitUpload, requestUpload, type ArtifactOptions } from './store.ts';
import { sweepArtifacts } from './sweep.ts';

export interface ArtifactsTuning {
  /** Sweep interval; default 60 s. 0 disables the timer (tests call sweepArtifacts). */
  sweepMs?: number;
}

export function artifactOptionsOf(ctx: OrchestratorContext): ArtifactOptions {
  const { retentionDays, maxSizeBytes, maxPerRun } = ctx.config.artifacts;
  return { pool: ctx.db, storage: cacheStorageOf(ctx), logger: ctx.logger.child({ subsystem: 'artifacts' }), retentionDays, maxSizeBytes, maxPerRun };
}

const errorBody = (error: unknown) => {
  if (!isSvcError(error)) throw error;
  return { code: error.code, message: error.message };
};

export function createArtifactsSubsystem(tuning: ArtifactsTuning = {}): Subsystem {
  return {
    id: 'artifacts',
    needs: [dispatchServiceRef],
    async start(ctx, deps) {
      const dispatch = deps.get(dispatchServiceRef);
      const options = artifactOptionsOf(ctx);
      const logger = options.logger;
      dispatch.handle('artifact.upload.request', async (agent, message) => {
        const base = { type: 'artifact.upload.response' as const, requestId: message.requestId };
        return requestUpload(options, agent, message).then(
          ({ uploadUrl }) => ({ ...base, uploadUrl }),
          (error: unknown) => ({ ...base, error: errorBody(error) }),
        );
      });
      dispatch.handle('artifact.commit.request', async (agent, message) => {
        const base = { type: 'artifact.commit.response' as const, requestId: message.requestId };
        return commitUpload(options, agent, message).then(
          (artifact) => ({ ...base, artifact }),
          (error: unknown) => ({ ...base, error: errorBody(error) }),
        );
      });
      dispatch.handle('artifact.download.request', async (agent, message) => {
        const base = { type: 'artifact.download.response' as const, requestId: message.requestId };
        return answerDownload(options, agent, message).then(
          ({ artifact, downloadUrl }) => ({ ...base, artifact, downloadUrl }),
          (error: unknown) => ({ ...base, error: errorBody(error) }),
        );
      });

      const storage = options.storage;
      const sweepMs = tuning.sweepMs ?? 60_000;
      if (sweepMs > 0 && storage !== undefined) {
        let busy = false;
        const timer = setInterval(() => {
          if (busy) return;
          busy = true;
          sweepArtifacts(options.pool, storage)
            .then((result) => {
              if (result.expired + result.staleUploads > 0) logger.info(result, 'artifact sweep');
            })
            .catch((error: unknown) => logger.warn({ err: messageOf(error) }, 'artifact sweep failed'))
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

export const artifactsSubsystem: Subsystem = createArtifactsSubsystem();
