// The agents page: the orchestrator's agents (online, labels, last seen, the job of this org each
// is running) and its identity signing keys (status, custody, created), relayed as `fleet.request`.
//   GET /ui/orgs/:orgId/agents
import type { SvcHttpServer } from '../../../services/http/index.ts';
import { html } from '../../sessions/index.ts';
import { uiCaller, uiFailed, unwrapAnswer, type UiOptions } from './common.ts';
import { sendUiPage, statusBadge } from './frame.ts';
import { runsBase } from './pages.ts';

export function registerFleetPage(app: SvcHttpServer, options: UiOptions): void {
  const { db, broker, logger } = options;
  app.get('/ui/orgs/:orgId/agents', async (request, reply) => {
    try {
      const { orgId, frame } = await uiCaller(db, request);
      const answer = unwrapAnswer(await broker.request(orgId, { type: 'fleet.request', orgId }));
      const agents = answer.agents ?? [];
      const keys = answer.signingKeys ?? [];
      return sendUiPage(
        reply,
        200,
        'Agents',
        { ...frame, current: 'agents' },
        html`<h1>Agents</h1>
${
  agents.length === 0
    ? html`<p class="note">No agent has registered with the orchestrator.</p>`
    : html`<div class="table-wrap"><table id="agents"><thead><tr><th scope="col">Agent</th><th scope="col">State</th><th scope="col">Labels</th><th scope="col">Current job</th><th scope="col">Last seen</th></tr></thead><tbody>${agents.map(
        (a) => html`<tr data-agent="${a.agentId}"><td class="mono">${a.agentId}</td><td>${statusBadge(a.connected ? 'online' : 'offline')}</td><td>${a.labels.join(', ')}</td><td>${
          a.currentJob === null
            ? html`—`
            : html`<a href="${runsBase(orgId)}/${encodeURIComponent(a.currentJob.runId)}">${a.currentJob.job}</a> ${statusBadge(a.currentJob.status)}`
        }</td><td><time>${a.lastSeenAt}</time></td></tr>`,
      )}</tbody></table></div>`
}
<h2>Signing keys</h2>
${
  keys.length === 0
    ? html`<p class="note">No identity signing key yet.</p>`
    : html`<table id="signing-keys"><thead><tr><th scope="col">Key id</th><th scope="col">Status</th><th scope="col">Custody</th><th scope="col">Created</th></tr></thead><tbody>${keys.map(
        (k) => html`<tr><td class="mono">${k.kid}</td><td>${statusBadge(k.status)}</td><td>${k.custody}</td><td><time>${k.createdAt}</time></td></tr>`,
      )}</tbody></table>`
}`,
      );
    } catch (error) {
      return uiFailed(reply, request, logger, error);
    }
  });
}
