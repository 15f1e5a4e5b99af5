// Object keys of the cache layouts (spec "Other records") and the checks on the names agents
// send us: a digest or hash becomes one storage key segment, so it must be a plain name.
import { createHash } from 'node:crypto';
import { InputError } from '../../../core/errors.ts';

/** Prefixes of the current (0.6+) layouts; anything else that looks like a cache is legacy. */
export const CURRENT_PREFIXES = ['source/v2/', 'deps/', 'cache/', 'event-log/'] as const;

// Digests and hashes look like `sha256:<hex>`, `npm:<hex>`, `sha256-<hex>` or bare hex.
const NAME = /^[A-Za-z0-9][A-Za-z0-9._:+=-]{0,199}$/;

/** Throws InputError unless `value` can be one storage key segment (what, e.g. `key`, names it). */
export function checkCacheName(what: string, value: string): string {
  if (!NAME.test(value) || value.includes('..')) {
    throw new InputError(
      'SVC_ERR_CACHE_KEY_INVALID',
      `${what} ${JSON.stringify(value.slice(0, 80))} is not a valid cache name: 1-200 characters of letters, digits and ._:+=- starting with a letter or digit`,
      { details: { what } },
    );
  }
  return value;
}

/** Org ids become a key segment too; refuse anything that could leave the org's folder. */
export function checkOrg(org: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/.test(org) || org.includes('..')) {
    throw new InputError('SVC_ERR_CACHE_ORG_INVALID', `org ${JSON.stringify(org.slice(0, 80))} is not a valid org id for cache keys`);
  }
  return org;
}

export const sourceObjectKey = (org: string, digest: string): string => `source/v2/${org}/${digest}.tar.gz`;
export const sourcePointerKey = (org: string, contentHash: string): string => `source/v2/${org}/${contentHash}.hash`;
export const depsObjectKey = (platformArch: string, depsHash: string): string => `deps/${platformArch}/${depsHash}.tar.gz`;
export const depsPointerKey = (platformArch: string, lockfileHash: string): string => `deps/${platformArch}/${lockfileHash}.hash`;

/** `linux-x64` from an agent's auto labels (`svc:os:linux`, `svc:arch:x64`); null when either is missing. */
export function platformArchOf(labels: readonly string[]): string | null {
  const os = labels.find((l) => l.startsWith('svc:os:'))?.slice('svc:os:'.length);
  const arch = labels.find((l) => l.startsWith('svc:arch:'))?.slice('svc:arch:'.length);
  if (!os || !arch) return null;
  return `${os}-${arch}`;
}

export function checkPlatformArch(value: string): string {
  if (!/^[a-z0-9._]+-[a-z0-9._-]+$/.test(value) || value.length > 100) {
    throw new InputError('SVC_ERR_CACHE_PLATFORM_INVALID', `platform-arch ${JSON.stringify(value.slice(0, 80))} is not of the form <os>-<arch>`);
  }
  return value;
}

// ---- user cache ----

export type UserScope = 'shared' | `iso/${string}`;

export const isoScope = (runId: string): UserScope => `iso/${runId}`;

/** `shared` or `iso/<uuid>`: the only scopes that exist. */
export function checkScope(scope: string): UserScope {
  if (scope === 'shared' || /^iso\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(scope)) return scope as UserScope;
  throw new InputError('SVC_ERR_CACHE_SCOPE_INVALID', `scope ${JSON.stringify(scope.slice(0, 80))} is not "shared" or "iso/<run id>"`);
}

/** Keys are free text (up to 512 characters); the object is named by the key's SHA-256. */
export function userObjectKey(org: string, scope: UserScope, key: string): string {
  return `cache/${org}/${scope}/${createHash('sha256').update(key, 'utf8').digest('hex')}.tar`;
}

export const userTempKey = (org: string, uploadId: string): string => `cache/${org}/tmp/${uploadId}`;

/** User-cache keys: printable text, no control characters. */
export function checkUserKey(what: string, key: string): string {
  if (key.length === 0 || key.length > 512 || /[\u0000-\u001f\u007f]/.test(key) || !key.isWellFormed()) {
    throw new InputError('SVC_ERR_CACHE_KEY_INVALID', `${what} must be 1-512 printable characters`, { details: { what } });
  }
  return key;
}
