// The event log (spec "Webhook delivery record"): every delivery of the org with its outcome
// (matched, no_match, no_lock_file, duplicate, shed, rejected_*, ignored_fork, …), the pipeline
// steps it went through, the runs it started, and its stored payload. Read from the orchestrator
// over the relay socket (`deliveries.list.request`, `delivery.payload.request`), the same way as
// run detail; a delivery sent again under the same id is counted on its one record (`duplicates`).
//   GET /ui/orgs/:orgId/events?status=           → the page
//   GET /ui/orgs/:orgId/events/:deliveryId/payload → the payload, pretty-printed
import type { DeliveryRecord } from '../../../../schemas/http/admin.ts';
import { InputError } from '../../../../core/errors.ts';
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { html, type Html } from '../../sessions/index.ts';
import { sendUiPage, statusBadge, type Frame } from './frame.ts';
import { runsBase } from './pages.ts';
import { uiCaller, uiFailed, unwrapAnswer, type UiOptions } from './common.ts';

const enc = encodeURIComponent;
const OUTCOMES = ['matched', 'no_match', 'no_lock_file', 'duplicate', 'shed', 'rejected_signature', 'rejected_unknown_source', 'rejected_misconfigured', 'lockfile_corrupt', 'ignored_fork', 'skipped', 'approval_command', 'processing'];

function eventsBase(orgId: string): string {
  return `/ui/orgs/${enc(orgId)}/events`;
}

function deliveryRow(frame: Frame, d: DeliveryRecord): Html {
  const ref = [d.ref?.replace(/^refs\/(heads|tags)\//, ''), d.sha?.slice(0, 7)].filter((x) => x !== undefined && x !== null && x !== '').join('@');
  return html`<li class="delivery" data-delivery="${d.deliveryId}" data-outcome="${d.status}">
<details>
<summary><span class="when"><time>${d.receivedAt}</time></span> ${statusBadge(d.status)}${
    d.duplicates > 0 ? html` <span class="status s-duplicate" title="the same delivery id arrived again">duplicate ×${d.duplicates}</span>` : html``
  } <strong>${d.eventName ?? d.eventType ?? '—'}</strong> ${d.repository ?? ''} <span class="mono">${ref}</span></summary>
<dl class="facts">
<dt>Delivery</dt><dd class="mono">${d.deliveryId}</dd>
<dt>Source</dt><dd>${d.providerKind} · ${d.routingKey}</dd>
<dt>Sender</dt><dd>${d.sender ?? '—'}${d.trustTier !== null ? html` (${d.trustTier})` : html``}</dd>
${d.shedReason !== null ? html`<dt>Shed</dt><dd>${d.shedReason}</dd>` : html``}
${d.message !== null ? html`<dt>Message</dt><dd>${d.message}</dd>` : html``}
<dt>Received again</dt><dd>${d.duplicates} time(s)</dd>
<dt>Runs</dt><dd>${d.runIds.length === 0 ? html`none` : d.runIds.map((id) => html`<a class="mono" href="${runsBase(frame.orgId)}/${enc(id)}">${id.slice(0, 8)}</a> `)}</dd>
<dt>Payload</dt><dd>${
    d.payloadOmitted
      ? html`not kept (${d.payloadOmittedReason ?? 'omitted'})`
      : d.payloadKey === null
        ? html`none`
        : html`<a href="${eventsBase(frame.orgId)}/${enc(d.deliveryId)}/payload">view</a> (${d.payloadBytes ?? 0} bytes)`
  }</dd>
</dl>
<ol class="pipeline" aria-label="Pipeline steps">${d.steps.map((s) => html`<li><span class="mono">${s.step}</span> ${statusBadge(s.outcome)}${s.detail !== undefined ? html` <span class="sub">${s.detail}</span>` : html``}</li>`)}</ol>
</details>
</li>`;
}

export function registerEventLog(app: SvcHttpServer, options: UiOptions): void {
  const { db, broker, logger } = options;

  app.get('/ui/orgs/:orgId/events', async (request, reply) => {
    try {
      const { orgId, frame } = await uiCaller(db, request);
      const raw = (request.query as Record<string, unknown>)['status'];
      const status = typeof raw === 'string' && raw !== '' ? raw : undefined;
      if (status !== undefined && !OUTCOMES.includes(status)) throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', `"status" must be one of ${OUTCOMES.join(', ')}`);
      const deliveries = unwrapAnswer(await broker.request(orgId, { type: 'deliveries.list.request', orgId, limit: 100, ...(status !== undefined ? { status } : {}) })).deliveries ?? [];
      const options = [html`<option value="">any</option>`, ...OUTCOMES.map((o) => (o === status ? html`<option selected>${o}</option>` : html`<option>${o}</option>`))];
      return sendUiPage(
        reply,
        200,
        'Event log',
        { ...frame, current: 'events' },
        html`<h1>Event log</h1>
<form class="filters" method="get" action="${eventsBase(orgId)}" role="search"><label for="f-outcome">Outcome</label><select id="f-outcome" name="status">${options}</select><button type="submit">Filter</button></form>
<p class="note">Every webhook delivery of ${orgId}, newest first (the latest 100). Open one for its pipeline steps, runs and payload.</p>
${deliveries.length === 0 ? html`<p class="note">No deliveries.</p>` : html`<ul class="deliveries" id="deliveries">${deliveries.map((d) => deliveryRow(frame, d))}</ul>`}`,
      );
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });

  app.get('/ui/orgs/:orgId/events/:deliveryId/payload', async (request, reply) => {
    try {
      const { orgId, frame } = await uiCaller(db, request);
      const { deliveryId } = request.params as { deliveryId: string };
      if (deliveryId.length === 0 || deliveryId.length > 1000) throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', 'a delivery id is 1 to 1000 characters');
      const payload = unwrapAnswer(await broker.request(orgId, { type: 'delivery.payload.request', orgId, deliveryId })).payload;
      const text = typeof payload === 'string' ? payload : JSON.stringify(payload, null, 2);
      return sendUiPage(
        reply,
        200,
        'Payload',
        { ...frame, current: 'events' },
        html`<p class="crumbs"><a href="${eventsBase(orgId)}">Event log</a> › <span class="mono">${deliveryId}</span></p><h1>Payload</h1><pre class="payload" tabindex="0">${text}</pre>`,
      );
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });
}
