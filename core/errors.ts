// One error base for the whole product. `code` is stable (SVC_ERR_<AREA>_<WHAT>) so that
// operators, scripts and tests can match on it; `message` says what to do about it.
// Subclasses are by meaning; each transport maps them to its own vocabulary in one place.

import type { ErrorKind } from './error-codes/catalogue.ts';
import type { ErrorCode } from './error-codes.ts';

export type { ErrorKind };
export type { ErrorCode };

export interface SvcErrorOptions {
  cause?: unknown;
  /** Extra machine-readable detail (dot paths, limits, ids). Never secrets. */
  details?: Record<string, unknown>;
}

export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly kind: ErrorKind = 'internal';
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: SvcErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details;
  }
}

export class InputError extends SvcError {
  override readonly kind = 'input';
}
export class AuthenticationError extends SvcError {
  override readonly kind = 'authentication';
}
export class NotAllowedError extends SvcError {
  override readonly kind = 'not_allowed';
}
export class NotFoundError extends SvcError {
  override readonly kind = 'not_found';
}
export class ConflictError extends SvcError {
  override readonly kind = 'conflict';
}
/**
 * Too many requests for a budget (per client, org, source or cooldown). `retryAfterSeconds` is
 * required: every transport tells the caller when to come back (HTTP: 429 with Retry-After).
 */
export class RateLimitedError extends SvcError {
  override readonly kind = 'rate_limited';
  readonly retryAfterSeconds: number;
  constructor(code: ErrorCode, message: string, retryAfterSeconds: number, options: SvcErrorOptions = {}) {
    super(code, message, { ...options, details: { ...options.details, retryAfterSeconds } });
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
export class UnavailableError extends SvcError {
  override readonly kind = 'unavailable';
}

export function isSvcError(value: unknown): value is SvcError {
  return value instanceof SvcError;
}

/** Message of an unknown thrown value, for wrapping foreign errors. */
export function messageOf(value: unknown): string {
  if (value instanceof Error) return value.message;
  return String(value);
}
