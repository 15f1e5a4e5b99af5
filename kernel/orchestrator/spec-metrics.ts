// The spec's metrics table ("Metrics emitted (Prometheus)", docs/metrics.md) registered when the
// orchestrator starts, so every name is on /metrics before the behaviour that moves it first
// happens: a dashboard or an alert on svc_orch_build_duration_seconds sees a series (at 0) on a
// node that has not built yet, instead of nothing. Labelled metrics whose label values are a
// closed set get a zero series per value; the fan-out histogram's `event` label appears with the
// first event of each type (its HELP and TYPE lines are there from the start).
import type { SvcMetrics } from '../services/metrics.ts';
import { buildCacheMetrics } from './caches/build-cache.ts';
import { eventMetrics } from './events/worker.ts';

export const CROSS_SOURCE_ERROR_REASONS = ['clone_token', 'bundle_missing'] as const;
const RELOAD_RESULTS = ['attempted', 'success', 'failed'] as const;
const RELOAD_SOURCES = ['sighup', 'http', 'cluster', 'cli'] as const;

/** The organization-wide metrics of the spec, defined once for ingest and dispatch. */
export function crossSourceMetrics(metrics: SvcMetrics) {
  return {
    fanout: metrics.histogram({
      name: 'svc_cross_source_fanout_size',
      help: 'Organization-wide workflows one event fanned out to (recorded for zero too).',
      labelNames: ['event'],
      buckets: [0, 1, 2, 5, 10, 25, 50, 100],
    }),
    errors: metrics.counter<'reason'>({ name: 'svc_cross_source_errors_total', help: 'Organization-wide dispatch errors.', labelNames: ['reason'] }),
  };
}

export function registerSpecMetrics(metrics: SvcMetrics): void {
  buildCacheMetrics(metrics);
  eventMetrics(metrics);
  const cross = crossSourceMetrics(metrics);
  for (const reason of CROSS_SOURCE_ERROR_REASONS) cross.errors.inc({ reason }, 0);
  for (const result of RELOAD_RESULTS) for (const source of RELOAD_SOURCES) metrics.configReloads.inc({ result, source }, 0);
}
