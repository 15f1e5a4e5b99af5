import t from 'tap';
import { register as globalRegistry } from 'prom-client';
import { createMetrics } from '../../../kernel/services/metrics.ts';

t.test('one registry per call, with process metrics', async (t) => {
  const before = (await globalRegistry.getMetricsAsJSON()).length;
  const a = createMetrics();
  const b = createMetrics();
  t.not(a.registry, b.registry);
  const text = await a.text();
  t.match(text, /process_cpu_user_seconds_total/);
  t.match(text, /nodejs_eventloop_lag_seconds/);
  t.match(text, /# TYPE svc_orch_config_reload_total counter/);
  t.match(a.contentType, /^text\/plain/);
  t.equal((await globalRegistry.getMetricsAsJSON()).length, before, 'the global default registry is untouched');
});

t.test('without default metrics; default labels', async (t) => {
  const m = createMetrics({ defaultMetrics: false, defaultLabels: { instance: 'orch-1' } });
  m.configVersion.set(7);
  m.configReloads.inc({ result: 'success', source: 'sighup' });
  const text = await m.text();
  t.notMatch(text, /process_cpu/);
  t.match(text, 'svc_orch_config_version{instance="orch-1"} 7');
  t.match(text, 'svc_orch_config_reload_total{result="success",source="sighup",instance="orch-1"} 1');
});

t.test('get-or-create by name', async (t) => {
  const m = createMetrics({ defaultMetrics: false });
  const c1 = m.counter({ name: 'svc_orch_source_cache_hits_total', help: 'hits' });
  const c2 = m.counter({ name: 'svc_orch_source_cache_hits_total', help: 'hits' });
  t.equal(c1, c2);
  c1.inc(2);
  const h = m.histogram({ name: 'svc_orch_build_duration_seconds', help: 'build', buckets: [1, 10, 60, 600] });
  h.observe(3);
  const g = m.gauge({ name: 'svc_things', help: 'x', labelNames: ['kind'] });
  g.set({ kind: 'a' }, 1);
  const text = await m.text();
  t.match(text, 'svc_orch_source_cache_hits_total 2');
  t.match(text, 'svc_orch_build_duration_seconds_bucket{le="10"} 1');
  t.throws(() => m.gauge({ name: 'svc_orch_source_cache_hits_total', help: 'x' }), /already registered as a different type/);
  const other = createMetrics({ defaultMetrics: false });
  t.doesNotThrow(() => other.counter({ name: 'svc_orch_source_cache_hits_total', help: 'hits' }), 'same name in another registry is fine');
});
