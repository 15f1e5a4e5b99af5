// Group commit for directory fsyncs. A put is durable once its directory entry is: the rename
// must be followed by an fsync of the directory that *started* after it. Puts into one directory
// at the same time can share that fsync: while one runs, every put that asks waits for the next
// one, which starts when the running one ends and covers them all. Each fsync of a directory on
// ext4 is a journal commit and a device flush, the flushes the database's WAL commits queue
// behind (issue 19: two per stored webhook payload), so N concurrent puts cost two flushes
// instead of N.

export class GroupSync {
  readonly #run: () => Promise<void>;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;

  constructor(run: () => Promise<void>) {
    this.#run = run;
  }

  /** True when no sync runs or waits (the owner may forget this instance). */
  get idle(): boolean {
    return this.#running === undefined && this.#queued === undefined;
  }

  /** Resolves after a sync that started after this call; never rejects if `run` does not. */
  request(): Promise<void> {
    if (this.#queued !== undefined) return this.#queued;
    const running = this.#running;
    if (running === undefined) return this.#start();
    const queued = running.then(() => {
      this.#queued = undefined;
      return this.#start();
    });
    this.#queued = queued;
    return queued;
  }

  #start(): Promise<void> {
    const running = this.#run().finally(() => {
      if (this.#running === running) this.#running = undefined;
    });
    this.#running = running;
    return running;
  }
}
