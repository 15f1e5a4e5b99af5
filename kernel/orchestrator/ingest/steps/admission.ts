// Step 1, admission: a bounded number of deliveries in flight per node. Past it a delivery is
// shed (`shed_retry_later` with Retry-After) before any work; the relay keeps it and replays it.
export interface AdmissionOptions {
  /** Deliveries processed at once on this node. */
  maxInFlight: number;
  /** Retry-After given to shed deliveries, seconds. */
  retryAfterSeconds: number;
}

export const DEFAULT_ADMISSION: AdmissionOptions = { maxInFlight: 256, retryAfterSeconds: 5 };

export class Admission {
  readonly #options: AdmissionOptions;
  #inFlight = 0;

  constructor(options: Partial<AdmissionOptions> = {}) {
    this.#options = { ...DEFAULT_ADMISSION, ...options };
    if (!Number.isInteger(this.#options.maxInFlight) || this.#options.maxInFlight < 0) throw new RangeError('maxInFlight must be a non-negative integer');
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get retryAfterSeconds(): number {
    return this.#options.retryAfterSeconds;
  }

  /** A release function when admitted; null when the delivery must be shed. */
  admit(): (() => void) | null {
    if (this.#inFlight >= this.#options.maxInFlight) return null;
    this.#inFlight += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight -= 1;
    };
  }
}
