// Step 9: the lock file at a commit, through the provider, LRU-cached by (source, repository,
// sha) (`lockfileCache.max` / `ttlMs`). None is a normal outcome (no run, no error); a lock this
// orchestrator cannot accept is `lockfile_corrupt` with the spec's message. Fetch failures are
// not cached: the delivery is kept and retried (retry/store.ts) unless the failure cannot pass.
import { LRUCache } from 'lru-cache';
import { parseLock } from '../../../../workflow/lock/lock-file.ts';
import { checkLockAcceptance, type Lock } from '../../../../schemas/lock.ts';
import type { ProviderSource, RepositoryRef, SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';
import { InputError, NotFoundError, isSvcError, messageOf } from '../../../../core/errors.ts';

export const LOCK_PATH = '.svc/svc.lock.json';

export type LockRead =
  | { kind: 'none' }
  | { kind: 'lock'; lock: Lock }
  | { kind: 'corrupt'; reason: 'lock_too_old' | 'reader_too_old' | 'invalid'; message: string };

/** Lock text → accepted lock, or the refusal. Acceptance is checked before the schema: an old lock has an old shape. */
export function readLockText(bytes: Uint8Array): LockRead {
  const text = Buffer.from(bytes).toString('utf8');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    return { kind: 'corrupt', reason: 'invalid', message: `Lock file is not valid JSON (${messageOf(error)}). Recompile with \`svc compile\` and push again.` };
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return { kind: 'corrupt', reason: 'invalid', message: 'Lock file is not a JSON object. Recompile with `svc compile` and push again.' };
  }
  const acceptance = checkLockAcceptance(raw as Record<string, unknown>);
  if (!acceptance.accepted) return { kind: 'corrupt', reason: acceptance.reason, message: acceptance.message };
  try {
    return { kind: 'lock', lock: parseLock(text) };
  } catch (error) {
    return { kind: 'corrupt', reason: 'invalid', message: messageOf(error) };
  }
}

/**
 * A fetch failure that retrying cannot fix: the commit is not at the forge (not found), the
 * request itself is wrong (input), or the lock is over a size limit (`…_TOO_LARGE`). Everything
 * else (unreachable, timeouts, 5xx, rate limits, credentials being rotated) may pass.
 */
export function permanentFetchFailure(error: unknown): boolean {
  if (error instanceof NotFoundError || error instanceof InputError) return true;
  if (!isSvcError(error)) return false;
  if (error.code.endsWith('_TOO_LARGE')) return true;
  // A provider's HTTP refusal of the request itself (422 "no commit found", 400); 401/403 may be
  // a credential being rotated, 408/429 are load: those pass.
  const status = error.details?.['status'];
  return typeof status === 'number' && status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);
}

export class LockCache {
  readonly #cache: LRUCache<string, Promise<LockRead>>;
  hits = 0;
  misses = 0;

  constructor(options: { max: number; ttlMs: number }) {
    this.#cache = new LRUCache({ max: options.max, ttl: options.ttlMs });
  }

  /** `ref`: the ref the event pushed to `sha`, passed on as the provider's hint (not part of the key). */
  fetch(provider: SourceProviderExtensionPoint, source: ProviderSource, repository: RepositoryRef, sha: string, ref?: string | null): Promise<LockRead> {
    const key = `${source.id}\0${repository.id}\0${sha}`;
    const hit = this.#cache.get(key);
    if (hit) {
      this.hits += 1;
      return hit;
    }
    this.misses += 1;
    const read = provider.fetchLockFile({ source, repository, sha, ...(ref ? { ref } : {}) }).then((bytes) => (bytes === null ? ({ kind: 'none' } as const) : readLockText(bytes)));
    this.#cache.set(key, read);
    read.catch(() => {
      if (this.#cache.get(key) === read) this.#cache.delete(key);
    });
    return read;
  }

  clear(): void {
    this.#cache.clear();
  }
}
