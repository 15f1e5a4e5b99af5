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
import { expandRoles, requireAction, routeAccessOf } from '../people/access.ts';
import { ROLES, isRole, rolesFor, type PersonRef, type Role } from '../people/roles.ts';
import { auditRoleRefusal } from '../audit/refusals.ts';

export interface Caller {
  kind: 'pat' | 'platform';
  orgId: string;
  /** Recorded as `triggered_by` / `cancelled_by`: the PAT's user, or `platform-token`. */
  actor: string;
  patId?: string;
  /** How the caller proved it: a bearer token, or a browser session cookie. */
  via: 'bearer' | 'session';
  /** The person behind the token or session (signed in through a provider); absent otherwise. */
  person?: PersonRef;
  /** Role names the token is narrowed to (absent: unrestricted). */
  scopes?: readonly string[];
  /** Effective roles in `orgId` (after scopes), set by `authorize`. */
  roles?: readonly Role[];
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
      return { kind: 'pat', orgId: session.orgId, actor: session.user, patId: session.patId, via: 'session', ...holder(session) };
    }
    throw new AuthenticationError('SVC_ERR_RELAY_AUTH_MISSING', 'send a personal access token as "Authorization: Bearer <token>" (svc login --token <PAT>)');
  }
  if (token.startsWith(PAT_PREFIX)) {
    const pat = await patForToken(db, token);
    if (pat !== undefined) return { kind: 'pat', orgId: pat.orgId, actor: pat.user, patId: pat.id, via: 'bearer', ...holder(pat) };
  } else {
    const orgId = await orgForToken(db, token);
    if (orgId !== undefined) return { kind: 'platform', orgId, actor: 'platform-token', via: 'bearer' };
  }
  throw new AuthenticationError('SVC_ERR_RELAY_AUTH_INVALID', 'the token is not valid (revoked, expired, rotated or mistyped); log in again ("svc login") or ask an operator for a new one ("svc-admin relay pat create")');
}

function holder(from: { person?: PersonRef; scopes?: string[] }): Pick<Caller, 'person' | 'scopes'> {
  return { ...(from.person !== undefined ? { person: from.person } : {}), ...(from.scopes !== undefined ? { scopes: from.scopes } : {}) };
}

/**
 * The caller's roles in its org (docs/roles.md): the platform token and a token without a person
 * (operator-minted, as before roles) hold every role; a person holds what grants and groups give.
 * Either way a token's scopes narrow them.
 */
export async function effectiveRoles(db: DatabasePool, caller: Caller): Promise<Role[]> {
  const held = expandRoles(caller.person === undefined ? [...ROLES] : await rolesFor(db, caller.person.id, caller.orgId));
  if (caller.scopes === undefined) return held;
  // Scopes are a ceiling: what both the holder's roles and the token's scopes include.
  const allowed = new Set(expandRoles(caller.scopes.filter(isRole)));
  return held.filter((role) => allowed.has(role));
}

/**
 * The caller, who must belong to `orgId` and hold the role the route's action needs. This is the
 * one place roles are enforced: every org route of the API, the dashboard and the relayed actions
 * calls it; the route's action comes from ROUTE_ACCESS (people/access.ts).
 */
export async function authorize(db: DatabasePool, request: FastifyRequest, orgId: string): Promise<Caller> {
  const caller = await identify(db, request);
  if (caller.orgId !== orgId) {
    throw new NotAllowedError('SVC_ERR_RELAY_AUTH_WRONG_ORG', `this token belongs to org ${caller.orgId}, not ${orgId}; use "svc org use ${caller.orgId}" or a token of ${orgId}`);
  }
  const access = routeAccessOf(request);
  // Fail closed: an org route nobody placed in the table is refused until it is.
  if (access === undefined || access === 'public' || access === 'self') throw new Error(`route ${request.method} ${request.routeOptions.url ?? '?'} has no action in ROUTE_ACCESS (kernel/relay/people/access.ts)`);
  const authorized: Caller = { ...caller, roles: await effectiveRoles(db, caller) };
  try {
    requireAction(authorized, access);
  } catch (error) {
    // A change refused for lack of a role is a refusal of note in the audit trail (docs/audit.md).
    if (!SAFE_METHODS.has(request.method)) await auditRoleRefusal(db, authorized, access, request, error);
    throw error;
  }
  return authorized;
}
