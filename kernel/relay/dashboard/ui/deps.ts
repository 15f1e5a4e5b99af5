// What the dashboard pages take from the relay's browser sessions (kernel/relay/sessions, which
// owns sign-in, cookies and CSRF) and from the dashboard's caller check.
export { csrfTokenFor, formField, html, sessionCookieOf } from '../../sessions/index.ts';
export { identify } from '../auth.ts';
