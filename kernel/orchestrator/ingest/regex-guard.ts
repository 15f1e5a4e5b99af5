// User-supplied regular expressions, run on a worker thread under a hard time bound. V8's
// backtracking engine can take exponential time (`(a+)+$` on a run of `a`s and a `!`), and a
// regex cannot be interrupted on the thread that runs it: on the orchestrator's event loop one
// such pattern would stall every delivery. Here the expression runs on one long-lived worker;
// when it overruns, the worker is terminated (V8 stops it mid-match) and a fresh one is started
// for the next call.
//
// Calls are serialised, one at a time on the worker, so each one's bound measures its own match
// and never the wait behind another's. A new worker's start-up is not counted either: the bound
// starts when the expression is handed to a running worker. After the first timeout a spare
// worker is kept booted: an expression that overran once usually comes back with the next push
// of its repository, and a boot (tens of milliseconds on a busy machine) would otherwise delay
// every call queued behind it.
import { Worker } from 'node:worker_threads';

export type RegexOutcome =
  | { readonly ok: true; readonly matched: boolean }
  /** `timeout`: stopped at the bound; `error`: the expression or the worker failed (message says how). */
  | { readonly ok: false; readonly reason: 'timeout' | 'error'; readonly message: string };

export interface RegexGuardOptions {
  /** How long a new worker may take to come up before the call fails (not part of the bound). Default 30 s. */
  startTimeoutMs?: number;
}

// Evaluated as a script (`eval: true`), so it works the same from the sources and from dist/,
// and imports nothing but worker_threads: a fresh worker is up in milliseconds.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const compiled = new Map();
parentPort.on('message', ({ id, source, flags, subject }) => {
  try {
    const key = flags + '/' + source;
    let re = compiled.get(key);
    if (re === undefined) {
      if (compiled.size >= 1000) compiled.clear();
      re = new RegExp(source, flags);
      compiled.set(key, re);
    }
    re.lastIndex = 0;
    parentPort.postMessage({ id, matched: re.test(subject) });
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) });
  }
});
`;

interface Call {
  readonly id: number;
  readonly source: string;
  readonly flags: string;
  readonly subject: string;
  readonly timeoutMs: number;
  readonly resolve: (outcome: RegexOutcome) => void;
  timer?: NodeJS.Timeout;
}

type Reply = { id: number; matched: boolean } | { id: number; error: string };

export class RegexGuard {
  readonly #startTimeoutMs: number;
  readonly #queue: Call[] = [];
  #current: Call | null = null;
  #worker: Promise<Worker> | null = null;
  #spare: Promise<Worker> | null = null;
  #keepSpare = false;
  #nextId = 1;
  #closed = false;
  /** Workers started so far (the first; after a timeout or a failure a replacement, and spares once one timed out). */
  started = 0;

  constructor(options: RegexGuardOptions = {}) {
    this.#startTimeoutMs = options.startTimeoutMs ?? 30_000;
  }

  /** `new RegExp(source, flags).test(subject)`, stopped after `timeoutMs` of matching. Never rejects. */
  test(source: string, flags: string, subject: string, timeoutMs: number): Promise<RegexOutcome> {
    if (this.#closed) return Promise.resolve({ ok: false, reason: 'error', message: 'the regular expression guard is closed' });
    return new Promise((resolve) => {
      this.#queue.push({ id: this.#nextId++, source, flags, subject, timeoutMs, resolve });
      this.#pump();
    });
  }

  /** Settles every waiting call with an error and stops the worker. */
  async close(): Promise<void> {
    this.#closed = true;
    const waiting = [...(this.#current ? [this.#current] : []), ...this.#queue.splice(0)];
    for (const call of waiting) this.#settle(call, { ok: false, reason: 'error', message: 'the regular expression guard is closed' });
    const spare = this.#spare;
    this.#spare = null;
    await Promise.all([this.#stopWorker(), spare?.then((w) => w.terminate()).catch(() => undefined)]);
  }

  #pump(): void {
    if (this.#current !== null || this.#closed) return;
    const call = this.#queue.shift();
    if (call === undefined) return;
    this.#current = call;
    this.#running().then(
      (worker) => {
        if (this.#current !== call) return;
        call.timer = setTimeout(() => {
          // The match cannot be interrupted any other way: the worker goes, with it.
          void this.#stopWorker();
          this.#keepSpare = true;
          this.#settle(call, { ok: false, reason: 'timeout', message: `took longer than ${call.timeoutMs} ms` });
        }, call.timeoutMs);
        worker.postMessage({ id: call.id, source: call.source, flags: call.flags, subject: call.subject });
      },
      (error: unknown) => {
        if (this.#current === call) this.#settle(call, { ok: false, reason: 'error', message: `the worker did not start: ${(error as Error).message}` });
      },
    );
  }

  #settle(call: Call, outcome: RegexOutcome): void {
    clearTimeout(call.timer);
    if (this.#current === call) this.#current = null;
    call.resolve(outcome);
    this.#pump();
  }

  /** The running worker, or the spare, or a new one once it is online. */
  #running(): Promise<Worker> {
    if (this.#worker === null) {
      this.#worker = this.#spare ?? this.#start();
      // Boots while this worker serves: ready by the time it is terminated.
      this.#spare = this.#keepSpare ? this.#start() : null;
    }
    return this.#worker;
  }

  #start(): Promise<Worker> {
    this.started += 1;
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // Not the parent's flags (a test runner's loaders, --cpu-prof): the script needs none.
      execArgv: [],
    });
    const started = new Promise<Worker>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`not online within ${this.#startTimeoutMs} ms`));
        void worker.terminate();
      }, this.#startTimeoutMs);
      worker.once('online', () => {
        clearTimeout(timer);
        resolve(worker);
      });
      worker.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with code ${code}`));
      });
    });
    const mine = (call: Call | null): call is Call => call !== null && this.#worker === started;
    worker.on('message', (reply: Reply) => {
      const call = this.#current;
      if (!mine(call) || call.id !== reply.id) return;
      this.#settle(call, 'error' in reply ? { ok: false, reason: 'error', message: reply.error } : { ok: true, matched: reply.matched });
    });
    // An uncaught failure in the worker: the worker is gone, so is its call.
    worker.on('error', (error) => this.#lost(started, error.message));
    worker.on('exit', (code) => this.#lost(started, `the worker exited with code ${code}`));
    started.catch(() => this.#lost(started, 'the worker did not start'));
    // Never what keeps the process alive (a call in flight has its own timer). After the
    // listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
    return started;
  }

  #lost(worker: Promise<Worker>, message: string): void {
    if (this.#spare === worker) this.#spare = null;
    if (this.#worker !== worker) return;
    this.#worker = null;
    const call = this.#current;
    // A call still waiting for this worker to start is settled by #pump's own rejection.
    if (call !== null && call.timer !== undefined) this.#settle(call, { ok: false, reason: 'error', message });
  }

  async #stopWorker(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    if (worker === null) return;
    await worker.then((w) => w.terminate()).catch(() => undefined);
  }
}

let shared: RegexGuard | undefined;
let suspects: RegexGuard | undefined;

/** The process's guard: one worker for every ingest pipeline of this process. */
export function sharedRegexGuard(): RegexGuard {
  shared ??= new RegexGuard();
  return shared;
}

/**
 * The process's second guard, for expressions that overran their bound recently: they keep
 * being tested (each under its bound) on a worker of their own, so the other expressions never
 * queue behind them (steps/message-regex.ts).
 */
export function sharedSuspectRegexGuard(): RegexGuard {
  suspects ??= new RegexGuard();
  return suspects;
}
