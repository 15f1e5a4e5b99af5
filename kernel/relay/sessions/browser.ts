// What a browser request carries: the session cookie, whether it came over https (directly or
// through a proxy that says so), and whether a state-changing request comes from the relay's own
// pages (Origin, else Referer, must be the relay's origin; CSRF token checked by the caller).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NotAllowedError } from '../../../core/errors.ts';
import { csrfMatches } from './store.ts';

export const SESSION_COOKIE = 'svc_session';

/** The value of one cookie of the request, or undefined. */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

export function sessionCookieOf(request: FastifyRequest): string | undefined {
  return cookieOf(request, SESSION_COOKIE);
}

function firstHeader(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  const one = Array.isArray(value) ? value[0] : value;
  return one?.split(',')[0]?.trim();
}

/** https directly, or behind a proxy that says `X-Forwarded-Proto: https`. */
export function isHttps(request: FastifyRequest): boolean {
  return request.protocol === 'https' || firstHeader(request, 'x-forwarded-proto')?.toLowerCase() === 'https';
}

/** The origin the browser sees this relay at. */
export function ownOrigin(request: FastifyRequest): string {
  const host = firstHeader(request, 'x-forwarded-host') ?? request.headers.host ?? '';
  return `${isHttps(request) ? 'https' : 'http'}://${host.toLowerCase()}`;
}

function originOf(value: string): string | undefined {
  try {
    const url = new URL(value);
    return `${url.protocol}//${url.host}`.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * A state-changing browser request must come from the relay's own pages: its Origin (or, where a
 * browser leaves Origin out, its Referer) must be this relay's origin. Neither is a refusal.
 */
export function checkSameOrigin(request: FastifyRequest): void {
  const origin = firstHeader(request, 'origin');
  const referer = request.headers.referer;
  const from = origin !== undefined && origin !== '' ? (origin === 'null' ? undefined : originOf(origin)) : typeof referer === 'string' ? originOf(referer) : undefined;
  if (from === undefined || from !== ownOrigin(request)) {
    throw new NotAllowedError('SVC_ERR_RELAY_CROSS_ORIGIN', `this form must be sent from the relay's own pages (${ownOrigin(request)}); reload the page and try again`);
  }
}

/** Origin and CSRF token of a cookie-authenticated state change (form field or X-CSRF-Token header). */
export function checkCsrf(request: FastifyRequest, sessionValue: string): void {
  checkSameOrigin(request);
  const body = request.body as Record<string, unknown> | undefined;
  const submitted = request.headers['x-csrf-token'] ?? (typeof body === 'object' && body !== null ? body['csrf'] : undefined);
  if (!csrfMatches(sessionValue, submitted)) {
    throw new NotAllowedError('SVC_ERR_RELAY_CSRF_INVALID', 'the form is missing its CSRF token or it does not match this session; reload the page and try again');
  }
}

/** Sets (value) or clears (undefined) the session cookie. */
export function setSessionCookie(reply: FastifyReply, request: FastifyRequest, value: string | undefined, maxAgeSeconds = 0): void {
  const parts = [
    `${SESSION_COOKIE}=${value ?? ''}`,
    'Path=/',
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${value === undefined ? 0 : Math.max(0, Math.floor(maxAgeSeconds))}`,
  ];
  if (isHttps(request)) parts.push('Secure');
  void reply.header('set-cookie', parts.join('; '));
}
