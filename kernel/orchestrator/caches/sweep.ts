// Background cleanup, safe on several nodes at once: each batch claims its rows with
// `FOR UPDATE SKIP LOCKED` and deletes them in the same statement, and objects are deleted
// only after the row delete committed (a deleted object nobody points at is harmless; a row
// pointing at nothing is repaired on read).
import { Type } from 'typebox';
import { sql, sqlTyped } from '../../services/db/index.ts';
import type { CacheDeps } from './build-cache.ts';

/** A temporary upload not completed within this time is a crashed upload. */
export const STALE_UPLOAD_SECONDS = 3600;
export const SWEEP_BATCH = 100;
/** Batches per sweep call, so one tick stays bounded. */
export const SWEEP_MAX_BATCHES = 20;

export interface SweepResult {
  staleUploads: number;
  expiredUserEntries: number;
  expiredBuildEntries: number;
}

const TempRow = Type.Object({ temp_key: Type.String() });
const ObjectRow = Type.Object({ object_key: Type.String() });
const BuildRow = Type.Object({ pointer_key: Type.String(), object_key: Type.String() });

async function batches(fn: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let i = 0; i < SWEEP_MAX_BATCHES; i += 1) {
    const n = await fn();
    total += n;
    if (n < SWEEP_BATCH) break;
  }
  return total;
}

/** Deletes temporary uploads older than `olderThanSeconds` (default an hour) and their objects. */
export async function sweepStaleUploads(deps: CacheDeps, olderThanSeconds = STALE_UPLOAD_SECONDS): Promise<number> {
  return batches(async () => {
    const rows = await deps.pool.any(sqlTyped(TempRow)`
      DELETE FROM user_cache_uploads WHERE id IN (
        SELECT id FROM user_cache_uploads WHERE created_at < clock_timestamp() - make_interval(secs => ${olderThanSeconds})
        ORDER BY created_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING temp_key`);
    for (const row of rows) await deps.storage?.delete(row.temp_key);
    return rows.length;
  });
}

/** Deletes user-cache entries not read for `ttlDays` and their objects. */
export async function sweepExpiredUserEntries(deps: CacheDeps, ttlDays: number): Promise<number> {
  return batches(async () => {
    const rows = await deps.pool.any(sqlTyped(ObjectRow)`
      DELETE FROM user_cache_entries WHERE id IN (
        SELECT id FROM user_cache_entries WHERE last_read_at < clock_timestamp() - make_interval(days => ${ttlDays})
        ORDER BY last_read_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING object_key`);
    for (const row of rows) await deps.storage?.delete(row.object_key);
    return rows.length;
  });
}

/**
 * Deletes build-cache entries not read for `ttlDays`: the pointer first (readers then miss),
 * then the tarball unless another live pointer still names it.
 */
export async function sweepExpiredBuildEntries(deps: CacheDeps, ttlDays: number): Promise<number> {
  return batches(async () => {
    const rows = await deps.pool.any(sqlTyped(BuildRow)`
      DELETE FROM build_cache_entries WHERE pointer_key IN (
        SELECT pointer_key FROM build_cache_entries WHERE last_read_at < clock_timestamp() - make_interval(days => ${ttlDays})
        ORDER BY last_read_at LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)
      RETURNING pointer_key, object_key`);
    for (const row of rows) {
      await deps.storage?.delete(row.pointer_key);
      const shared = await deps.pool.exists(sql.unsafe`SELECT 1 FROM build_cache_entries WHERE object_key = ${row.object_key}`);
      if (!shared) await deps.storage?.delete(row.object_key);
    }
    return rows.length;
  });
}

export async function sweepCaches(deps: CacheDeps, ttlDays: number, options: { staleUploadSeconds?: number } = {}): Promise<SweepResult> {
  return {
    staleUploads: await sweepStaleUploads(deps, options.staleUploadSeconds),
    expiredUserEntries: await sweepExpiredUserEntries(deps, ttlDays),
    expiredBuildEntries: await sweepExpiredBuildEntries(deps, ttlDays),
  };
}
