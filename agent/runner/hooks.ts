// Running one hook: a function or `{ run, timeout }` (ms; default the job's hookTimeoutMs).
// A hook observes: it cannot change which steps or hooks run. When it throws or times out, its
// level (a step's hooks, the job's, the workflow's) is marked failed, the remaining hooks of that
// level are skipped, and the caller adds `<level> <hook> hook failed: <why>` to the job reason.
import { messageOf } from '../../core/errors.ts';
import { Activity, guard } from './activity.ts';
import type { LogSink } from './log-capture.ts';

export class HookLevel {
  readonly name: string;
  failed = false;
  constructor(name: string) {
    this.name = name;
  }
}

export interface HookRunner {
  readonly sink: LogSink;
  readonly defaultTimeoutMs: number;
  /** Called with the hook's activity while it runs (force cancel kills it), then undefined. */
  track(activity: Activity | undefined): void;
}

function normalize(hook: unknown, defaultTimeoutMs: number): { run: (ctx: unknown) => unknown; timeout: number } | string {
  if (typeof hook === 'function') return { run: hook as (ctx: unknown) => unknown, timeout: defaultTimeoutMs };
  if (typeof hook === 'object' && hook !== null && typeof (hook as { run?: unknown }).run === 'function') {
    const { run, timeout } = hook as { run: (ctx: unknown) => unknown; timeout?: unknown };
    if (timeout === undefined) return { run, timeout: defaultTimeoutMs };
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0 || timeout > 2_147_483_647) {
      return `its timeout must be a positive number of milliseconds, got ${JSON.stringify(timeout)}`;
    }
    return { run, timeout: Math.ceil(timeout) };
  }
  return 'it is neither a function nor { run, timeout }';
}

/**
 * Runs `hook` (if defined) at `level`. Returns the failure text for the job reason, or
 * undefined when the hook is absent, skipped or succeeded.
 */
export async function runHook(
  runner: HookRunner,
  level: HookLevel,
  hookName: string,
  hook: unknown,
  makeContext: (activity: Activity) => object,
  labelSuffix = '',
): Promise<string | undefined> {
  if (hook === undefined || hook === null) return undefined;
  const label = `(hook) ${level.name} ${hookName}${labelSuffix}`;
  if (level.failed) {
    runner.sink.line(label, 'system', `skipped: an earlier ${level.name} hook failed`);
    return undefined;
  }
  const spec = normalize(hook, runner.defaultTimeoutMs);
  let why: string | undefined;
  if (typeof spec === 'string') why = spec;
  else {
    const activity = new Activity(label);
    runner.track(activity);
    const outcome = await guard(activity, () => spec.run(makeContext(activity)), spec.timeout);
    runner.track(undefined);
    runner.sink.flush(label);
    if (outcome.kind === 'error') why = messageOf(outcome.error);
    else if (outcome.kind === 'timeout') why = `timed out after ${outcome.ms} ms`;
    else if (outcome.kind === 'aborted') why = `killed: ${messageOf(outcome.reason)}`;
  }
  if (why === undefined) return undefined;
  level.failed = true;
  runner.sink.line(label, 'stderr', `hook failed: ${why}`);
  return `${level.name} ${hookName} hook failed: ${why}`;
}
