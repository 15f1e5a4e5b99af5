// Sign-in through an identity provider (docs/sso.md):
//   GET /signin/:provider?next=&org=   → 303 to the provider (authorization code flow, PKCE S256,
//                                       state and nonce); the state also goes into a short cookie
//                                       (SameSite=Lax: the provider's redirect back is cross-site)
//   GET /signin/:provider/callback     → checks state (cookie and stored), exchanges the code, checks
//                                       the ID token, records the person and their groups, opens a
//                                       session in the org they hold a role in (a page lets them
//                                       choose when several), then goes on to `next`
// The session is the same `svc_session` as a PAT sign-in; it acts as a token of the person
// (named "browser sign-in"), so roles and revocation work the same everywhere.
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import * as client from 'openid-client';
import { Type } from 'typebox';
import { AuthenticationError, NotAllowedError, NotFoundError, RateLimitedError } from '../../../core/errors.ts';
import { TokenBuckets } from '../../webhook/rate-limiter.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { createGrant, mintPersonToken, sealTokens, upsertPerson } from '../people/store.ts';
import { orgsOf } from '../people/roles.ts';
import { closeSession, cookieOf, html, isHttps, localPath, openSession, ownOrigin, sendErrorPage, sendHtml, sendPage, sessionCookieOf, setSessionCookie, SESSION_TTL_SECONDS } from '../sessions/index.ts';
import { SignInRefused, type Sso } from './index.ts';
import { recordRelayAudit } from '../audit/record.ts';

const STATE_COOKIE = 'svc_sso_state';
const LOGIN_TTL_SECONDS = 600;
/** Sign-ins a client address may start per minute, and sign-ins waiting at once: a flood of starts stores nothing more. */
export const SIGNIN_STARTS_PER_IP_RPM = 30;
export const MAX_PENDING_SIGNINS = 10_000;
export const BROWSER_TOKEN_NAME = 'browser sign-in';

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function stateCookie(reply: FastifyReply, request: FastifyRequest, value: string | undefined): void {
  const parts = [`${STATE_COOKIE}=${value ?? ''}`, 'Path=/signin/', 'HttpOnly', 'SameSite=Lax', `Max-Age=${value === undefined ? 0 : LOGIN_TTL_SECONDS}`];
  if (isHttps(request)) parts.push('Secure');
  void reply.header('set-cookie', parts.join('; '));
}

export function callbackUrlOf(sso: Sso, request: FastifyRequest, providerId: string): string {
  return `${sso.publicUrl ?? ownOrigin(request)}/signin/${providerId}/callback`;
}

const LoginRow = Type.Object({ provider: Type.String(), nonce: Type.String(), code_verifier: Type.String(), next_path: Type.String(), org_id: Type.Union([Type.String(), Type.Null()]) });

function providerOf(sso: Sso, request: FastifyRequest) {
  const { provider } = request.params as { provider: string };
  const found = sso.providers.get(provider);
  if (found === undefined) throw new NotFoundError('SVC_ERR_RELAY_SSO_PROVIDER_UNKNOWN', `no sign-in provider "${provider.slice(0, 40)}" is configured; choose one on /signin`);
  return found;
}

/** A page that moves on to `next` from the relay's own origin (so the SameSite=Strict session cookie goes with it). */
function continuePage(reply: FastifyReply, next: string, who: string, orgId: string): FastifyReply {
  const body = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0;url=${next}"><title>Signed in · svc</title><link rel="stylesheet" href="/static/relay.css"></head>
<body><main><h1>Signed in</h1><p>Signed in as ${who} in org ${orgId}. <a href="${next}">Continue</a></p></main></body></html>
`;
  return sendHtml(reply, 200, "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'", body);
}

export function registerSsoRoutes(scope: SvcHttpServer, options: { db: DatabasePool; logger: Logger; sso: Sso }): void {
  const { db, logger, sso } = options;
  const starts = new TokenBuckets(10_000);

  scope.get('/signin/:provider', async (request, reply) => {
    try {
      const provider = providerOf(sso, request);
      const wait = starts.take(request.ip, SIGNIN_STARTS_PER_IP_RPM, Date.now());
      if (wait > 0) throw new RateLimitedError('SVC_ERR_RELAY_SSO_RATE_LIMITED', `too many sign-ins started from this address; retry in ${wait} s`, wait);
      const query = request.query as Record<string, unknown>;
      const next = localPath(query['next'], '/ui');
      const org = typeof query['org'] === 'string' && /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(query['org']) ? query['org'] : null;
      const state = client.randomState();
      const nonce = client.randomNonce();
      const verifier = client.randomPKCECodeVerifier();
      const url = await provider.authorizationUrl({ redirectUri: callbackUrlOf(sso, request, provider.id), state, nonce, codeChallenge: await client.calculatePKCECodeChallenge(verifier) });
      await db.query(sql.unsafe`delete from relay_sso_logins where expires_at < now()`);
      const pending = await db.oneFirst(sqlTyped(Type.Object({ n: Type.Number() }))`select count(*)::int as n from relay_sso_logins`);
      if (pending >= MAX_PENDING_SIGNINS) throw new RateLimitedError('SVC_ERR_RELAY_SSO_RATE_LIMITED', `${MAX_PENDING_SIGNINS} sign-ins are already waiting for their provider; retry in a minute`, 60);
      await db.query(sql.unsafe`
        insert into relay_sso_logins (state_sha256, provider, nonce, code_verifier, next_path, org_id, expires_at)
        values (${sql.binary(sha256(state))}, ${provider.id}, ${nonce}, ${verifier}, ${next}, ${org}, now() + make_interval(secs => ${LOGIN_TTL_SECONDS}))`);
      stateCookie(reply, request, state);
      return reply.code(303).header('location', url.href).header('cache-control', 'no-store').send();
    } catch (error) {
      return sendErrorPage(reply, request, logger, error, 'Sign in');
    }
  });

  scope.get('/signin/:provider/callback', async (request, reply) => {
    try {
      const provider = providerOf(sso, request);
      const query = request.query as Record<string, unknown>;
      const state = typeof query['state'] === 'string' ? query['state'] : '';
      const fail = (reason: string): never => {
        throw new AuthenticationError('SVC_ERR_RELAY_SSO_CALLBACK_INVALID', `the sign-in with ${provider.displayName} could not be completed: ${reason}; start again from /signin`);
      };
      // The state must be the one this browser started with (login CSRF) and a live, unused one.
      if (state === '' || cookieOf(request, STATE_COOKIE) !== state) fail('this browser did not start this sign-in (state does not match)');
      const login = await db.maybeOne(sqlTyped(LoginRow)`
        delete from relay_sso_logins where state_sha256 = ${sql.binary(sha256(state))} and expires_at > now()
        returning provider, nonce, code_verifier, next_path, org_id`);
      stateCookie(reply, request, undefined);
      if (login === null || login.provider !== provider.id) return fail('the sign-in expired or was already used');
      const redirectUri = callbackUrlOf(sso, request, provider.id);
      const callbackUrl = new URL(`${redirectUri}${request.url.slice(request.url.indexOf('?') === -1 ? request.url.length : request.url.indexOf('?'))}`);
      let done;
      try {
        done = await provider.complete({ callbackUrl, redirectUri, state, nonce: login.nonce, verifier: login.code_verifier });
      } catch (error) {
        if (error instanceof SignInRefused) return fail(error.message);
        throw error;
      }
      const person = await upsertPerson(db, provider.id, done.person);
      const grantId = await createGrant(db, person.id, provider.id, sealTokens(sso.secretOf(provider.id), provider.id, done.tokens));
      const orgs = await orgsOf(db, person.id);
      logger.info({ provider: provider.id, personId: person.id, login: person.login, groups: person.groups.length, orgs }, 'person signed in through a provider');
      if (orgs.length === 0) {
        throw new NotAllowedError('SVC_ERR_RELAY_SSO_NO_ROLE', `${person.login} signed in with ${provider.displayName} but has no role in any org; ask an admin to grant one or to map one of your groups (${person.groups.join(', ') || 'none'})`);
      }
      const orgId = login.org_id !== null && orgs.includes(login.org_id) ? login.org_id : orgs.length === 1 ? orgs[0]! : undefined;
      if (orgId === undefined) {
        const links = orgs.map((o) => html`<li><a href="/signin/${provider.id}?org=${encodeURIComponent(o)}&amp;next=${encodeURIComponent(login.next_path)}">${o}</a></li>`);
        return sendPage(reply, 200, 'Choose an org', html`<h1>Choose an org</h1><p>${person.displayName}, you have a role in several orgs. Sign in to:</p><ul>${links}</ul>`);
      }
      const token = await mintPersonToken(db, { orgId, person, name: BROWSER_TOKEN_NAME, ttlSeconds: SESSION_TTL_SECONDS, grantId, refresh: false });
      await closeSession(db, sessionCookieOf(request));
      const session = await openSession(db, token.id);
      // The audit trail (docs/audit.md); `person` re-sends their directory entry (groups may have changed).
      await recordRelayAudit(db, {
        orgId,
        actor: { kind: 'person', id: person.id, name: person.login },
        action: 'session.sign_in',
        target: `person:${person.id}`,
        outcome: 'ok',
        detail: `${person.displayName} signed in with ${provider.displayName} (groups: ${person.groups.join(', ') || 'none'})`,
        person: person.id,
      });
      setSessionCookie(reply, request, session.value, SESSION_TTL_SECONDS);
      return continuePage(reply, login.next_path, person.displayName, orgId);
    } catch (error) {
      stateCookie(reply, request, undefined);
      return sendErrorPage(reply, request, logger, error, 'Sign in');
    }
  });
}
