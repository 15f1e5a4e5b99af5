// OTEL_* as core/tracing reads them (docs/tracing.md "Turning it on"): off by default and with
// OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER=none; the endpoint rules of the OTLP exporter spec; bad
// values refused with SVC_ERR_CONFIG_OTEL naming the variable; traceparent parsing; the no-op
// tracing costs nothing and records nothing.
import t from 'tap';
import { millisText, NO_SPAN, NO_TRACING, nowMs, parseTraceparent, TraceSteps, startTracing, tracingSettings, type TraceAttributes, type TraceSpan, type Tracing } from '../../../core/tracing/index.ts';

t.test('off unless an endpoint or the otlp exporter is named', async (t) => {
  t.equal(tracingSettings({}, 'svc-relay'), null);
  t.equal(tracingSettings({ OTEL_SERVICE_NAME: 'x' }, 'svc-relay'), null, 'a service name alone does not turn it on');
  t.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, 'svc-relay'), null);
  t.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }, 'svc-relay'), null);
  t.equal(await startTracing({}, 'svc-relay'), NO_TRACING, 'off: the no-op, nothing loaded');
});

t.test('endpoints, names, sampler and batch settings', async (t) => {
  t.match(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }, 'svc-relay'), { url: 'http://c:4318/v1/traces', serviceName: 'svc-relay', sampler: { name: 'parentbased_always_on', ratio: 1 } });
  t.match(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://d:9/x' }, 's'), { url: 'http://d:9/x' }, 'the signal URL is used as is');
  t.match(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' }, 's'), { url: 'http://localhost:4318/v1/traces' });
  const s = tracingSettings(
    {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_SERVICE_NAME: 'relay-eu',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=ci%20ops',
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%3Db',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
    'svc-relay',
  );
  t.match(s, { serviceName: 'relay-eu', resourceAttributes: { 'deployment.environment': 'prod', team: 'ci ops' }, headers: { 'api-key': 'a=b' }, sampler: { name: 'parentbased_traceidratio', ratio: 0.25 }, batch: { scheduledDelayMillis: 100 } });
  t.same(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, 's')?.batch, { maxQueueSize: 8192, maxExportBatchSize: 2048 }, "svc's batch defaults: 2,048 spans per export from a queue of 8,192");
  t.same(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_MAX_QUEUE_SIZE: '4096', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '512' }, 's')?.batch, { maxQueueSize: 4096, maxExportBatchSize: 512 }, 'the environment wins');
  t.same(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_MAX_QUEUE_SIZE: '1000' }, 's')?.batch, { maxQueueSize: 1000, maxExportBatchSize: 1000 }, 'a queue smaller than the default batch: batches of the whole queue');
});

t.test('bad values are refused naming the variable', async (t) => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
  const bad: Array<[Record<string, string>, string]> = [
    [{ ...on, OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER'],
    [{ ...on, OTEL_TRACES_SAMPLER_ARG: '2' }, 'OTEL_TRACES_SAMPLER_ARG'],
    [{ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_ENDPOINT'],
    [{ ...on, OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER'],
    [{ ...on, OTEL_BSP_SCHEDULE_DELAY: '-1' }, 'OTEL_BSP_SCHEDULE_DELAY'],
    [{ ...on, OTEL_BSP_MAX_QUEUE_SIZE: '1000', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1001' }, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'],
    [{ ...on, OTEL_RESOURCE_ATTRIBUTES: 'novalue' }, 'OTEL_RESOURCE_ATTRIBUTES'],
    [{ ...on, SVC_TRACE_SPAN_MIN_MS: 'soon' }, 'SVC_TRACE_SPAN_MIN_MS'],
    [{ ...on, SVC_TRACE_SPAN_MIN_MS: '-1' }, 'SVC_TRACE_SPAN_MIN_MS'],
  ];
  for (const [env, name] of bad) t.throws(() => tracingSettings(env, 's'), { code: 'SVC_ERR_CONFIG_OTEL', message: new RegExp(`^${name}=`) }, name);
});

t.test('a short step is an event of its parent, short steps back to back one event, a longer step a span (SVC_TRACE_SPAN_MIN_MS)', async (t) => {
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
  t.match(tracingSettings(on, 's'), { spanMinMs: 1 }, 'default: 1 ms');
  t.match(tracingSettings({ ...on, SVC_TRACE_SPAN_MIN_MS: '0' }, 's'), { spanMinMs: 0 }, '0: every step a span');
  t.match(tracingSettings({ ...on, SVC_TRACE_SPAN_MIN_MS: '2.5' }, 's'), { spanMinMs: 2.5 });

  const recorded: Array<{ name: string; parent: string | undefined; start: number; end: number; attributes: TraceAttributes | undefined }> = [];
  const events: Array<{ name: string; time: number; attributes: TraceAttributes | undefined }> = [];
  const tracing: Tracing = { ...NO_TRACING, enabled: true, spanMinMs: 1, record: (name, o) => void recorded.push({ name, parent: typeof o.parent === 'object' ? o.parent.traceparent : o.parent, start: o.start, end: o.end, attributes: o.attributes }) };
  const parent: TraceSpan = { ...NO_SPAN, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', event: (name, time, attributes) => void events.push({ name, time, attributes }) };
  const steps = new TraceSteps(tracing, parent, 'ingest', 'svc.ingest.step');
  steps.step('match', 1000, 1000.4, { 'svc.ingest.outcome': 'no_match' });
  t.same(events, [], 'a short step waits: the next may join it');
  steps.step('lock-fetch', 1000.4, 1003.4);
  t.same(recorded, [{ name: 'ingest lock-fetch', parent: parent.traceparent, start: 1000.4, end: 1003.4, attributes: { 'svc.ingest.step': 'lock-fetch' } }], '3 ms: a span under the parent, its step named');
  t.same(events, [{ name: 'ingest match', time: 1000, attributes: { 'svc.ingest.outcome': 'no_match', 'svc.duration_ms': 0.4 } }], 'a lone 0.4 ms step: an event at its start with its duration, out before the span');
  events.length = 0;
  steps.step('trust', 1003.4, 1003.45, { 'svc.ingest.outcome': 'trusted' });
  steps.step('dedup', 1003.45, 1003.5);
  steps.step('caches', 1003.5, 1004.2, { 'svc.ingest.outcome': 'none', other: undefined });
  steps.step('requires', 1010, 1010.1);
  t.same(events, [{ name: 'ingest steps', time: 1003.4, attributes: { 'svc.duration_ms': 0.8, 'svc.steps': 'trust 0.050, dedup 0.050, caches 0.700' } }], 'short steps back to back: one event with their total, each named; a gap ends the run');
  steps.flush();
  t.same(events[1], { name: 'ingest requires', time: 1010, attributes: { 'svc.duration_ms': 0.1 } }, 'flush: the last run out');
  steps.flush();
  t.equal(events.length, 2, 'a second flush: nothing more');
  const every = new TraceSteps({ ...tracing, spanMinMs: 0 }, parent, 'relay');
  every.step('dedup', 1003.4, 1003.41, { 'svc.dedup.result': 'new' });
  t.same(recorded.at(-1), { name: 'relay dedup', parent: parent.traceparent, start: 1003.4, end: 1003.41, attributes: { 'svc.dedup.result': 'new' } }, 'threshold 0: even a 10 µs step is a span');
  const none = new TraceSteps(tracing, NO_SPAN, 'ingest');
  none.step('dedup', 0, 5);
  none.step('match', 5, 5.1);
  none.flush();
  t.equal(recorded.length + events.length, 4, 'an unsampled parent: nothing');
});

t.test('a trace the root sampler declined stays declined in the next process (the sampled flag off)', async (t) => {
  // Nothing here is ended, so nothing is exported to the unreachable endpoint.
  const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces' };
  const relay = await startTracing({ ...env, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }, 'svc-relay');
  const orchestrator = await startTracing(env, 'svc-orchestrator');
  t.teardown(() => Promise.all([relay.shutdown(), orchestrator.shutdown()]));
  const declined = relay.start('webhook receive', { root: true });
  t.equal(declined.traceparent, undefined, 'not recorded: no parent for spans here');
  t.match(declined.propagate, /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/, 'but the next process hears "not sampled"');
  t.equal(orchestrator.start('orchestrator ingest', { parent: declined.propagate, root: false }).traceparent, undefined, 'the orchestrator follows the decision');
  const own = orchestrator.start('orchestrator ingest', { parent: undefined, root: true });
  t.match(own.traceparent, /-01$/, 'without any context it starts a trace of its own');
  t.equal(own.propagate, own.traceparent, 'a recorded span hands on its own header');
  t.same(parseTraceparent(own.traceparent), { traceId: own.traceparent!.slice(3, 35), spanId: own.traceparent!.slice(36, 52), sampled: true }, "a span's own header parses to its ids");
  const child = orchestrator.start('ingest commit', { parent: own });
  t.equal(child.traceparent?.slice(0, 35), own.traceparent!.slice(0, 35), 'a span of this process given as the parent: same trace');
  t.not(child.traceparent, own.traceparent);
  t.equal(orchestrator.start('x', { parent: NO_SPAN }).traceparent, undefined, 'a span not recorded as the parent: nothing');
  t.equal(NO_SPAN.propagate, undefined, 'not tracing: nothing to hand on');
});

t.test('traceparent', async (t) => {
  t.same(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', sampled: true });
  t.match(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00'), { sampled: false });
  for (const bad of [undefined, '', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01']) {
    t.equal(parseTraceparent(bad), null, String(bad));
  }
});

t.test('step durations as text: milliseconds with three decimals, rounded to the microsecond', async (t) => {
  for (const [ms, text] of [
    [0, '0.000'],
    [0.0004, '0.000'],
    [0.0045, '0.005'],
    [0.011, '0.011'],
    [0.7, '0.700'],
    [12.5, '12.500'],
    [1234.5678, '1234.568'],
    [-1, '-1.000'],
  ] as const) {
    t.equal(millisText(ms), text, String(ms));
  }
});

t.test('the no-op and the clock', async (t) => {
  const span = NO_TRACING.start('x', { parent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
  t.equal(span.traceparent, undefined);
  t.equal(NO_TRACING.reserve('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), undefined);
  span.end();
  const a = nowMs();
  t.ok(Math.abs(a - Date.now()) <= 2, 'the trace clock keeps to the wall clock');
  t.ok(nowMs() >= a - 1.5, 'and does not go back by more than its re-anchoring bound');
  let last = nowMs();
  let backwards = 0;
  for (let i = 0; i < 100_000; i++) {
    const now = nowMs();
    if (now < last) backwards += 1;
    last = now;
  }
  t.equal(backwards, 0, 'read back to back it never goes back (the wall clock is compared once a millisecond)');
  t.ok(Math.abs(nowMs() - Date.now()) <= 2);
});
