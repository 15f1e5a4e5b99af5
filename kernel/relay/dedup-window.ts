// The relay's duplicate window (spec Limits: identical body for the same source within the last
// minute; duplicate delivery ids likewise). A key counts as seen only once its first delivery was
// answered 200 (accepted, duplicate or buffered): a delivery refused with 401/429/5xx may come
// back corrected and must go through. A copy arriving while the first is still in flight waits
// for the first's answer instead of racing it.
import { LRUCache } from 'lru-cache';

type Entry = { state: 'done' } | { state: 'pending'; settled: Promise<boolean> };

export type DedupClaim =
  | { kind: 'duplicate' }
  /** First of its keys: call `settle(answered200)` exactly once when the answer is known. */
  | { kind: 'new'; settle(answered200: boolean): void };

export interface DedupWindowOptions {
  windowMs: number;
  /** How long an in-flight claim may stay pending (the relay's total budget plus slack). */
  pendingMs: number;
  maxKeys?: number;
  /**
   * The clock the window and the pending limit are measured on (ms, monotonic); defaults to
   * `performance.now()`. Tests move an injected clock past the window instead of waiting it out.
   */
  now?: () => number;
}

export class DedupWindow {
  readonly #entries: LRUCache<string, Entry>;
  readonly #windowMs: number;
  readonly #pendingMs: number;

  constructor(options: DedupWindowOptions) {
    this.#windowMs = options.windowMs;
    this.#pendingMs = options.pendingMs;
    const now = options.now;
    this.#entries = new LRUCache<string, Entry>({
      max: options.maxKeys ?? 200_000,
      ttlAutopurge: false,
      // An injected clock is read on every check (no 1 ms caching of "now").
      ...(now === undefined ? {} : { perf: { now }, ttlResolution: 0 }),
    });
  }

  /** Claims every key, or reports a duplicate when any key was answered 200 inside the window. */
  async claim(keys: readonly string[]): Promise<DedupClaim> {
    // Bounded: each pass either claims, finds a duplicate, or waits for one settled claim.
    for (let pass = 0; pass < 5; pass++) {
      let pending: Promise<boolean> | undefined;
      for (const key of keys) {
        const entry = this.#entries.get(key);
        if (entry?.state === 'done') return { kind: 'duplicate' };
        if (entry?.state === 'pending') pending ??= entry.settled;
      }
      if (pending === undefined) return this.#claimAll(keys);
      if (await pending) return { kind: 'duplicate' };
    }
    return this.#claimAll(keys);
  }

  #claimAll(keys: readonly string[]): DedupClaim {
    let resolve!: (value: boolean) => void;
    const settled = new Promise<boolean>((r) => (resolve = r));
    const entry: Entry = { state: 'pending', settled };
    for (const key of keys) this.#entries.set(key, entry, { ttl: this.#pendingMs });
    let done = false;
    return {
      kind: 'new',
      settle: (answered200) => {
        if (done) return;
        done = true;
        for (const key of keys) {
          if (this.#entries.peek(key) !== entry) continue;
          if (answered200) this.#entries.set(key, { state: 'done' }, { ttl: this.#windowMs });
          else this.#entries.delete(key);
        }
        resolve(answered200);
      },
    };
  }
}
