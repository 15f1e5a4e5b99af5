// A job's `retry` policy → its lock form (docs/run-states.md "Retries"). Every value is checked
// here, because the orchestrator acts on the lock alone: a bad count, an unknown condition or an
// exit code no process can return is refused at compile with the field path, never dropped.
import type { LockRetry } from '../../schemas/lock.ts';
import { childPath, CompileErrorCode, type CompileScope } from './compile-scope.ts';
import { expectObject, isPlainObject } from './validate-fields.ts';

export const RETRY_DEFAULT_BACKOFF = Object.freeze({ delaySeconds: 10, factor: 2, maxDelaySeconds: 600 });
const CONDITIONS = ['agent-lost', 'failed-tests', '{ exitCodes: [...] }'];

function integerIn(scope: CompileScope, path: string, value: unknown, min: number, max: number, what: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    scope.fail(CompileErrorCode.invalidRetry, path, `${what} must be an integer from ${min} to ${max}, got ${JSON.stringify(value) ?? String(value)}`);
  }
  return value;
}

function backoff(scope: CompileScope, path: string, value: unknown): LockRetry['backoff'] {
  if (value === undefined) return { ...RETRY_DEFAULT_BACKOFF };
  const b = expectObject(scope, path, value, ['delaySeconds', 'factor', 'maxDelaySeconds']);
  const delaySeconds = b['delaySeconds'] === undefined ? RETRY_DEFAULT_BACKOFF.delaySeconds : integerIn(scope, childPath(path, 'delaySeconds'), b['delaySeconds'], 0, 3600, 'the first delay (seconds)');
  const rawFactor = b['factor'];
  if (rawFactor !== undefined && (typeof rawFactor !== 'number' || !Number.isFinite(rawFactor) || rawFactor < 1 || rawFactor > 10)) {
    scope.fail(CompileErrorCode.invalidRetry, childPath(path, 'factor'), `the back-off factor must be a number from 1 to 10, got ${JSON.stringify(rawFactor) ?? String(rawFactor)}`);
  }
  const factor = rawFactor ?? RETRY_DEFAULT_BACKOFF.factor;
  const maxDelaySeconds = b['maxDelaySeconds'] === undefined
    ? Math.max(RETRY_DEFAULT_BACKOFF.maxDelaySeconds, delaySeconds)
    : integerIn(scope, childPath(path, 'maxDelaySeconds'), b['maxDelaySeconds'], 0, 86_400, 'the longest delay (seconds)');
  if (maxDelaySeconds < delaySeconds) {
    scope.fail(CompileErrorCode.invalidRetry, childPath(path, 'maxDelaySeconds'), `the longest delay (${maxDelaySeconds} s) is shorter than the first one (${delaySeconds} s)`);
  }
  return { delaySeconds, factor, maxDelaySeconds };
}

/** The lock's retry entry, or undefined when the job declares none. */
export function normalizeRetry(scope: CompileScope, path: string, value: unknown): LockRetry | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) scope.fail(CompileErrorCode.invalidRetry, path, 'must be an object { maxAttempts, on, backoff? }');
  const r = expectObject(scope, path, value, ['maxAttempts', 'on', 'backoff']);
  if (r['maxAttempts'] === undefined) scope.fail(CompileErrorCode.invalidRetry, childPath(path, 'maxAttempts'), 'is required: the attempts in all, the first one included (2 to 10)');
  const maxAttempts = integerIn(scope, childPath(path, 'maxAttempts'), r['maxAttempts'], 2, 10, 'maxAttempts (the attempts in all, the first one included)');
  const on = r['on'];
  if (!Array.isArray(on) || on.length === 0) scope.fail(CompileErrorCode.invalidRetry, childPath(path, 'on'), `must list at least one condition: ${CONDITIONS.join(', ')}`);
  const out: LockRetry = { maxAttempts, agentLost: false, failedTests: false, exitCodes: [], backoff: backoff(scope, childPath(path, 'backoff'), r['backoff']) };
  const codes = new Set<number>();
  on.forEach((condition: unknown, index: number) => {
    const at = childPath(childPath(path, 'on'), index);
    if (condition === 'agent-lost') out.agentLost = true;
    else if (condition === 'failed-tests') out.failedTests = true;
    else if (isPlainObject(condition)) {
      const c = expectObject(scope, at, condition, ['exitCodes']);
      const list = c['exitCodes'];
      if (!Array.isArray(list) || list.length === 0) scope.fail(CompileErrorCode.invalidRetry, childPath(at, 'exitCodes'), 'must list at least one exit code (1 to 255)');
      list.forEach((code: unknown, i: number) => codes.add(integerIn(scope, childPath(childPath(at, 'exitCodes'), i), code, 1, 255, 'an exit code')));
    } else {
      scope.fail(CompileErrorCode.invalidRetry, at, `${JSON.stringify(condition) ?? String(condition)} is not a retry condition (expected one of: ${CONDITIONS.join(', ')})`);
    }
  });
  out.exitCodes = [...codes].sort((a, b) => a - b);
  return out;
}
