// Shared answers of the dashboard and CLI routes: an orchestrator's relayed error keeps its
// code, message and status; a broker timeout answers 504; anything else goes to the shared mapping.
import type { FastifyReply } from 'fastify';
import type { DashboardError } from '../../../schemas/wire/relay.ts';
import { RateLimitedError, isSvcError } from '../../../core/errors.ts';
import { receivedCode } from '../../../core/error-codes.ts';

export class RelayedError extends Error {
  readonly error: DashboardError;
  constructor(error: DashboardError) {
    super(error.message);
    this.error = error;
  }
}

export function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

export function failed(reply: FastifyReply, error: unknown): FastifyReply {
  if (error instanceof RelayedError) {
    const e = error.error;
    // Too many requests (the re-run cooldown): the shared mapping answers 429 with Retry-After.
    if (e.status === 429 && e.retryAfterSeconds !== undefined) throw new RateLimitedError(receivedCode(e.code), e.message, Math.max(1, e.retryAfterSeconds));
    if (e.retryAfterSeconds !== undefined) void reply.header('retry-after', String(Math.max(1, e.retryAfterSeconds)));
    const status = Number.isInteger(e.status) && e.status >= 400 && e.status <= 599 ? e.status : 502;
    return send(reply, status, { error: { code: e.code, message: e.message } });
  }
  // 504 for a timeout; other SvcErrors go to the shared mapping.
  if (isSvcError(error) && typeof error.details?.['status'] === 'number') return send(reply, error.details['status'], { error: { code: error.code, message: error.message } });
  throw error;
}

/** Throws the orchestrator's error, else returns the response. */
export function unwrap<T extends { error?: DashboardError }>(response: T): T {
  if (response.error !== undefined) throw new RelayedError(response.error);
  return response;
}
