// The audit page (admins; docs/audit.md): the org's audit trail, newest first, read from the
// orchestrator that keeps it (`audit.list.request`), filtered by actor, action or outcome.
//   GET /ui/orgs/:orgId/audit?actor=&action=&outcome=
import { InputError } from '../../../../core/errors.ts';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { html } from '../../sessions/index.ts';
import { uiCaller, uiFailed, unwrapAnswer, type UiOptions } from './common.ts';
import { sendUiPage, statusBadge } from './frame.ts';

const FILTERS = ['actor', 'action', 'outcome'] as const;
const OUTCOMES = ['ok', 'refused', 'failed'] as const;
/** Records one page shows. */
const PAGE_SIZE = 200;

function filtersOf(query: Record<string, unknown>): { actor?: string; action?: string; outcome?: (typeof OUTCOMES)[number] } {
  const unknown = Object.keys(query).filter((k) => !(FILTERS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', `unknown query parameter(s): ${unknown.join(', ')}; the audit page takes ${FILTERS.join(', ')}`);
  const out: { actor?: string; action?: string; outcome?: (typeof OUTCOMES)[number] } = {};
  for (const key of FILTERS) {
    const value = query[key];
    if (value === undefined || value === '') continue;
    if (typeof value !== 'string' || value.length > 200) throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', `"${key}" is one value of at most 200 characters`);
    if (key === 'outcome') {
      if (!(OUTCOMES as readonly string[]).includes(value)) throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', `"outcome" is one of ${OUTCOMES.join(', ')}`);
      out.outcome = value as (typeof OUTCOMES)[number];
    } else if (key === 'action') {
      if (!/^[a-z][a-z0-9_.-]*$/.test(value)) throw new InputError('SVC_ERR_RELAY_QUERY_INVALID', '"action" is an action (run.approve) or an area ending in a dot (run.)');
      out.action = value;
    } else out.actor = value;
  }
  return out;
}

export function registerAuditPage(app: SvcHttpServer, options: UiOptions): void {
  const { db, broker, logger } = options;
  app.get('/ui/orgs/:orgId/audit', async (request, reply) => {
    try {
      const { orgId, frame } = await uiCaller(db, request);
      const filters = filtersOf(request.query as Record<string, unknown>);
      const events = unwrapAnswer(await broker.request(orgId, { type: 'audit.list.request', orgId, limit: PAGE_SIZE, ...filters })).events ?? [];
      const who = (e: (typeof events)[number]) => (e.actor.kind === 'person' ? e.actor.name : `${e.actor.name} (${e.actor.kind})`);
      return sendUiPage(
        reply,
        200,
        'Audit',
        { ...frame, current: 'audit' },
        html`<h1>Audit</h1>
<form method="get" class="filters"><label>Actor <input name="actor" value="${filters.actor ?? ''}"></label> <label>Action <input name="action" value="${filters.action ?? ''}" placeholder="run.approve or run."></label> <label>Outcome <select name="outcome"><option value="">any</option>${OUTCOMES.map((o) => (o === filters.outcome ? html`<option selected>${o}</option>` : html`<option>${o}</option>`))}</select></label> <button type="submit">Filter</button></form>
${
  events.length === 0
    ? html`<p class="note">No audit records match.</p>`
    : html`<div class="table-wrap"><table id="audit"><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Outcome</th><th scope="col">Detail</th></tr></thead><tbody>${events.map(
        (e) =>
          html`<tr data-action="${e.action}" data-outcome="${e.outcome}"><td><time>${e.at}</time></td><td>${who(e)}</td><td class="mono">${e.action}</td><td class="mono">${e.target}</td><td>${statusBadge(e.outcome)}</td><td>${e.detail}</td></tr>`,
      )}</tbody></table></div>${events.length === PAGE_SIZE ? html`<p class="note">The newest ${PAGE_SIZE}; narrow with the filters, or use <code>svc-admin audit list</code>.</p>` : html``}`
}`,
      );
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });
}
