// The dashboard's page frame: our own stylesheet and one script (both served by the relay, no
// CDN), a Content-Security-Policy of `default-src 'self'` (no inline script or style anywhere:
// page data travels in data-* attributes), and the navigation of the signed-in org.
import type { FastifyReply } from 'fastify';
import { html, sendHtml, type Html } from '../../sessions/index.ts';
import { formatDuration, millisBetween } from '../../../../core/durations.ts';

export const UI_SCRIPT_PATH = '/ui/static/dashboard.js';
export const UI_STYLESHEET_PATH = '/ui/static/dashboard.css';

const CSP = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export interface Frame {
  orgId: string;
  user: string;
  /** The session's CSRF token for forms; undefined for a bearer caller (no forms needed). */
  csrf: string | undefined;
  /** Which navigation entry is current. */
  current: 'runs' | 'events' | 'agents' | 'tests' | 'audit' | 'logs' | 'none';
}

export function csrfField(frame: Frame): Html {
  return frame.csrf === undefined ? html`` : html`<input type="hidden" name="csrf" value="${frame.csrf}">`;
}

export function sendUiPage(reply: FastifyReply, status: number, title: string, frame: Frame, body: Html): FastifyReply {
  const base = `/ui/orgs/${encodeURIComponent(frame.orgId)}`;
  const nav = (key: Frame['current'], href: string, label: string) =>
    key === frame.current ? html`<a href="${href}" aria-current="page">${label}</a>` : html`<a href="${href}">${label}</a>`;
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · svc</title>
<link rel="stylesheet" href="${UI_STYLESHEET_PATH}">
<script type="module" src="${UI_SCRIPT_PATH}"></script>
</head>
<body data-org="${frame.orgId}" data-csrf="${frame.csrf ?? ''}">
<a class="skip" href="#content">Skip to content</a>
<header class="top">
<nav aria-label="Main"><strong class="brand">svc</strong> <span class="org">${frame.orgId}</span>
${nav('runs', `${base}/runs`, 'Runs')} ${nav('events', `${base}/events`, 'Event log')} ${nav('agents', `${base}/agents`, 'Agents')} ${nav('tests', `${base}/tests`, 'Tests')} ${nav('audit', `${base}/audit`, 'Audit')} ${nav('logs', `${base}/logs/search`, 'Log search')}</nav>
<form method="get" action="${base}/logs/search" class="log-search-box" role="search"><input type="search" name="q" placeholder="Search logs" aria-label="Search logs" minlength="3" maxlength="200" required></form>
<div class="who"><span>${frame.user}</span>${
    frame.csrf === undefined ? html`` : html` <form method="post" action="/signout"><input type="hidden" name="csrf" value="${frame.csrf}"><button type="submit" class="link">Sign out</button></form>`
  }</div>
</header>
<main id="content" tabindex="-1">
${body}
</main>
</body>
</html>
`;
  return sendHtml(reply, status, CSP, page);
}

/** A duration as a person reads it ("812ms", "4.2s", "1m 05s"); "—" when unknown. */
export const duration = (ms: number | null | undefined): string => formatDuration(ms);

export const between = millisBetween;

export function statusBadge(status: string): Html {
  return html`<span class="status s-${status.replace(/[^a-z_]/g, '')}">${status}</span>`;
}

export const TERMINAL_STATUSES = new Set(['completed', 'failed', 'cancelled', 'skipped', 'rejected', 'expired', 'timed_out', 'error']);
