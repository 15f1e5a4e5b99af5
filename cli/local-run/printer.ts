// Prints a local run as it happens: log lines and step transitions per job, in time order. Step
// statuses arrive at once while log lines arrive batched (the agent's log pipeline sends a chunk
// at most every 250 ms and holds a possible secret's start up to 1 s), so each job's entries
// are held briefly and printed sorted by their timestamps; a job's end prints all it has.
export const HOLD_MS = 1_300;

interface Entry {
  at: number;
  seq: number;
  text: string;
}

export class RunPrinter {
  readonly #write: (line: string) => void;
  readonly #held = new Map<string, Entry[]>();
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(write: (line: string) => void) {
    this.#write = write;
  }

  /** An entry of `job` stamped `at` (ISO time). */
  add(job: string, at: string, text: string): void {
    const list = this.#held.get(job) ?? [];
    list.push({ at: Date.parse(at) || Date.now(), seq: this.#seq++, text });
    this.#held.set(job, list);
    this.#timer ??= setInterval(() => this.#flushOlder(Date.now() - HOLD_MS), 250);
  }

  /** Prints everything held for `job` (its end). */
  flushJob(job: string): void {
    const list = this.#held.get(job);
    if (list === undefined) return;
    this.#held.delete(job);
    for (const entry of list.sort(order)) this.#write(entry.text);
  }

  close(): void {
    for (const job of [...this.#held.keys()]) this.flushJob(job);
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #flushOlder(cutoff: number): void {
    for (const [job, list] of this.#held) {
      list.sort(order);
      let n = 0;
      while (n < list.length && list[n]!.at <= cutoff) this.#write(list[n++]!.text);
      if (n === list.length) this.#held.delete(job);
      else if (n > 0) list.splice(0, n);
    }
  }
}

function order(a: Entry, b: Entry): number {
  return a.at - b.at || a.seq - b.seq;
}
