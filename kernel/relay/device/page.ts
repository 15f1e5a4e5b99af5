// The device approval page (`svc login` opens it; `svc login --device` prints its address):
//   GET  /device?user_code=…  → signed in: the code (typed, or filled in from the link) with
//                               Approve and Deny; not signed in: 303 to /signin?next=…
//   POST /device              → { csrf, user_code, decision: approve | deny }, session + CSRF +
//                               same-origin checked; approve lets the waiting CLI's next poll get
//                               a new token of the signed-in user and org
// The only value of any secrecy on the page is the user code the person is confirming; the CSRF
// token is derived one-way from the session (kernel/relay/sessions/store.ts).
import type { Logger } from 'pino';
import { AuthenticationError, InputError, RateLimitedError } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { TokenBuckets } from '../../webhook/rate-limiter.ts';
import { checkCsrf, csrfTokenFor, formField, html, sendErrorPage, sendPage, sessionCookieOf, sessionFor, type Html, type Session } from '../sessions/index.ts';
import { decideUserCode, normalizeUserCode } from './store.ts';

/** Approve/deny posts per client address and minute: user codes are short, guessing is slow. */
export const DEVICE_DECISIONS_PER_IP_RPM = 30;

function signedInBar(session: Session, csrf: string): Html {
  return html`<header>
<p class="note">Signed in as <strong>${session.user}</strong> (org ${session.orgId})</p>
<form method="post" action="/signout"><input type="hidden" name="csrf" value="${csrf}"><button type="submit">Sign out</button></form>
</header>`;
}

function approvalForm(session: Session, csrf: string, userCode: string): Html {
  return html`${signedInBar(session, csrf)}
<h1>Log in the svc CLI</h1>
<p>Check that the code below is the one your terminal shows. Approving gives that terminal a new personal access token of <strong>${session.user}</strong> in org <strong>${session.orgId}</strong>.</p>
<form method="post" action="/device">
<input type="hidden" name="csrf" value="${csrf}">
<label for="user_code">Code shown by "svc login"</label>
<input type="text" id="user_code" name="user_code" class="code" value="${userCode}" required autocomplete="off" autocapitalize="characters" spellcheck="false" inputmode="text" placeholder="BCDF-GHJK" aria-describedby="code-help">
<p id="code-help" class="note">8 letters; dashes and case do not matter.</p>
<div class="actions">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</div>
</form>`;
}

export function registerDevicePage(scope: SvcHttpServer, options: { db: DatabasePool; logger: Logger }): void {
  const { db, logger } = options;
  const buckets = new TokenBuckets(10_000);

  scope.get('/device', async (request, reply) => {
    const given = (request.query as Record<string, unknown>)['user_code'];
    const userCode = normalizeUserCode(given) ?? '';
    const cookie = sessionCookieOf(request);
    const session = await sessionFor(db, cookie);
    if (session === undefined || cookie === undefined) {
      const next = userCode === '' ? '/device' : `/device?user_code=${encodeURIComponent(userCode)}`;
      return reply.code(303).header('location', `/signin?next=${encodeURIComponent(next)}`).header('cache-control', 'no-store').send();
    }
    return sendPage(reply, 200, 'Approve svc login', approvalForm(session, csrfTokenFor(cookie), userCode));
  });

  scope.post('/device', async (request, reply) => {
    const cookie = sessionCookieOf(request);
    try {
      const wait = buckets.take(request.ip, DEVICE_DECISIONS_PER_IP_RPM, Date.now());
      if (wait > 0) throw new RateLimitedError('SVC_ERR_RELAY_DEVICE_RATE_LIMITED', `too many approvals from this address; retry in ${wait} s`, wait);
      const session = await sessionFor(db, cookie);
      if (session === undefined || cookie === undefined) {
        throw new AuthenticationError('SVC_ERR_RELAY_SESSION_INVALID', 'sign in first: the browser session is missing or has ended (signed out, expired, or its token was revoked)');
      }
      checkCsrf(request, cookie);
      const decision = formField(request, 'decision');
      if (decision !== 'approve' && decision !== 'deny') throw new InputError('SVC_ERR_RELAY_DEVICE_DECISION_INVALID', 'press Approve or Deny (decision must be "approve" or "deny")');
      await decideUserCode(db, formField(request, 'user_code') ?? '', decision, session.patId);
      logger.info({ orgId: session.orgId, user: session.user, decision }, 'device login decided');
      const body =
        decision === 'approve'
          ? html`<h1>Approved</h1><p role="status">The svc CLI is logged in as <strong>${session.user}</strong> (org ${session.orgId}). Return to your terminal; you can close this page.</p>`
          : html`<h1>Denied</h1><p role="status">The login was refused; the terminal that asked gets no token.</p>`;
      return sendPage(reply, 200, decision === 'approve' ? 'Approved' : 'Denied', body);
    } catch (error) {
      const links = html`<p><a href="/device">Back</a> · <a href="/signin?next=%2Fdevice">Sign in</a></p>`;
      return sendErrorPage(reply, request, logger, error, 'Approve svc login', (problem) => html`<h1>Approve svc login</h1>\n${problem}\n${links}`);
    }
  });
}
