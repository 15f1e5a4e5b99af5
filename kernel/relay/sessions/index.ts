// Browser sessions of the relay's pages (device approval now, the web dashboard next): sign-in with
// a personal access token, the session cookie, CSRF and same-origin checks, the pages' frame.
export { openSession, sessionFor, closeSession, csrfTokenFor, csrfMatches, SESSION_TTL_SECONDS, type Session } from './store.ts';
export { SESSION_COOKIE, cookieOf, sessionCookieOf, isHttps, ownOrigin, checkSameOrigin, checkCsrf, setSessionCookie } from './browser.ts';
export { escapeHtml, html, raw, sendHtml, sendPage, registerStylesheet, localPath, STYLESHEET_PATH, type Html } from './page.ts';
export { registerSessionRoutes, acceptForms, formField, sendErrorPage, FORM_BODY_LIMIT, type SignInProvider } from './routes.ts';
