// The run page's timeline and needs graph (docs/dashboard.md "Timeline"), server-rendered inline
// SVG: no library, no script, and no inline style (the CSP forbids it): bars and nodes are placed
// with SVG attributes and coloured by classes of the stylesheet. The timeline is one table per
// job (a row per phase: what, when from the run's creation, how long in milliseconds, a bar on the
// run's scale), so it reads without the bars too; the graph draws jobs as nodes in columns by
// depth of their needs and each need as an edge.
import type { RunJobView, RunTimeline, RunTimelineJob, RunTimelineRow } from '../../../../schemas/wire/relay.ts';
import { formatMillis } from '../../../../core/durations.ts';
import { html, type Html } from '../../sessions/index.ts';
import { statusBadge } from './frame.ts';

const PHASE_LABEL: Readonly<Record<string, string>> = {
  source_restore: 'source restore',
  checkout: 'checkout',
  'checkout.store_wait': 'checkout: store wait',
  'checkout.fetch': 'checkout: fetch',
  'checkout.materialise': 'checkout: materialise',
  overlay: 'overlay (uncommitted changes)',
  deps: 'dependencies',
};

export function rowLabel(row: RunTimelineRow): string {
  switch (row.kind) {
    case 'waiting':
      return row.name.startsWith('needs ') ? `waiting for ${row.name.slice('needs '.length)}` : 'waiting';
    case 'queued':
      return 'queued, waiting for an agent';
    case 'dispatched':
      return 'dispatched, agent starting';
    case 'phase':
      return PHASE_LABEL[row.name] ?? row.name.replace(/[._]/g, ' ');
    case 'step':
      return `step ${row.name}`;
  }
}

/** The bar scale: 0..1000 over the run's whole span, from its creation to the last row's end. */
interface Scale {
  origin: number;
  span: number;
}

function scaleOf(timeline: RunTimeline): Scale {
  const origin = Date.parse(timeline.createdAt);
  let end = origin + 1;
  for (const job of timeline.jobs) for (const r of job.rows) end = Math.max(end, Date.parse(r.startedAt) + r.durationMs);
  return { origin, span: end - origin };
}

function bar(row: RunTimelineRow, scale: Scale, label: string): Html {
  const offset = Date.parse(row.startedAt) - scale.origin;
  const x = Math.max(0, Math.min(999, (offset / scale.span) * 1000));
  // At least a sliver, so a 0 ms phase is still seen where it happened.
  const width = Math.max(2, Math.min(1000 - x, (row.durationMs / scale.span) * 1000));
  const text = `${label}: ${formatMillis(row.durationMs)}${row.finishedAt === null ? ' so far' : ''}, from +${formatMillis(offset)}`;
  return html`<svg class="tl-bar" viewBox="0 0 1000 12" preserveAspectRatio="none" role="img" aria-label="${text}"><title>${text}</title><rect class="tl-track" x="0" y="0" width="1000" height="12"></rect><rect class="tl-fill k-${row.kind}${row.status !== null ? ` s-${row.status.replace(/[^a-z_]/g, '')}` : ''}" x="${x.toFixed(1)}" y="1" width="${width.toFixed(1)}" height="10"></rect></svg>`;
}

function jobTimeline(job: RunTimelineJob, scale: Scale): Html {
  const rows = job.rows.map((row) => {
    const label = rowLabel(row);
    const offset = Date.parse(row.startedAt) - scale.origin;
    const sub = row.kind === 'phase' && row.name.includes('.');
    return html`<tr data-kind="${row.kind}" data-name="${row.name}"${sub ? html` class="tl-sub"` : html``}><th scope="row">${label}${row.kind === 'step' && row.status !== null ? html` ${statusBadge(row.status)}` : html``}</th><td class="num">+${formatMillis(offset)}</td><td class="num tl-ms">${formatMillis(row.durationMs)}${row.finishedAt === null ? html` <span class="sub">so far</span>` : html``}</td><td class="tl-bar-cell">${bar(row, scale, label)}</td></tr>`;
  });
  return html`<div class="table-wrap"><table class="timeline" data-job="${job.jobId}" data-job-name="${job.displayName}">
<caption><a href="#job-${job.jobId}">${job.displayName}</a> ${statusBadge(job.status)}</caption>
<thead><tr><th scope="col">Phase</th><th scope="col">Starts</th><th scope="col">Duration</th><th scope="col"><span class="sr">Bar on the run's time scale</span></th></tr></thead>
<tbody>${job.rows.length === 0 ? html`<tr><td colspan="4" class="note">Nothing timed yet.</td></tr>` : rows}</tbody>
</table></div>`;
}

/** The Timeline section; `timeline` undefined when the orchestrator did not answer (an older one). */
export function timelineSection(timeline: RunTimeline | undefined): Html {
  if (timeline === undefined) return html`<h2 id="timeline-heading">Timeline</h2><p class="note">The timeline could not be read.</p>`;
  const scale = scaleOf(timeline);
  return html`<h2 id="timeline-heading">Timeline</h2>
<p class="tl-summary" id="timeline-summary">Queued <strong class="tl-ms" data-queue-ms="${String(timeline.queueMs ?? '')}">${formatMillis(timeline.queueMs)}</strong> · ran <strong class="tl-ms" data-run-ms="${String(timeline.runMs ?? '')}">${formatMillis(timeline.runMs)}</strong> <span class="sub">(times from the run's creation; bars on one scale of ${formatMillis(scale.span)})</span></p>
<div id="timeline">${timeline.jobs.map((job) => jobTimeline(job, scale))}</div>`;
}

const NODE_W = 168;
const NODE_H = 40;
const GAP_X = 64;
const GAP_Y = 16;
const PAD = 8;

/** Columns by depth of needs (a need's column is left of the job's); a cycle cannot come from a lock file, but ends at depth 0. */
function columnsOf(jobs: RunJobView[]): RunJobView[][] {
  const needsOf = new Map<string, string[]>();
  for (const j of jobs) if (!needsOf.has(j.name)) needsOf.set(j.name, j.needs);
  const depth = new Map<string, number>();
  const depthOf = (name: string, seen: Set<string>): number => {
    const known = depth.get(name);
    if (known !== undefined) return known;
    if (seen.has(name)) return 0;
    seen.add(name);
    const needs = (needsOf.get(name) ?? []).filter((n) => needsOf.has(n));
    const d = needs.length === 0 ? 0 : 1 + Math.max(...needs.map((n) => depthOf(n, seen)));
    depth.set(name, d);
    return d;
  };
  const columns: RunJobView[][] = [];
  for (const j of jobs) (columns[depthOf(j.name, new Set())] ??= []).push(j);
  return columns.map((c) => c ?? []);
}

const shortName = (name: string): string => (name.length > 22 ? `${name.slice(0, 21)}…` : name);

/** The needs graph: jobs as nodes (linked to their section), needs as edges with arrows. */
export function needsGraph(jobs: RunJobView[]): Html {
  if (jobs.length === 0) return html`<p class="note">No jobs.</p>`;
  const columns = columnsOf(jobs);
  const at = new Map<string, { x: number; y: number }>();
  columns.forEach((col, c) => col.forEach((j, r) => at.set(j.jobId, { x: PAD + c * (NODE_W + GAP_X), y: PAD + r * (NODE_H + GAP_Y) })));
  const width = PAD * 2 + columns.length * NODE_W + (columns.length - 1) * GAP_X;
  const height = PAD * 2 + Math.max(...columns.map((c) => c.length)) * (NODE_H + GAP_Y) - GAP_Y;
  const edges: Html[] = [];
  for (const job of jobs) {
    const to = at.get(job.jobId)!;
    for (const need of job.needs) {
      for (const from of jobs.filter((j) => j.name === need)) {
        const a = at.get(from.jobId)!;
        const x1 = a.x + NODE_W;
        const y1 = a.y + NODE_H / 2;
        const x2 = to.x - 4;
        const y2 = to.y + NODE_H / 2;
        const mid = (x1 + x2) / 2;
        edges.push(html`<path class="dag-edge" data-from="${from.displayName}" data-to="${job.displayName}" d="M${x1} ${y1} C${mid} ${y1} ${mid} ${y2} ${x2} ${y2}" marker-end="url(#dag-arrow)"><title>${job.displayName} needs ${from.displayName}</title></path>`);
      }
    }
  }
  const nodes = jobs.map((j) => {
    const { x, y } = at.get(j.jobId)!;
    return html`<a href="#job-${j.jobId}" class="dag-node" data-job="${j.displayName}" data-status="${j.status}"><title>${j.displayName}: ${j.status}${j.needs.length > 0 ? ` (needs ${j.needs.join(', ')})` : ''}</title><rect class="s-${j.status.replace(/[^a-z_]/g, '')}" x="${x}" y="${y}" width="${NODE_W}" height="${NODE_H}" rx="6"></rect><text x="${x + 10}" y="${y + 17}">${shortName(j.displayName)}</text><text class="dag-status" x="${x + 10}" y="${y + 32}">${j.status}</text></a>`;
  });
  return html`<div class="dag-wrap"><svg class="dag" id="needs-graph" role="group" aria-label="Jobs and their needs: each arrow goes from a job to a job that needs it" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><defs><marker id="dag-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" class="dag-arrow"></path></marker></defs>${edges}${nodes}</svg></div>`;
}
