// The dashboard's server-rendered pages: every value escaped by the `html` template, links by
// encodeURIComponent. The browser script (browser/dashboard.ts) enhances them: live rows, live
// logs, fetch-submitted actions. Without it the pages still read and the forms still post.
import type { RunArtifact, RunDetail, RunJobOutputs, RunJobView, RunTimeline, RunView } from '../../../../schemas/wire/relay.ts';
import type { RunSummary } from '../../../../schemas/http/run-index.ts';
import { RUN_STATUSES } from '../../../../schemas/http/run-index.ts';
import { html, raw, type Html } from '../../sessions/index.ts';
import { between, csrfField, duration, statusBadge, TERMINAL_STATUSES, type Frame } from './frame.ts';
import { attestationsSection, lineageSection, outputsList } from './run-detail.ts';
import { needsGraph, timelineSection } from './timeline.ts';

const enc = encodeURIComponent;

export function runsBase(orgId: string): string {
  return `/ui/orgs/${enc(orgId)}/runs`;
}

function branchOf(ref: string | null): string {
  if (ref === null) return '—';
  return ref.replace(/^refs\/(heads|tags)\//, '');
}

/** Created until its first job was dispatched (the run's start); while none was: to now, or to its end. */
export function queueMillis(run: RunSummary, now = Date.now()): number | null {
  return between(run.createdAt, run.startedAt ?? run.finishedAt, now);
}

export function runRow(orgId: string, run: RunSummary, now = Date.now()): Html {
  const jobs = Object.entries(run.jobs)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  return html`<tr data-run="${run.runId}">
<td><a href="${runsBase(orgId)}/${enc(run.runId)}">${run.workflow}</a><div class="sub mono">${run.runId.slice(0, 8)}</div></td>
<td>${run.repository}</td>
<td>${branchOf(run.ref)}</td>
<td>${run.eventName ?? '—'}</td>
<td>${statusBadge(run.status)}<div class="sub">${jobs}</div></td>
<td>${run.actor ?? '—'}</td>
<td>${duration(run.startedAt === null ? null : between(run.startedAt, run.finishedAt, now))}</td>
<td class="queued">${duration(queueMillis(run, now))}</td>
</tr>`;
}

export interface RunsFilter {
  status?: string;
  repository?: string;
}

export function runsPage(frame: Frame, runs: RunSummary[], filter: RunsFilter): Html {
  const query = new URLSearchParams();
  if (filter.status !== undefined) query.set('status', filter.status);
  if (filter.repository !== undefined) query.set('repository', filter.repository);
  const statusOptions = [html`<option value="">any</option>`, ...RUN_STATUSES.map((s) => (s === filter.status ? html`<option selected>${s}</option>` : html`<option>${s}</option>`))];
  return html`<h1>Runs</h1>
<form class="filters" method="get" action="${runsBase(frame.orgId)}" role="search">
<label for="f-status">Status</label><select id="f-status" name="status">${statusOptions}</select>
<label for="f-repo">Repository</label><input id="f-repo" name="repository" value="${filter.repository ?? ''}" placeholder="owner/name" spellcheck="false">
<button type="submit">Filter</button>
</form>
<p class="live note" id="live-state" aria-live="polite" data-stream="${runsBase(frame.orgId)}/events?${query.toString()}">Updates live.</p>
<div class="table-wrap"><table class="runs">
<caption class="sr">Runs of ${frame.orgId}, newest first</caption>
<thead><tr><th scope="col">Workflow</th><th scope="col">Repository</th><th scope="col">Branch</th><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Actor</th><th scope="col">Duration</th><th scope="col">Queued</th></tr></thead>
<tbody id="runs-body">${runs.map((r) => runRow(frame.orgId, r))}</tbody>
</table></div>
${runs.length === 0 ? html`<p class="note" id="runs-empty">No runs yet.</p>` : html``}`;
}

function jobSection(job: RunJobView, logsHref: string, outputs: RunJobOutputs | undefined): Html {
  return html`<section class="job" id="job-${job.jobId}" aria-labelledby="jh-${job.jobId}">
<h3 id="jh-${job.jobId}">${job.displayName} ${statusBadge(job.status)}</h3>
<p class="sub">${job.kind} · runs on ${job.runsOn.join(', ') || '—'} · agent ${job.agentId ?? '—'} · attempts ${job.attempts} · ${duration(between(job.startedAt, job.finishedAt))}${
    job.reason !== null ? html` · ${job.reason}` : html``
  }</p>
${
  job.steps.length === 0
    ? html`<p class="note">No steps recorded.</p>`
    : html`<table class="steps"><thead><tr><th scope="col">#</th><th scope="col">Step</th><th scope="col">Status</th><th scope="col">Started</th><th scope="col">Duration</th></tr></thead><tbody>${job.steps.map(
        (s) => html`<tr><td>${s.index}</td><td><a href="${logsHref}?job=${enc(job.displayName)}&amp;step=${enc(s.name)}">${s.name}</a>${
          s.reason !== null ? html`<div class="sub">${s.reason}</div>` : html``
        }</td><td>${statusBadge(s.status)}</td><td><time>${s.startedAt ?? '—'}</time></td><td>${duration(between(s.startedAt, s.finishedAt))}</td></tr>`,
      )}</tbody></table>`
}
${outputsList(outputs)}
</section>`;
}

function actionForm(frame: Frame, run: RunView, action: 'approve' | 'reject' | 'rerun' | 'rerun-failed' | 'cancel', label: string, extra: Html = html``): Html {
  return html`<form method="post" action="${runsBase(frame.orgId)}/${enc(run.runId)}/${action}" class="action" data-action="${action}">${csrfField(frame)}${extra}<button type="submit" class="${action === 'reject' || action === 'cancel' ? 'danger' : ''}">${label}</button></form>`;
}

/** Run detail; `detail` (outputs, lineage, attestations) is undefined when the orchestrator could not give it. */
export function runPage(frame: Frame, run: RunView, artifacts: RunArtifact[] | undefined, detail: RunDetail | undefined, notice: string | undefined, timeline?: RunTimeline): Html {
  const base = runsBase(frame.orgId);
  const logsHref = `${base}/${enc(run.runId)}/logs`;
  const terminal = TERMINAL_STATUSES.has(run.status);
  const actions: Html[] = [];
  if (run.status === 'held') {
    actions.push(
      html`<form method="post" action="${base}/${enc(run.runId)}/approve" class="action" data-action="approve">${csrfField(frame)}<label for="comment">Comment (optional)</label><input id="comment" name="comment" maxlength="2000"><button type="submit">Approve</button></form>`,
      actionForm(frame, run, 'reject', 'Reject'),
    );
  }
  if (!terminal) actions.push(actionForm(frame, run, 'cancel', 'Cancel run'));
  if (terminal) actions.push(actionForm(frame, run, 'rerun', 'Re-run'));
  // Restart from failed jobs: only the jobs that did not complete, and what needs them, run again.
  if (run.status === 'failed' || run.status === 'cancelled') actions.push(actionForm(frame, run, 'rerun-failed', 'Re-run failed jobs'));
  const outputsOf = new Map((detail?.outputs ?? []).map((o) => [o.jobId, o]));
  return html`<div id="run-detail" data-run="${run.runId}" data-status="${run.status}" data-terminal="${terminal ? 'yes' : 'no'}">
<p class="crumbs"><a href="${base}">Runs</a> › ${run.workflow}</p>
<h1>${run.workflow} ${statusBadge(run.status)}</h1>
${notice !== undefined ? html`<p class="notice" role="status">${notice}</p>` : html``}
<p class="flash" id="flash" role="status" aria-live="polite"></p>
<dl class="facts">
<dt>Repository</dt><dd>${run.repository}</dd>
<dt>Branch</dt><dd>${branchOf(run.ref)}</dd>
<dt>Commit</dt><dd class="mono">${run.sha.slice(0, 12)}</dd>
<dt>Event</dt><dd>${run.eventName}</dd>
<dt>Actor</dt><dd>${run.actor}</dd>
<dt>Trust</dt><dd>${run.trustTier}</dd>
<dt>Created</dt><dd><time>${run.createdAt}</time></dd>
<dt>Duration</dt><dd>${duration(run.durationMs ?? between(run.startedAt, run.finishedAt))}</dd>
${run.reason !== null ? html`<dt>Reason</dt><dd>${run.reason}</dd>` : html``}
${run.deliveryId !== null ? html`<dt>Delivery</dt><dd class="mono">${run.deliveryId}</dd>` : html``}
</dl>
<div class="actions">${actions}<a class="button" href="${logsHref}">Logs</a> <a class="button" id="tests-tab" href="${base}/${enc(run.runId)}/tests">Tests</a></div>
<p class="note">A re-run is refused for 5 seconds after the previous one (the server's cooldown).</p>
${lineageSection(frame.orgId, run, detail)}
<h2>Jobs</h2>
${needsGraph(run.jobs)}
${timelineSection(timeline)}
${detail === undefined ? html`<p class="note">Job outputs could not be read.</p>` : html``}
${run.jobs.map((j) => jobSection(j, logsHref, outputsOf.get(j.jobId)))}
<h2>Artifacts</h2>
${
  artifacts === undefined
    ? html`<p class="note">The artifact list could not be read.</p>`
    : artifacts.length === 0
      ? html`<p class="note">No artifacts.</p>`
      : html`<table class="artifacts"><thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Files</th><th scope="col">Digest</th><th scope="col">Expires</th></tr></thead><tbody>${artifacts.map(
          (a) => html`<tr><td>${a.name}</td><td>${a.sizeBytes} B</td><td>${a.fileCount}</td><td class="mono">${a.digest.slice(0, 19)}…</td><td><time>${a.expiresAt}</time></td></tr>`,
        )}</tbody></table><p class="note">Download with <code>svc runs download ${run.runId} NAME</code>.</p>`
}
${attestationsSection(frame.orgId, run, detail)}
</div>`;
}

export function logsPage(frame: Frame, runId: string, status: string): Html {
  const base = runsBase(frame.orgId);
  return html`<p class="crumbs"><a href="${base}">Runs</a> › <a href="${base}/${enc(runId)}">${runId.slice(0, 8)}</a> › Logs</p>
<h1>Logs <span id="log-status">${statusBadge(status)}</span></h1>
<div class="log-tools">
<label for="log-search">Search</label><input id="log-search" type="search" placeholder="text in a line" spellcheck="false">
<button type="button" id="log-prev">Previous</button><button type="button" id="log-next">Next</button>
<span id="log-count" class="note" aria-live="polite"></span>
<label class="inline"><input type="checkbox" id="log-follow" checked> Follow</label>
</div>
<p id="log-state" class="note" aria-live="polite">Loading…</p>
<div id="log" class="log" tabindex="0" role="log" aria-label="Log lines" data-stream="${base}/${enc(runId)}/logs/stream"><div id="log-spacer" class="log-spacer"></div></div>
<noscript><p>The live log needs JavaScript; <code>svc runs logs ${runId}</code> prints it too.</p></noscript>`;
}

export { raw };
