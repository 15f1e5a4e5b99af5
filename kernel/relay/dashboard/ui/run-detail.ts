// The parts of the run page read with `run.detail.request` (kernel/orchestrator/runs/api/detail.ts):
// a job's outputs as stored (secrets already masked `***` by the agent), the run's attestations
// with the orchestrator's verdict and a download link for each bundle, and the whole re-run
// lineage as a chain with this run marked. Every value is escaped by the `html` template.
import type { RunAttestation, RunDetail, RunJobOutputs, RunView } from '../../../../schemas/wire/relay.ts';
import { html, type Html } from '../../sessions/index.ts';
import { statusBadge } from './frame.ts';

const enc = encodeURIComponent;
/** A value longer than this is cut on the page (the whole value stays in the orchestrator's records). */
const MAX_SHOWN_VALUE = 500;

export function runHref(orgId: string, runId: string): string {
  return `/ui/orgs/${enc(orgId)}/runs/${enc(runId)}`;
}

function shownValue(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > MAX_SHOWN_VALUE ? `${text.slice(0, MAX_SHOWN_VALUE)}…` : text;
}

/** One job's outputs, or nothing when it stored none. */
export function outputsList(outputs: RunJobOutputs | undefined): Html {
  if (outputs === undefined) return html``;
  const entries = Object.entries(outputs.outputs);
  if (entries.length === 0) return html`<p class="note outputs-empty">Outputs: none (the outputs function returned an empty object).</p>`;
  return html`<h4>Outputs</h4><dl class="outputs" data-job="${outputs.jobId}">${entries.map(([key, value]) => html`<dt class="mono">${key}</dt><dd><code>${shownValue(value)}</code></dd>`)}</dl>`;
}

const BADGE_LABEL: Record<RunAttestation['verification']['badge'], string> = {
  verified: 'verified',
  not_verifiable: 'not verifiable',
  revoked_key: 'revoked key',
};

export function verificationBadge(verification: RunAttestation['verification']): Html {
  return html`<span class="status s-${verification.badge}">${BADGE_LABEL[verification.badge]}</span>`;
}

function attestationRow(orgId: string, runId: string, a: RunAttestation): Html {
  const v = a.verification;
  const signed = a.status === 'pending' ? html`pending` : html`${a.origin ?? '—'}${a.kid !== null ? html`<div class="sub">key <span class="mono" title="${a.kid}">${a.kid.slice(0, 12)}…</span></div>` : html``}`;
  return html`<tr data-attestation="${a.attestationId}" data-badge="${v.badge}">
<td class="mono">${a.subject}</td>
<td class="mono" title="${a.sha256}">${a.sha256.slice(0, 12)}…</td>
<td><a href="#job-${a.jobId}">${a.job}</a></td>
<td>${signed}<div class="sub"><time>${a.createdAt}</time></div></td>
<td>${verificationBadge(v)}<div class="sub">${v.reason !== null ? html`<span class="mono">${v.reason}</span>: ` : html``}${v.message}</div></td>
<td>${
    a.status === 'fulfilled'
      ? html`<a href="${runHref(orgId, runId)}/attestations/${enc(a.attestationId)}" download="${a.bundleName}">${a.bundleName}</a>`
      : html`<span class="note">not signed yet</span>`
  }</td>
</tr>`;
}

export function attestationsSection(orgId: string, run: RunView, detail: RunDetail | undefined): Html {
  const body =
    detail === undefined
      ? html`<p class="note">The attestations could not be read.</p>`
      : detail.attestations.length === 0
        ? html`<p class="note">No attestations (a step signs provenance with <code>ctx.attestProvenance</code>).</p>`
        : html`<div class="table-wrap"><table class="attestations" id="attestations"><thead><tr><th scope="col">Artifact</th><th scope="col">SHA-256</th><th scope="col">Job</th><th scope="col">Signed</th><th scope="col">Verification</th><th scope="col">Bundle</th></tr></thead><tbody>${detail.attestations.map(
            (a) => attestationRow(orgId, run.runId, a),
          )}</tbody></table></div><p class="note">Verified by the orchestrator against its own signing keys, as <code>svc verify-attestation --issuer</code> does; check a downloaded bundle yourself with <code>svc verify-attestation FILE --bundle FILE.svc.json</code>.</p>`;
  return html`<h2 id="attestations-heading">Attestations</h2>${body}`;
}

/** The lineage as it was shown before `run.detail` existed: the direct parent and the original. */
function shortLineage(orgId: string, run: RunView): Html[] {
  return [
    run.parentRunId !== null ? html`<li>Re-run of <a href="${runHref(orgId, run.parentRunId)}">${run.parentRunId}</a></li>` : html``,
    run.originalRunId !== null && run.originalRunId !== run.parentRunId ? html`<li>Original run <a href="${runHref(orgId, run.originalRunId)}">${run.originalRunId}</a></li>` : html``,
  ];
}

/** Original → re-run → re-run …, oldest first, each linked, this run marked (aria-current). */
function lineageChain(orgId: string, run: RunView, detail: RunDetail): Html {
  return html`<ol class="lineage" aria-label="Re-run lineage, oldest first">${detail.lineage.map((entry, i) => {
    const previous = detail.lineage[i - 1];
    const what =
      entry.parentRunId === null
        ? html`original`
        : html`re-run${entry.parentRunId !== previous?.runId ? html` of <span class="mono">${entry.parentRunId.slice(0, 8)}</span>` : html``}${entry.triggeredBy !== null ? html` by ${entry.triggeredBy}` : html``}`;
    const id = entry.runId.slice(0, 8);
    const name =
      entry.runId === run.runId
        ? html`<strong aria-current="page" class="mono">${id}</strong> <span class="sub">(this run)</span>`
        : html`<a class="mono" href="${runHref(orgId, entry.runId)}">${id}</a>`;
    return html`<li data-run="${entry.runId}"${entry.runId === run.runId ? html` class="current"` : html``}>${name} ${statusBadge(entry.status)} <span class="sub">${what} · <time>${entry.createdAt}</time></span></li>`;
  })}</ol>${detail.lineageTruncated ? html`<p class="note">Only the first ${detail.lineage.length} runs of this lineage are shown.</p>` : html``}`;
}

export function lineageSection(orgId: string, run: RunView, detail: RunDetail | undefined): Html {
  const cancelled = run.cancelledBy !== null ? html`<li>Cancelled by ${run.cancelledBy}</li>` : html``;
  if (detail !== undefined && detail.lineage.length > 1) {
    // Who asked for each re-run is in the chain itself.
    return html`<h2>Lineage</h2>${lineageChain(orgId, run, detail)}${cancelled.html !== '' ? html`<ul class="lineage-facts">${cancelled}</ul>` : html``}`;
  }
  const triggered = run.triggeredBy !== null ? html`<li>Triggered by ${run.triggeredBy}</li>` : html``;
  const items = [...(detail === undefined ? shortLineage(orgId, run) : []), triggered, cancelled];
  return items.some((l) => l.html !== '') ? html`<h2>Lineage</h2><ul class="lineage-facts">${items}</ul>` : html``;
}
