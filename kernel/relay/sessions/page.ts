// The relay's few HTML pages share this frame: one stylesheet of our own (no CDN, no script),
// a strict Content-Security-Policy, and escaping for every value put into the markup.
import type { FastifyReply } from 'fastify';
import type { SvcHttpServer } from '../../services/http/index.ts';

export const STYLESHEET_PATH = '/static/relay.css';

const STYLESHEET = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.5; }
body { margin: 0 auto; max-width: 32rem; padding: 1.5rem 1rem; }
h1 { font-size: 1.4rem; }
label { display: block; font-weight: 600; margin: 1rem 0 0.25rem; }
input[type=text], input[type=password] { box-sizing: border-box; width: 100%; font: inherit; padding: 0.5rem; }
.code { font-family: ui-monospace, monospace; font-size: 1.6rem; letter-spacing: 0.15em; }
.actions { display: flex; flex-wrap: wrap; gap: 0.75rem; margin-top: 1.25rem; }
button { font: inherit; padding: 0.5rem 1.25rem; cursor: pointer; }
button:focus-visible, input:focus-visible, a:focus-visible { outline: 3px solid #2a6fdb; outline-offset: 2px; }
.error { border-left: 4px solid #c0392b; padding-left: 0.75rem; }
.note { color: #57606a; font-size: 0.9rem; }
@media (prefers-color-scheme: dark) { .note { color: #9da7b3; } }
header { display: flex; justify-content: space-between; align-items: center; gap: 1rem; flex-wrap: wrap; }
header form { margin: 0; }
.providers { list-style: none; padding: 0; }
.providers a { display: block; text-align: center; padding: 0.6rem 1rem; margin: 0.5rem 0; border: 1px solid currentColor; border-radius: 4px; text-decoration: none; font-weight: 600; }
`;

/** Escapes text for HTML element content and double-quoted attributes. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** A tagged template whose interpolations are escaped unless wrapped by `raw`. */
export interface Html {
  readonly html: string;
}
export function raw(html: string): Html {
  return { html };
}
export function html(strings: TemplateStringsArray, ...values: Array<string | number | Html | Html[]>): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    const text = Array.isArray(value) ? value.map((v) => v.html).join('') : typeof value === 'object' ? value.html : escapeHtml(String(value));
    out += text + (strings[i + 1] ?? '');
  });
  return { html: out };
}

export function sendPage(reply: FastifyReply, status: number, title: string, body: Html): FastifyReply {
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · svc</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
  return sendHtml(reply, status, "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'", page);
}

/** Every relay HTML page: its policy, never framed or cached, never sniffed as something else. */
export function sendHtml(reply: FastifyReply, status: number, contentSecurityPolicy: string, page: Html): FastifyReply {
  return reply
    .code(status)
    .header('content-security-policy', contentSecurityPolicy)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin')
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(page.html);
}

export function registerStylesheet(app: SvcHttpServer): void {
  app.get(STYLESHEET_PATH, async (_request, reply) => reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8').send(STYLESHEET));
}

/** A `next` target of a sign-in: a path of this relay only (no scheme, no other host). */
export function localPath(value: unknown, fallback = '/device'): string {
  if (typeof value !== 'string' || value.length > 500 || !value.startsWith('/') || value.startsWith('//') || value.includes('\\') || /[\x00-\x1f]/.test(value)) return fallback;
  return value;
}
