// The coverage rule of docs/tracing.md ("Coverage"): a span with children has a gap where none of
// its children (clipped to it) runs, no short step recorded as its event lasts and no message hop is in flight; a gap longer than `maxMs` is
// time the trace does not account for. Leaf spans are what they measure and have none.
export interface SpanTimes {
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  service: string;
  start: number;
  end: number;
  attributes?: Record<string, string | number | boolean>;
  /** Events; one with `svc.duration_ms` is a short step (core/tracing `recordStep`) and covers its stretch. */
  events?: ReadonlyArray<{ name: string; time: number; attributes: Record<string, string | number | boolean> }>;
}

/** A message on a WebSocket between two processes: from its send (one span) to its handling (the other side's span). */
export interface Hop {
  /** The span the hop happens inside. */
  parentSpanId: string;
  name: string;
  start: number;
  end: number;
}

/**
 * The hops of docs/tracing.md: webhook.deliver (relay forward start → orchestrator ingest start)
 * and its ack (ingest end → relay forward end) inside the relay forward span; job.dispatch
 * (dispatch end → the agent's job start) and the final job.status (job end → job report start)
 * inside the run span, matched by `cicd.pipeline.task.run.id`.
 */
export function messageHops(spans: readonly SpanTimes[]): Hop[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const hops: Hop[] = [];
  const task = (s: SpanTimes) => s.attributes?.['cicd.pipeline.task.run.id'];
  for (const s of spans) {
    const parent = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId);
    if (parent === undefined) continue;
    if (s.name === 'orchestrator ingest' && parent.name === 'relay forward') {
      if (s.start > parent.start) hops.push({ parentSpanId: parent.spanId, name: 'webhook.deliver', start: parent.start, end: s.start });
      if (parent.end > s.end) hops.push({ parentSpanId: parent.spanId, name: 'webhook.ack', start: s.end, end: parent.end });
    }
    if (s.service === 'svc-agent' && s.name.startsWith('job ') && task(s) !== undefined) {
      const siblings = spans.filter((o) => o.parentSpanId === parent.spanId && task(o) === task(s));
      // The sender's span may end after the receiver's starts (the send resolves once written): then nothing is in flight.
      const dispatch = siblings.filter((o) => o.name === 'dispatch' && o.start <= s.start).sort((a, b) => b.start - a.start)[0];
      const report = siblings.filter((o) => o.name === 'job report' && o.end >= s.end).sort((a, b) => a.start - b.start)[0];
      if (dispatch !== undefined && dispatch.end < s.start) hops.push({ parentSpanId: parent.spanId, name: 'job.dispatch', start: dispatch.end, end: s.start });
      if (report !== undefined && report.start > s.end) hops.push({ parentSpanId: parent.spanId, name: 'job.status', start: s.end, end: report.start });
    }
  }
  return hops;
}

export interface Gap {
  span: string;
  service: string;
  /** Milliseconds after the span's start. */
  from: number;
  to: number;
}

export function coverageGaps(spans: readonly SpanTimes[], maxMs: number, hops: readonly Hop[] = []): Gap[] {
  const children = new Map<string, Array<{ start: number; end: number }>>();
  for (const s of spans) if (s.parentSpanId !== undefined) children.set(s.parentSpanId, [...(children.get(s.parentSpanId) ?? []), s]);
  for (const h of hops) children.set(h.parentSpanId, [...(children.get(h.parentSpanId) ?? []), h]);
  for (const s of spans) {
    for (const e of s.events ?? []) {
      const ms = e.attributes['svc.duration_ms'];
      if (typeof ms === 'number') children.set(s.spanId, [...(children.get(s.spanId) ?? []), { start: e.time, end: e.time + ms }]);
    }
  }
  const gaps: Gap[] = [];
  for (const parent of spans) {
    const kids = children.get(parent.spanId);
    if (kids === undefined) continue;
    const intervals = kids
      .map((k) => [Math.max(parent.start, k.start), Math.min(parent.end, k.end)] as const)
      .filter(([a, b]) => b > a)
      .sort((x, y) => x[0] - y[0]);
    let covered = parent.start;
    const note = (from: number, to: number) => {
      if (to - from > maxMs) gaps.push({ span: parent.name, service: parent.service, from: from - parent.start, to: to - parent.start });
    };
    for (const [a, b] of intervals) {
      if (a > covered) note(covered, a);
      covered = Math.max(covered, b);
    }
    if (parent.end > covered) note(covered, parent.end);
  }
  return gaps;
}
