// Operator views and clean-ups of the caches (`svc-admin cache list|purge|purge-legacy`).
import { Type, type Static } from 'typebox';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { CURRENT_PREFIXES, checkOrg, checkScope } from './keys.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const CacheListRow = Type.Object({
  kind: Type.Union([Type.Literal('user'), Type.Literal('source'), Type.Literal('dep')]),
  org: Nullable(Type.String()),
  /** User cache: `shared` or `iso/<run>`; dependency cache: `<platform>-<arch>`; source: null. */
  scope: Nullable(Type.String()),
  /** User key, contentHash (source) or lockfileHash (dep). */
  key: Type.String(),
  objectKey: Type.String(),
  sizeBytes: Type.Number(),
  createdAt: Type.Number(),
  lastReadAt: Type.Number(),
});
export type CacheListRow = Static<typeof CacheListRow>;

export const MAX_CACHE_LIST = 10_000;

/** User and build cache entries, newest first; `org` limits to one org (dependency entries have none). */
export async function listCacheEntries(pool: DatabasePool, options: { org?: string; limit?: number } = {}): Promise<CacheListRow[]> {
  const limit = Math.min(MAX_CACHE_LIST, Math.max(1, options.limit ?? 1000));
  const org = options.org === undefined ? null : checkOrg(options.org);
  const rows = await pool.any(sqlTyped(CacheListRow)`
    SELECT * FROM (
      SELECT 'user' AS kind, org_id AS org, scope, key, object_key AS "objectKey", size_bytes::float8 AS "sizeBytes",
             created_at AS "createdAt", last_read_at AS "lastReadAt"
      FROM user_cache_entries WHERE ${org}::text IS NULL OR org_id = ${org}
      UNION ALL
      SELECT kind, org_id, platform_arch, pointer, object_key, size_bytes::float8, created_at, last_read_at
      FROM build_cache_entries WHERE ${org}::text IS NULL OR org_id = ${org}
    ) e ORDER BY "createdAt" DESC, "objectKey" LIMIT ${limit}`);
  return [...rows];
}

export interface PurgeResult {
  entries: number;
  uploads: number;
}

/** Deletes an org's user cache (one scope, or all): entries, pending uploads, their objects. */
export async function purgeUserCache(pool: DatabasePool, storage: StorageExtensionPoint, options: { org: string; scope?: string }): Promise<PurgeResult> {
  const org = checkOrg(options.org);
  const scope = options.scope === undefined ? null : checkScope(options.scope);
  const { objects, temps } = await pool.transaction(async (tx) => {
    const objects = await tx.anyFirst(sqlTyped(Type.Object({ object_key: Type.String() }))`
      DELETE FROM user_cache_entries WHERE org_id = ${org} AND (${scope}::text IS NULL OR scope = ${scope}) RETURNING object_key`);
    const temps = await tx.anyFirst(sqlTyped(Type.Object({ temp_key: Type.String() }))`
      DELETE FROM user_cache_uploads WHERE org_id = ${org} AND (${scope}::text IS NULL OR scope = ${scope}) RETURNING temp_key`);
    return { objects, temps };
  });
  for (const key of [...objects, ...temps]) await storage.delete(key);
  return { entries: objects.length, uploads: temps.length };
}

// Roots the pre-0.6 layouts used (and a few spellings seen in old deployments).
const LEGACY_ROOTS = new Set(['sources', 'source-cache', 'deps-cache', 'dep-cache', 'dependencies', 'user-cache', 'usercache', 'caches', 'cache-v1', 'build-cache']);
const ARCHIVE = /\.(tar\.gz|tgz|tar|hash)$/;

/**
 * Whether `key` is an object of a pre-0.6 cache layout: never under a current prefix
 * (`source/v2/`, `deps/`, `cache/`, `event-log/`), and one of
 *   `source/<anything but v2>/…`          source cache before the v2 layout (e.g. `source/<org>/<hash>.tar.gz`, `source/v1/…`)
 *   `deps/<file>`                         flat dependency cache before per-platform folders
 *   `<legacy root>/…`                     sources/, source-cache/, deps-cache/, dep-cache/, dependencies/,
 *                                         user-cache/, usercache/, caches/, cache-v1/, build-cache/
 *   `<file>.tar.gz|.tgz|.tar|.hash`       tarballs and pointers at the storage root
 * Anything else (event-log payloads, remote-run overlays, unknown folders) is left alone.
 */
export function isLegacyCacheKey(key: string): boolean {
  const parts = key.split('/');
  if (parts[0] === 'deps' && parts.length === 2) return true;
  if (CURRENT_PREFIXES.some((prefix) => key.startsWith(prefix))) return false;
  const root = parts[0] as string;
  if (parts.length === 1) return ARCHIVE.test(root);
  if (root === 'source') return parts[1] !== 'v2';
  return LEGACY_ROOTS.has(root);
}

/** Every legacy object in storage (bounded by pages of the storage's list). */
export async function findLegacyObjects(storage: StorageExtensionPoint, maxPages = 100_000): Promise<Array<{ key: string; size: number }>> {
  const found: Array<{ key: string; size: number }> = [];
  let after: string | undefined;
  for (let page = 0; page < maxPages; page += 1) {
    const listed = await storage.list('', after === undefined ? {} : { after });
    for (const object of listed.objects) if (isLegacyCacheKey(object.key)) found.push({ key: object.key, size: object.size });
    if (listed.next === null) break;
    after = listed.next;
  }
  return found;
}

/** Deletes every legacy object (or only reports them with `dryRun`). */
export async function purgeLegacyObjects(storage: StorageExtensionPoint, options: { dryRun?: boolean } = {}): Promise<{ objects: Array<{ key: string; size: number }>; deleted: number }> {
  const objects = await findLegacyObjects(storage);
  if (options.dryRun === true) return { objects, deleted: 0 };
  for (const object of objects) await storage.delete(object.key);
  return { objects, deleted: objects.length };
}

/** `1536` → `1.5 KiB`, for the operator's listing. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
