// The dashboard's log search (docs/log-search.md): the search box in every page's header and
//   GET /ui/orgs/:orgId/logs/search?q=&repository=&branch=&workflow=&job=&status=&since=&until=
// relayed as one `logs.search.request`. Each matching line is shown with its run, job and step,
// the lines around it, and a link that opens the log viewer at it (`?job=&step=&find=`). A
// refused query (empty, too short for the index, a bad date) is shown above the form, 400.
import type { FastifyRequest } from 'fastify';
import { isSvcError } from '../../../../core/errors.ts';
import { LOG_SEARCH_DEFAULT_LIMIT, toLogSearchQuery, type LogSearchInput } from '../../../../core/log-search.ts';
import type { LogSearchAnswer, LogSearchHit } from '../../../../schemas/wire/relay.ts';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { html, type Html } from '../../sessions/index.ts';
import { askLogSearch } from '../log-search-routes.ts';
import { uiCaller, uiFailed, type UiOptions } from './common.ts';
import { sendUiPage, statusBadge, type Frame } from './frame.ts';
import { runsBase } from './pages.ts';

const enc = encodeURIComponent;
const FIELDS = ['q', 'repository', 'branch', 'workflow', 'job', 'status', 'since', 'until'] as const;
const STATUSES = ['', 'completed', 'failed', 'cancelled', 'running', 'queued', 'held', 'skipped'];
/** The log viewer's `find` is matched within the step; the line's own text (cut) lands on it. */
const FIND_MAX = 200;
/** Colour and cursor escapes (SGR and other CSI sequences): the page shows, and the viewer finds, the plain text. */
const plain = (text: string): string => text.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]/g, '');

export const logSearchPath = (orgId: string): string => `/ui/orgs/${enc(orgId)}/logs/search`;

type Form = Partial<Record<(typeof FIELDS)[number], string>>;

function formOf(request: FastifyRequest): Form {
  const raw = request.query as Record<string, unknown>;
  const form: Form = {};
  for (const key of FIELDS) {
    const value = raw[key];
    if (typeof value === 'string' && value !== '') form[key] = value.slice(0, 1000);
  }
  return form;
}

function searchForm(orgId: string, form: Form): Html {
  const field = (key: Exclude<(typeof FIELDS)[number], 'q' | 'status'>, label: string, hint = '') =>
    html`<label>${label} <input name="${key}" value="${form[key] ?? ''}" maxlength="300"${hint === '' ? html`` : html` placeholder="${hint}"`}></label>`;
  return html`<form method="get" action="${logSearchPath(orgId)}" class="filters" id="log-search-form" role="search">
<label>Text <input type="search" name="q" value="${form.q ?? ''}" required maxlength="200" size="40" autofocus></label>
${field('repository', 'Repository', 'owner/name')} ${field('branch', 'Branch')} ${field('workflow', 'Workflow')} ${field('job', 'Job')}
<label>Status <select name="status">${STATUSES.map((s) => html`<option value="${s}"${(form.status ?? '') === s ? html` selected` : html``}>${s === '' ? 'any' : s}</option>`)}</select></label>
${field('since', 'Since', '7d or 2026-12-01')} ${field('until', 'Until', '2026-12-02')}
<button type="submit">Search</button></form>`;
}

function hitRow(frame: Frame, hit: LogSearchHit): Html {
  const step = hit.step === '' ? '' : `&step=${enc(hit.step)}`;
  const href = `${runsBase(frame.orgId)}/${enc(hit.runId)}/logs?job=${enc(hit.job)}${step}&find=${enc(plain(hit.text).slice(0, FIND_MAX))}`;
  const branch = hit.ref === null ? '' : hit.ref.replace(/^refs\/heads\//, '');
  return html`<li class="log-hit" data-run="${hit.runId}" data-job="${hit.jobId}">
<div>${statusBadge(hit.runStatus)} <a href="${runsBase(frame.orgId)}/${enc(hit.runId)}">${hit.workflow}</a> <span class="mono">${hit.runId.slice(0, 8)}</span> · ${hit.repository}${branch === '' ? html`` : html` · ${branch}`} · ${hit.job}${hit.step === '' ? html`` : html` › ${hit.step}`} · <span class="note">${hit.runCreatedAt}</span> · <a class="log-hit-link" href="${href}">open in log</a></div>
<pre class="log">${hit.before.map((l) => html`<span class="ctx">${plain(l)}</span>\n`)}<mark>${plain(hit.text)}</mark>${hit.after.map((l) => html`\n<span class="ctx">${plain(l)}</span>`)}</pre></li>`;
}

export function logSearchPage(frame: Frame, form: Form, answer: LogSearchAnswer | undefined, problem: string | undefined): Html {
  const results =
    answer === undefined
      ? html``
      : answer.hits.length === 0
        ? html`<p id="log-search-none">No line contains "${form.q ?? ''}".</p>`
        : html`<p id="log-search-count">${answer.hits.length} line(s)${answer.more ? html`; more match: narrow the search` : html``} <span class="note">(${answer.tookMs} ms)</span></p>
<ol id="log-search-results">${answer.hits.map((h) => hitRow(frame, h))}</ol>`;
  return html`<h1>Log search</h1>
<p class="note">A line matches when it contains the text, ignoring case (at least 3 letters or digits in a row). Newest runs first; at most ${LOG_SEARCH_DEFAULT_LIMIT} lines.</p>
${problem === undefined ? html`` : html`<p class="error" id="log-search-error" role="alert">${problem}</p>`}
${searchForm(frame.orgId, form)}
${results}`;
}

export function registerLogSearchPage(app: SvcHttpServer, options: UiOptions): void {
  const { db, broker, logger } = options;
  app.get('/ui/orgs/:orgId/logs/search', async (request, reply) => {
    try {
      const { orgId, frame } = await uiCaller(db, request);
      const form = formOf(request);
      const page = { ...frame, current: 'logs' as const };
      if (form.q === undefined) return sendUiPage(reply, 200, 'Log search', page, logSearchPage(page, form, undefined, undefined));
      let query;
      try {
        query = toLogSearchQuery({ ...form, status: form.status as LogSearchInput['status'] });
      } catch (error) {
        if (!isSvcError(error) || error.kind !== 'input') throw error;
        return sendUiPage(reply, 400, 'Log search', page, logSearchPage(page, form, undefined, error.message));
      }
      return sendUiPage(reply, 200, `Log search: ${query.text.slice(0, 60)}`, page, logSearchPage(page, form, await askLogSearch(broker, orgId, query), undefined));
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });
}
