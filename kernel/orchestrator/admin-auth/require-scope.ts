// Admin authentication in one place. Every operator admin route asks `requireScope('<scope>')`
// for an onRequest hook: it runs before body and query validation, so an unauthenticated caller
// learns nothing about a route's input. Accepted bearers: the bootstrap token
// (`secrets.bootstrapAdminToken`, every scope, no restriction) and minted admin tokens
// (tokens.ts), which hold either every scope (`unrestricted`) or exactly their scopes.
// Refusals: no or unknown token 401, revoked or expired 401, a missing scope 403.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Logger } from 'pino';
import { ADMIN_SCOPES, type AdminScope } from '../../../schemas/admin-tokens.ts';
import { AuthenticationError, NotAllowedError, messageOf } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { findAdminToken, touchAdminToken } from './tokens.ts';

export { ADMIN_SCOPES, type AdminScope };

/** Who passed the check: the bootstrap token, or a minted token by id and name. */
export type AdminPrincipal =
  | { kind: 'bootstrap'; unrestricted: true; scopes: readonly AdminScope[] }
  | { kind: 'token'; id: string; name: string; unrestricted: boolean; scopes: readonly AdminScope[] };

export interface RequireScopeOptions {
  /** Also require a token without scope restrictions (spec: signing keys). */
  unrestricted?: boolean;
}

export interface AdminAuth {
  /**
   * A fastify onRequest hook admitting only a bearer that holds `scope`:
   *   app.get('/api/v1/admin/x', { onRequest: auth.requireScope('config.read'), schema }, handler)
   * Put it in `onRequest` (not in the handler) so 401/403 come before 400.
   */
  requireScope(scope: AdminScope, options?: RequireScopeOptions): onRequestAsyncHookHandler;
  /**
   * For a route whose scope depends on the request (e.g. a redacted export needs less than a
   * plain one): `pick` names the scope for this request, from `scopes` (all it may name; the
   * OpenAPI document lists them as alternatives).
   */
  requireScopeBy(pick: (request: FastifyRequest) => AdminScope, scopes: readonly [AdminScope, ...AdminScope[]]): onRequestAsyncHookHandler;
  /** The principal a request was admitted as (after its requireScope hook ran), else undefined. */
  principalOf(request: FastifyRequest): AdminPrincipal | undefined;
}

export interface AdminAuthOptions {
  pool: DatabasePool;
  /** `secrets.bootstrapAdminToken`; read per request so a config reload applies. */
  bootstrapToken: () => string | undefined;
  logger?: Logger;
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

export function createAdminAuth(options: AdminAuthOptions): AdminAuth {
  const principals = new WeakMap<FastifyRequest, AdminPrincipal>();

  async function authenticate(request: FastifyRequest, scope: AdminScope): Promise<AdminPrincipal> {
    const header = request.headers.authorization;
    const howTo = `with scope ${scope}: the bootstrap token (SVC_BOOTSTRAP_ADMIN_TOKEN) or one from "svc-admin admin-token create"`;
    if (header === undefined || header === '') throw new AuthenticationError('SVC_ERR_ADMIN_UNAUTHORIZED', `this admin route needs "Authorization: Bearer <token>" ${howTo}`, { details: { scope } });
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new AuthenticationError('SVC_ERR_ADMIN_TOKEN_MISSING', `the Authorization header is not "Bearer <token>"; this admin route needs a bearer ${howTo}`, { details: { scope } });
    const token = match[1] as string;
    const bootstrap = options.bootstrapToken();
    if (bootstrap !== undefined && bootstrap !== '' && timingSafeEqual(digest(token), digest(bootstrap))) {
      return { kind: 'bootstrap', unrestricted: true, scopes: ADMIN_SCOPES };
    }
    const stored = await findAdminToken(options.pool, token);
    if (stored === null) throw new AuthenticationError('SVC_ERR_ADMIN_TOKEN_INVALID', `the admin token is not valid: it is neither the bootstrap token (SVC_BOOTSTRAP_ADMIN_TOKEN) nor a token from "svc-admin admin-token create"`, { details: { scope } });
    if (stored.state === 'revoked') throw new AuthenticationError('SVC_ERR_ADMIN_TOKEN_REVOKED', `admin token "${stored.name}" was revoked at ${stored.revokedAt}`, { details: { scope, tokenId: stored.id } });
    if (stored.state === 'expired') throw new AuthenticationError('SVC_ERR_ADMIN_TOKEN_EXPIRED', `admin token "${stored.name}" expired at ${stored.expiresAt}; create a new one`, { details: { scope, tokenId: stored.id } });
    // Not awaited: a failed bookkeeping write must not refuse a valid token.
    void touchAdminToken(options.pool, stored.id).catch((error: unknown) => options.logger?.warn({ err: messageOf(error), tokenId: stored.id }, 'could not record admin token use'));
    return { kind: 'token', id: stored.id, name: stored.name, unrestricted: stored.unrestricted, scopes: stored.unrestricted ? ADMIN_SCOPES : stored.scopes };
  }

  async function admit(request: FastifyRequest, scope: AdminScope, unrestricted: boolean): Promise<void> {
    const principal = await authenticate(request, scope);
    const name = principal.kind === 'bootstrap' ? 'the bootstrap token' : `admin token "${principal.name}"`;
    if (!principal.scopes.includes(scope)) {
      throw new NotAllowedError('SVC_ERR_ADMIN_SCOPE_MISSING', `${name} lacks scope ${scope} (it has ${principal.scopes.join(', ')}); create a token with --scope ${scope}`, {
        details: { scope },
      });
    }
    if (unrestricted && !principal.unrestricted) {
      throw new NotAllowedError('SVC_ERR_ADMIN_TOKEN_RESTRICTED', `this route needs a token without scope restrictions that has ${scope}; ${name} is restricted to ${principal.scopes.join(', ')} (create one with --unrestricted)`, {
        details: { scope },
      });
    }
    principals.set(request, principal);
  }

  const known = (scope: string): void => {
    if (!(ADMIN_SCOPES as readonly string[]).includes(scope)) throw new TypeError(`unknown admin scope ${JSON.stringify(scope)}`);
  };

  return {
    requireScope(scope, routeOptions = {}) {
      known(scope);
      const unrestricted = routeOptions.unrestricted === true;
      const hook: onRequestAsyncHookHandler = async (request) => admit(request, scope, unrestricted);
      return markGuard(hook, { scope, scopes: [scope], unrestricted });
    },
    requireScopeBy(pick, scopes) {
      scopes.forEach(known);
      const hook: onRequestAsyncHookHandler = async (request) => {
        const scope = pick(request);
        if (!scopes.includes(scope)) throw new TypeError(`requireScopeBy picked ${scope}, which is not among ${scopes.join(', ')}`);
        await admit(request, scope, false);
      };
      return markGuard(hook, { scope: scopes[0], scopes, unrestricted: false });
    },
    principalOf: (request) => principals.get(request),
  };
}

/** What a guard hook admits: read by the OpenAPI document (openapi/) to show each admin route's scope. */
export interface AdminGuard {
  /** The scope shown first (the only one for requireScope). */
  scope: AdminScope;
  /** Every scope the route may ask for, as alternatives. */
  scopes: readonly AdminScope[];
  unrestricted: boolean;
}

function markGuard(hook: onRequestAsyncHookHandler, guard: AdminGuard): onRequestAsyncHookHandler {
  Object.defineProperty(hook, 'adminGuard', { value: Object.freeze({ ...guard, scopes: Object.freeze([...guard.scopes]) }) });
  return hook;
}

/** What a requireScope / requireScopeBy hook admits, or undefined for any other hook. */
export function adminScopeOf(hook: unknown): AdminGuard | undefined {
  return typeof hook === 'function' ? (hook as { adminGuard?: AdminGuard }).adminGuard : undefined;
}
