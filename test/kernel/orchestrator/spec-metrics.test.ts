// Every metric of the spec's table ("Metrics emitted (Prometheus)", mirrored in docs/metrics.md
// "The spec's table", which this reads) is on /metrics of a fresh orchestrator before anything
// moved it: real orchestrator on real PostgreSQL, scraped over HTTP. Unlabelled metrics and those
// with a closed label set show a series at 0; `svc_orch_build_duration_seconds` was absent until
// a build had run.
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { eachDatabase } from '../../fixtures/db.ts';
import { startNode } from './dispatch/harness.ts';

/** Metric names in the first column of docs/metrics.md's spec table. */
async function specTableNames(): Promise<string[]> {
  const doc = await readFile(new URL('../../../docs/metrics.md', import.meta.url), 'utf8');
  const section = doc.split("## The spec's table")[1]!.split('\n## ')[0]!;
  const names: string[] = [];
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `svc_')) continue;
    const first = line.split('|')[1]!;
    for (const match of first.matchAll(/`(svc_[a-z0-9_]+)`/g)) names.push(match[1]!);
  }
  return names;
}

t.test('a fresh orchestrator lists every metric of the spec table', async (t) => {
  const names = await specTableNames();
  t.ok(names.length >= 12, `read ${names.length} names from docs/metrics.md`);
  t.ok(names.includes('svc_orch_build_duration_seconds'));
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const text = await (await fetch(`${node.url}/metrics`)).text();
    for (const name of names) t.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is listed`);
    // Series a dashboard or alert can read from the start.
    for (const series of [
      'svc_orch_build_duration_seconds_count 0',
      'svc_orch_build_duration_seconds_bucket{le="600"} 0',
      'svc_orch_source_cache_hits_total 0',
      'svc_orch_source_cache_misses_total 0',
      'svc_orch_dep_cache_hits_total 0',
      'svc_orch_dep_cache_misses_total 0',
      'svc_cross_source_errors_total{reason="clone_token"} 0',
      'svc_cross_source_errors_total{reason="bundle_missing"} 0',
      'svc_orch_config_reload_total{result="failed",source="sighup"} 0',
      'svc_orch_event_dlq_total 0',
      'svc_orch_event_lease_expirations_total 0',
    ]) {
      t.ok(text.split('\n').includes(series), series);
    }
  });
});
