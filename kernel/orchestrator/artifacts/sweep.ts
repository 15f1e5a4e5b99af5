// Artifact retention: rows past expires_at go with their objects, and uploads never committed
// within an hour go with their temporary objects. Safe on several nodes at once, like the cache
// sweep: each batch claims rows with FOR UPDATE SKIP LOCKED and deletes them in one statement,
// and an object is deleted only after its row is gone and no other row of the run shares it.
import { Type } from 'typebox';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { deleteIfUnreferenced } from './store.ts';

export const STALE_ARTIFACT_UPLOAD_SECONDS = 3600;
export const ARTIFACT_SWEEP_BATCH = 100;
/** Batches per sweep call, so one tick stays bounded. */
export const ARTIFACT_SWEEP_MAX_BATCHES = 20;

export interface ArtifactSweepResult {
  expired: number;
  staleUploads: number;
  objectsDeleted: number;
}

const ObjectRow = Type.Object({ object_key: Type.String() });
const TempRow = Type.Object({ temp_key: Type.String() });

export async function sweepArtifacts(pool: DatabasePool, storage: StorageExtensionPoint, staleUploadSeconds = STALE_ARTIFACT_UPLOAD_SECONDS): Promise<ArtifactSweepResult> {
  const result: ArtifactSweepResult = { expired: 0, staleUploads: 0, objectsDeleted: 0 };
  for (let i = 0; i < ARTIFACT_SWEEP_MAX_BATCHES; i += 1) {
    const rows = await pool.any(sqlTyped(ObjectRow)`
      DELETE FROM run_artifacts WHERE id IN (
        SELECT id FROM run_artifacts WHERE expires_at <= clock_timestamp()
        ORDER BY expires_at LIMIT ${ARTIFACT_SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING object_key`);
    result.expired += rows.length;
    for (const key of new Set(rows.map((r) => r.object_key))) if (await deleteIfUnreferenced(pool, storage, key)) result.objectsDeleted += 1;
    if (rows.length < ARTIFACT_SWEEP_BATCH) break;
  }
  for (let i = 0; i < ARTIFACT_SWEEP_MAX_BATCHES; i += 1) {
    const rows = await pool.any(sqlTyped(TempRow)`
      DELETE FROM run_artifact_uploads WHERE id IN (
        SELECT id FROM run_artifact_uploads WHERE created_at < clock_timestamp() - make_interval(secs => ${staleUploadSeconds})
        ORDER BY created_at LIMIT ${ARTIFACT_SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING temp_key`);
    result.staleUploads += rows.length;
    for (const row of rows) await storage.delete(row.temp_key);
    if (rows.length < ARTIFACT_SWEEP_BATCH) break;
  }
  return result;
}
