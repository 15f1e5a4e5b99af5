// Who is calling a dashboard or CLI route: `Authorization: Bearer <token>` with a personal access
// token (`svcpat_…`, scoped to one org) or the org's platform token, or else a browser session
// cookie (kernel/relay/sessions: signed in with a PAT, it acts as that PAT). Missing or unknown →
// 401; a token of another org than the path's → 403. A cookie-authenticated request that changes
// state (anything but GET/HEAD/OPTIONS) must come from the relay's origin and carry the session's
// CSRF token (X-CSRF-Token header or `csrf` form field) → else 403; bearer requests need neither
// (a browser never attaches a bearer token on its own).
import type { FastifyRequest } from 'fastify';
import type { DatabasePool } from '../../services/db/index.ts';
import { AuthenticationError, NotAllowedError } from '../../../core/errors.ts';
import { orgForToken } from '../orgs.ts';
import { PAT_PREFIX, patForToken } from '../pats/index.ts';
import { checkCsrf, sessionCookieOf, sessionFor } from '../sessions/index.ts';

export interface Caller {
  kind: 'pat' | 'platform';
  orgId: string;
  /** Recorded as `triggered_by` / `cancelled_by`: the PAT's user, or `platform-token`. */
  actor: string;
  patId?: string;
  /** How the caller proved it: a bearer token, or a browser session cookie. */
  via: 'bearer' | 'session';
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
}

/** The caller of a request, whatever org it names. */
export async function identify(db: DatabasePool, request: FastifyRequest): Promise<Caller> {
  const token = bearerOf(request);
  if (token === undefined) {
    const cookie = sessionCookieOf(request);
    if (cookie !== undefined && request.headers.authorization === undefined) {
      const session = await sessionFor(db, cookie);
      if (session === undefined) throw new AuthenticationError('SVC_ERR_RELAY_SESSION_INVALID', 'the browser session has ended (signed out, expired, or its token was revoked); sign in again at /signin');
      if (!SAFE_METHODS.has(request.method)) checkCsrf(request, cookie);
      return { kind: 'pat', orgId: session.orgId, actor: session.user, patId: session.patId, via: 'session' };
    }
    throw new AuthenticationError('SVC_ERR_RELAY_AUTH_MISSING', 'send a personal access token as "Authorization: Bearer <token>" (svc login --token <PAT>)');
  }
  if (token.startsWith(PAT_PREFIX)) {
    const pat = await patForToken(db, token);
    if (pat !== undefined) return { kind: 'pat', orgId: pat.orgId, actor: pat.user, patId: pat.id, via: 'bearer' };
  } else {
    const orgId = await orgForToken(db, token);
    if (orgId !== undefined) return { kind: 'platform', orgId, actor: 'platform-token', via: 'bearer' };
  }
  throw new AuthenticationError('SVC_ERR_RELAY_AUTH_INVALID', 'the token is not valid (revoked, expired, rotated or mistyped); log in again ("svc login") or ask an operator for a new one ("svc-admin relay pat create")');
}

/** The caller, who must belong to `orgId`. */
export async function authorize(db: DatabasePool, request: FastifyRequest, orgId: string): Promise<Caller> {
  const caller = await identify(db, request);
  if (caller.orgId !== orgId) {
    throw new NotAllowedError('SVC_ERR_RELAY_AUTH_WRONG_ORG', `this token belongs to org ${caller.orgId}, not ${orgId}; use "svc org use ${caller.orgId}" or a token of ${orgId}`);
  }
  return caller;
}
