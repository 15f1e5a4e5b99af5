// What tracing costs one no-match delivery in CPU, in one process, without the servers around it
// (docs/benchmarks.md "Spans per delivery"). Each delivery records what the relay and the
// orchestrator record for it (docs/tracing.md "Spans"): the relay's receive span (seven
// attributes, its short steps as one event, the answer as another) and forward span, the
// orchestrator's ingest span (seven attributes, sixteen short steps as one event) and a commit
// span. Three ways, in interleaved rounds in this process, exporting OTLP/HTTP to a receiver in
// a child process that reads and drops the bodies:
//   off  - svc's tracing off (the no-op)
//   svc  - svc's tracing (core/tracing: spans encoded into the export batch as they end)
//   sdk  - the same spans through the SDK's own tracer, BatchSpanProcessor and OTLPTraceExporter
//          (svc's batch sizes), the peer svc's encoder replaced
// Prints CPU µs per delivery (median of rounds) and the ratios, bytes exported per delivery.
// Bounded, loopback only: node bench/tracing-spans.ts [--deliveries N] [--rounds R]
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';
import { ROOT_CONTEXT, SpanKind, trace, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { millisText, NO_TRACING, nowMs, startTracing, TraceSteps, type Tracing } from '../core/tracing/index.ts';
import { machineLine } from './lib/machine.ts';

const { values } = parseArgs({ options: { deliveries: { type: 'string', default: '40000' }, rounds: { type: 'string', default: '5' } } });
const DELIVERIES = Math.min(1_000_000, Number(values.deliveries));
const ROUNDS = Math.min(50, Number(values.rounds));

const STEPS = ['admission', 'verify-signature', 'dedup', 'resolve-provider', 'normalize', 'repository', 'approval-commands', 'trust', 'lock-fetch', 'registrations', 'changed-files', 'match', 'requires', 'caches', 'dispatch', 'delivery-record'];

/** The receiver: a child process that answers every POST with an empty 200 and counts the bytes. */
const RECEIVER = `
const { createServer } = require('node:http');
let bytes = 0;
const server = createServer((req, res) => { req.on('data', (c) => { bytes += c.length; }); req.on('end', () => { res.writeHead(200, { 'content-type': 'application/x-protobuf' }); res.end(); }); });
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (m) => { if (m === 'bytes') process.send({ bytes }); else process.exit(0); });
`;

/** One delivery through svc's tracing (the calls kernel/relay/ingest-routes.ts and kernel/orchestrator/ingest make). */
function svcDelivery(relay: Tracing, orchestrator: Tracing, i: number): void {
  const arrival = nowMs();
  const root = relay.start('webhook receive', { kind: 'server', root: true, start: arrival, attributes: { 'svc.org.id': 'acme', 'svc.delivery.id': `delivery-${i}`, 'svc.routing_key': 'rk-0123456789', 'vcs.provider.name': 'generic', 'http.request.method': 'POST', 'http.route': '/hooks/:org/:routingKey' } });
  const relaySteps = new TraceSteps(relay, root, 'relay');
  const admitted = nowMs();
  relaySteps.step('admission', arrival, admitted);
  const deduped = nowMs();
  relaySteps.step('dedup', admitted, deduped, { 'svc.dedup.result': 'new' });
  const forward = relay.start('relay forward', { kind: 'producer', parent: root, start: deduped });
  // The orchestrator reads the header from the wire: a string of its own.
  const wire = forward.traceparent === undefined ? undefined : (JSON.parse(JSON.stringify(forward.traceparent)) as string);
  const start = nowMs();
  const ingest = orchestrator.start('orchestrator ingest', { kind: 'consumer', parent: wire, start, attributes: { 'svc.org.id': 'acme', 'svc.delivery.id': `delivery-${i}`, 'svc.routing_key': 'rk-0123456789', 'vcs.provider.name': 'generic', 'svc.delivery.replay': false } });
  const steps = new TraceSteps(orchestrator, ingest, 'ingest', 'svc.ingest.step');
  let last = start;
  for (const step of STEPS) {
    const now = nowMs();
    steps.step(step, last, now, { 'svc.ingest.outcome': 'ok' });
    last = now;
  }
  // The record's commit: a disk flush, over a millisecond (a span).
  steps.step('commit', last, last + 1.5);
  steps.flush();
  ingest.setAttributes({ 'svc.delivery.status': 'no_match', 'svc.runs.count': 0 });
  ingest.end(last + 1.5);
  forward.setAttributes({ 'svc.ack.result': 'accepted' });
  const acked = last + 1.7;
  forward.end(acked);
  relaySteps.step('answer', acked, acked + 0.02);
  relaySteps.flush();
  root.setAttributes({ 'svc.relay.answer': 'accepted' });
  root.end(acked + 0.02);
}

/** The same spans, events and attributes through the SDK's tracer. */
function sdkDelivery(relay: ReturnType<TracerProvider['getTracer']>, orchestrator: ReturnType<TracerProvider['getTracer']>, i: number): void {
  const arrival = nowMs();
  const root = relay.startSpan('webhook receive', { kind: SpanKind.SERVER, startTime: arrival, attributes: { 'svc.org.id': 'acme', 'svc.delivery.id': `delivery-${i}`, 'svc.routing_key': 'rk-0123456789', 'vcs.provider.name': 'generic', 'http.request.method': 'POST', 'http.route': '/hooks/:org/:routingKey' } }, ROOT_CONTEXT);
  const admitted = nowMs();
  const deduped = nowMs();
  root.addEvent('relay steps', { 'svc.duration_ms': deduped - arrival, 'svc.steps': `admission ${millisText(admitted - arrival)}, dedup ${millisText(deduped - admitted)}` }, arrival);
  const forward = relay.startSpan('relay forward', { kind: SpanKind.PRODUCER, startTime: deduped }, trace.setSpan(ROOT_CONTEXT, root));
  const start = nowMs();
  const context = forward.spanContext();
  const parent = trace.setSpanContext(ROOT_CONTEXT, { traceId: context.traceId, spanId: context.spanId, traceFlags: 1, isRemote: true });
  const ingest = orchestrator.startSpan('orchestrator ingest', { kind: SpanKind.CONSUMER, startTime: start, attributes: { 'svc.org.id': 'acme', 'svc.delivery.id': `delivery-${i}`, 'svc.routing_key': 'rk-0123456789', 'vcs.provider.name': 'generic', 'svc.delivery.replay': false } }, parent);
  let last = start;
  let text = '';
  for (const step of STEPS) {
    const now = nowMs();
    text += `${text === '' ? '' : ', '}${step} ${millisText(now - last)}`;
    last = now;
  }
  ingest.addEvent('ingest steps', { 'svc.duration_ms': last - start, 'svc.steps': text }, start);
  const commit: Span = orchestrator.startSpan('ingest commit', { startTime: last, attributes: { 'svc.ingest.step': 'commit' } }, trace.setSpan(ROOT_CONTEXT, ingest));
  commit.end(last + 1.5);
  ingest.setAttributes({ 'svc.delivery.status': 'no_match', 'svc.runs.count': 0 });
  ingest.end(last + 1.5);
  forward.setAttribute('svc.ack.result', 'accepted');
  const acked = last + 1.7;
  forward.end(acked);
  root.addEvent('relay answer', { 'svc.duration_ms': 0.02 }, acked);
  root.setAttribute('svc.relay.answer', 'accepted');
  root.end(acked + 0.02);
}

interface Way {
  name: 'off' | 'svc' | 'sdk';
  run(i: number): void;
  flush(): Promise<void>;
}

async function main(): Promise<void> {
  const receiver = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port } = await new Promise<{ port: number }>((resolve) => receiver.once('message', (m) => resolve(m as { port: number })));
  const bytesNow = () => new Promise<number>((resolve) => (receiver.once('message', (m) => resolve((m as { bytes: number }).bytes)), receiver.send('bytes')));
  const url = `http://127.0.0.1:${port}/v1/traces`;
  try {
    const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: url };
    const relay = await startTracing(env, 'svc-relay');
    const orchestrator = await startTracing(env, 'svc-orchestrator');
    const sdkProvider = (service: string) => {
      const processor = new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), maxExportBatchSize: 2048, maxQueueSize: 8192 });
      return new TracerProvider({ resource: resourceFromAttributes({ 'service.name': service }), spanProcessors: [processor] });
    };
    const sdkRelay = sdkProvider('svc-relay');
    const sdkOrchestrator = sdkProvider('svc-orchestrator');
    const ways: Way[] = [
      { name: 'off', run: (i) => svcDelivery(NO_TRACING, NO_TRACING, i), flush: async () => undefined },
      { name: 'svc', run: (i) => svcDelivery(relay, orchestrator, i), flush: async () => void (await Promise.all([relay.flush(), orchestrator.flush()])) },
      { name: 'sdk', run: (i) => sdkDelivery(sdkRelay.getTracer('svc'), sdkOrchestrator.getTracer('svc'), i), flush: async () => void (await Promise.all([sdkRelay.forceFlush(), sdkOrchestrator.forceFlush()])) },
    ];
    const results = new Map<string, { cpu: number[]; bytes: number[] }>(ways.map((w) => [w.name, { cpu: [], bytes: [] }]));
    // Round 0 warms every way up and is not counted.
    for (let round = 0; round <= ROUNDS; round++) {
      for (const way of ways) {
        const bytesBefore = await bytesNow();
        const before = process.cpuUsage();
        for (let i = 0; i < DELIVERIES; i++) {
          way.run(i);
          // Let the exporters' requests and timers run, as a server's event loop would.
          if (i % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
        }
        await way.flush();
        const used = process.cpuUsage(before);
        const bytes = (await bytesNow()) - bytesBefore;
        if (round === 0) continue;
        results.get(way.name)!.cpu.push((used.user + used.system) / DELIVERIES);
        results.get(way.name)!.bytes.push(bytes / DELIVERIES);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const off = median(results.get('off')!.cpu);
    process.stdout.write(`${DELIVERIES} deliveries per round, ${ROUNDS} rounds (after one to warm up), each way in turn; CPU of this process (the receiver is a child process, not counted):\n`);
    for (const way of ways) {
      const { cpu, bytes } = results.get(way.name)!;
      const m = median(cpu);
      process.stdout.write(`  ${way.name.padEnd(4)} ${m.toFixed(2).padStart(7)} µs per delivery (rounds ${cpu.map((c) => c.toFixed(2)).join(' ')})${way.name === 'off' ? '' : `, tracing's own ${(m - off).toFixed(2)} µs, ${Math.round(median(bytes))} bytes exported per delivery`}\n`);
    }
    const svc = median(results.get('svc')!.cpu) - off;
    const sdk = median(results.get('sdk')!.cpu) - off;
    process.stdout.write(`tracing's CPU per delivery, svc / sdk: ${(svc / sdk).toFixed(3)} (svc ${svc.toFixed(2)} µs, the SDK's own path ${sdk.toFixed(2)} µs)\n`);
    await Promise.all([relay.shutdown(), orchestrator.shutdown(), sdkRelay.shutdown(), sdkOrchestrator.shutdown()]);
  } finally {
    receiver.send('exit');
  }
}

const end = machineLine(false);
await main();
end();
