// The few assertions contract points need, with messages that read well after
// `fails contract point "...": `. Deliberately tiny: no test framework in production code.
import { isDeepStrictEqual } from 'node:util';
import { errorCodeEntry } from '../../error-codes.ts';
import { messageOf } from '../../errors.ts';

export class ContractViolation extends Error {
  override name = 'ContractViolation';
}

/** Thrown by a point that cannot run on this host (the runner reports it as skipped, with the reason). */
export class ContractSkip extends Error {
  override name = 'ContractSkip';
}

export function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ContractViolation(message);
}

export function show(value: unknown): string {
  if (value instanceof Uint8Array) return `<${value.length} bytes>`;
  if (typeof (value as { pipe?: unknown } | null)?.pipe === 'function') return '<a stream>';
  try {
    const text = JSON.stringify(value);
    if (text === undefined) return String(value);
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return String(value);
  }
}

export function expectEqual(actual: unknown, expected: unknown, what: string): void {
  if (!isDeepStrictEqual(actual, expected)) throw new ContractViolation(`${what}: expected ${show(expected)}, got ${show(actual)}`);
}

/** Every field of `expected` equals the same field of `actual` (extra fields allowed). */
export function expectFields(actual: unknown, expected: Readonly<Record<string, unknown>>, what: string): void {
  expect(typeof actual === 'object' && actual !== null, `${what}: expected an object, got ${show(actual)}`);
  for (const [key, value] of Object.entries(expected)) {
    const got = (actual as Record<string, unknown>)[key];
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) expectFields(got, value as Record<string, unknown>, `${what}.${key}`);
    else expectEqual(got, value, `${what}.${key}`);
  }
}

const CODE = /^SVC_ERR_[A-Z0-9]+(_[A-Z0-9]+)*$/;

export interface ExpectedError {
  /** Exact code, or any well-formed `SVC_ERR_*` code when absent. */
  code?: string;
  /** SvcError kind (`input`, `not_found`, …). */
  kind?: string;
}

/** What the contract reads of an SvcError (by shape: the plugin may use another copy of core/errors). */
export interface CodedError extends Error {
  code: string;
  kind: string;
}

/**
 * An SvcError with a well-formed code (and the given code and kind); a code the kernel's
 * catalogue declares must carry its declared kind. Returns it.
 */
export function expectSvcError(error: unknown, expected: ExpectedError, what: string): CodedError {
  const coded = error as Partial<CodedError> | null;
  if (!(error instanceof Error) || typeof coded?.code !== 'string' || typeof coded.kind !== 'string') {
    throw new ContractViolation(`${what}: expected an SvcError (core/errors.ts), got ${error instanceof Error ? error.name : typeof error}: ${messageOf(error)}`);
  }
  const svc = coded as CodedError;
  expect(CODE.test(svc.code), `${what}: error code "${svc.code}" is not of the form SVC_ERR_<AREA>_<WHAT>`);
  const declared = errorCodeEntry(svc.code);
  if (declared !== undefined) expectEqual(svc.kind, declared.kind, `${what}: kind of ${svc.code} (declared in core/error-codes)`);
  if (expected.code !== undefined) expectEqual(svc.code, expected.code, `${what}: error code`);
  if (expected.kind !== undefined) expectEqual(svc.kind, expected.kind, `${what}: error kind`);
  expect(svc.message.trim() !== '', `${what}: error message is empty`);
  return svc;
}

/** `run` rejects (or throws) with an SvcError as expected. */
export async function expectRejects(run: () => unknown, expected: ExpectedError, what: string): Promise<CodedError> {
  let result: unknown;
  try {
    result = await run();
  } catch (error) {
    return expectSvcError(error, expected, what);
  }
  throw new ContractViolation(`${what}: expected it to fail${expected.code ? ` with ${expected.code}` : ''}, it returned ${show(result)}`);
}

/** Wait until `ready()` holds, polling; fails after `timeoutMs` with `what`. */
export async function eventually(ready: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new ContractViolation(`${what} (waited ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
