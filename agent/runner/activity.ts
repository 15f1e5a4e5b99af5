// An activity is one unit of workflow code the runner waits on: a step (rules, check, body), a
// hook, the filter, the job outputs function. It owns an AbortController (ctx.signal; aborting
// it kills the activity's shell subprocesses) and the set of those subprocesses. `guard` runs
// code as the activity and returns how it ended, never throwing: completion, a thrown error, a
// timeout, an abort (cancel), or an error that escaped as an uncaught exception/rejection.
import { AsyncLocalStorage } from 'node:async_hooks';

export interface Killable {
  kill(signal?: NodeJS.Signals): boolean;
}

export class Activity {
  readonly label: string;
  readonly controller = new AbortController();
  readonly subprocesses = new Set<Killable>();
  /** Set by `guard` while the activity runs: fails it with an escaped error (false: not running). */
  escape: (error: unknown) => boolean = () => false;

  constructor(label: string) {
    this.label = label;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Aborts the signal (execa then sends SIGTERM to each subprocess group, SIGKILL 2 s later). */
  abort(reason: unknown): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** SIGKILL every subprocess group of this activity now (force cancel). */
  killNow(): void {
    this.abort(new Error('killed'));
    for (const sub of this.subprocesses) sub.kill('SIGKILL');
  }
}

export type GuardOutcome<T> =
  | { kind: 'ok'; value: T }
  | { kind: 'error'; error: unknown }
  | { kind: 'timeout'; ms: number }
  | { kind: 'aborted'; reason: unknown };

const store = new AsyncLocalStorage<Activity>();
const running: Activity[] = [];
/** Every activity ever started in this process, for killing leftovers at the end of the job. */
const all = new Set<Activity>();

/** The activity whose code is running now: the async context's, else the innermost guard. */
export function currentActivity(): Activity | undefined {
  return store.getStore() ?? running[running.length - 1];
}

export function allActivities(): ReadonlySet<Activity> {
  return all;
}

export async function guard<T>(activity: Activity, fn: () => T | Promise<T>, timeoutMs?: number): Promise<GuardOutcome<T>> {
  all.add(activity);
  if (activity.signal.aborted) return { kind: 'aborted', reason: activity.signal.reason };
  const { promise, resolve } = Promise.withResolvers<GuardOutcome<T>>();
  const onAbort = () => resolve({ kind: 'aborted', reason: activity.signal.reason });
  activity.signal.addEventListener('abort', onAbort, { once: true });
  activity.escape = (error) => {
    resolve({ kind: 'error', error });
    return true;
  };
  let timer: NodeJS.Timeout | undefined;
  if (timeoutMs !== undefined) {
    timer = setTimeout(() => {
      resolve({ kind: 'timeout', ms: timeoutMs });
      activity.abort(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  }
  running.push(activity);
  store.run(activity, () => {
    try {
      Promise.resolve(fn()).then(
        (value) => resolve({ kind: 'ok', value }),
        (error: unknown) => resolve({ kind: 'error', error }),
      );
    } catch (error) {
      resolve({ kind: 'error', error });
    }
  });
  try {
    return await promise;
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    activity.signal.removeEventListener('abort', onAbort);
    activity.escape = () => false;
    const at = running.lastIndexOf(activity);
    if (at >= 0) running.splice(at, 1);
  }
}
