// Browser sign-in of the relay's pages:
//   GET  /signin?next=/path   → the sign-in form (a personal access token)
//   POST /signin              → checks the token, opens a session (HttpOnly, SameSite=Strict cookie,
//                               Secure behind https), redirects (303) to `next` (a local path)
//   POST /signout             → ends the session (CSRF-checked), back to /signin
// Only a personal access token signs in: a session acts as a person (the org's platform token
// has none). Refusals re-show the form with the reason; nothing is stored.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { AuthenticationError, isSvcError } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { mapError, type SvcHttpServer } from '../../services/http/index.ts';
import { PAT_PREFIX, patForToken } from '../pats/index.ts';
import { checkCsrf, checkSameOrigin, sessionCookieOf, setSessionCookie } from './browser.ts';
import { html, localPath, sendPage, type Html } from './page.ts';
import { closeSession, openSession, sessionFor, SESSION_TTL_SECONDS } from './store.ts';
import { recordRelayAudit } from '../audit/record.ts';

/** Form bodies are small: a token and a path. */
export const FORM_BODY_LIMIT = 16 * 1024;

/** Form posts (`application/x-www-form-urlencoded`) of this scope become a plain object of strings. */
export function acceptForms(scope: SvcHttpServer): void {
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
}

export function formField(request: FastifyRequest, name: string): string | undefined {
  const body = request.body as Record<string, unknown> | undefined;
  const value = typeof body === 'object' && body !== null ? body[name] : undefined;
  return typeof value === 'string' ? value : undefined;
}

/**
 * A refusal as a page: the status and code of the one HTTP mapping, the message for people;
 * `render` places the message (default: a heading, the message, `extra`).
 */
export function sendErrorPage(
  reply: FastifyReply,
  request: FastifyRequest,
  logger: Logger,
  error: unknown,
  title: string,
  render: (problem: Html) => Html = (problem) => html`<h1>${title}</h1>\n${problem}`,
): FastifyReply {
  const mapped = mapError(error, { requestId: request.id });
  if (mapped.internal) logger.error({ err: error }, 'relay page failed');
  else if (isSvcError(error)) logger.info({ code: error.code, status: mapped.status }, error.message);
  for (const [name, value] of Object.entries(mapped.headers)) void reply.header(name, value);
  const problem = html`<p class="error" role="alert">${mapped.body.error.message} <span class="note">(${mapped.body.error.code})</span></p>`;
  return sendPage(reply, mapped.status, title, render(problem));
}

/** A configured identity provider, as the sign-in page offers it (kernel/relay/sso). */
export interface SignInProvider {
  id: string;
  displayName: string;
}

function providerLinks(next: string, providers: readonly SignInProvider[]): Html {
  if (providers.length === 0) return html``;
  const items = providers.map((p) => html`<li><a class="provider" href="/signin/${encodeURIComponent(p.id)}?next=${encodeURIComponent(next)}">Sign in with ${p.displayName}</a></li>`);
  return html`<ul class="providers">${items}</ul>
<p class="note">Or, for automation and operators, with a personal access token:</p>`;
}

function signInForm(next: string, problem?: Html, providers: readonly SignInProvider[] = []): Html {
  return html`<h1>Sign in to svc</h1>
${problem ?? html``}
${providerLinks(next, providers)}
<form method="post" action="/signin">
<input type="hidden" name="next" value="${next}">
<label for="token">Personal access token</label>
<input type="password" id="token" name="token" autocomplete="off" required autofocus spellcheck="false">
<p class="note">A token you already have (<code>svcpat_…</code>, from "svc pat create" or your operator). It is checked once and not kept in this browser; the browser gets a session instead.</p>
<div class="actions"><button type="submit">Sign in</button></div>
</form>`;
}

export function registerSessionRoutes(scope: SvcHttpServer, options: { db: DatabasePool; logger: Logger; providers?: readonly SignInProvider[] }): void {
  const { db, logger } = options;
  const providers = options.providers ?? [];

  scope.get('/signin', async (request, reply) => {
    const next = localPath((request.query as Record<string, unknown>)['next']);
    return sendPage(reply, 200, 'Sign in', signInForm(next, undefined, providers));
  });

  scope.post('/signin', async (request, reply) => {
    const next = localPath(formField(request, 'next'));
    try {
      checkSameOrigin(request);
      const token = formField(request, 'token')?.trim() ?? '';
      const pat = token.startsWith(PAT_PREFIX) ? await patForToken(db, token) : undefined;
      if (pat === undefined) {
        throw new AuthenticationError('SVC_ERR_RELAY_SIGNIN_INVALID', 'that is not a valid personal access token (revoked, expired or mistyped); paste a "svcpat_…" token');
      }
      // A browser signing in again leaves no second live session behind.
      await closeSession(db, sessionCookieOf(request));
      const session = await openSession(db, pat.id);
      await recordRelayAudit(db, {
        orgId: pat.orgId,
        actor: pat.person === undefined ? { kind: 'token', id: pat.id, name: pat.user } : { kind: 'person', id: pat.person.id, name: pat.person.login },
        action: 'session.sign_in',
        target: `token:${pat.id}`,
        outcome: 'ok',
        detail: 'signed in with a personal access token',
      });
      setSessionCookie(reply, request, session.value, SESSION_TTL_SECONDS);
      logger.info({ orgId: pat.orgId, user: pat.user, patId: pat.id }, 'browser signed in');
      return reply.code(303).header('location', next).header('cache-control', 'no-store').send();
    } catch (error) {
      return sendErrorPage(reply, request, logger, error, 'Sign in', (problem) => signInForm(next, problem, providers));
    }
  });

  scope.post('/signout', async (request, reply) => {
    const value = sessionCookieOf(request);
    try {
      if (value !== undefined) {
        checkCsrf(request, value);
        const ending = await sessionFor(db, value);
        await closeSession(db, value);
        if (ending !== undefined) {
          await recordRelayAudit(db, {
            orgId: ending.orgId,
            actor: ending.person === undefined ? { kind: 'token', id: ending.patId, name: ending.user } : { kind: 'person', id: ending.person.id, name: ending.person.login },
            action: 'session.sign_out',
            target: ending.person === undefined ? `token:${ending.patId}` : `person:${ending.person.id}`,
            outcome: 'ok',
          });
        }
      }
      setSessionCookie(reply, request, undefined);
      return reply.code(303).header('location', '/signin').send();
    } catch (error) {
      return sendErrorPage(reply, request, logger, error, 'Sign out');
    }
  });
}
