// svc's OTLP encoder and batch processor (core/tracing/otlp-encode.ts, otlp-batch.ts) against the
// official definitions: random spans encoded by both svc and the SDK's own serializer
// (@opentelemetry/otlp-transformer) decode, with the protobufjs code generated from the
// opentelemetry-proto files, to the same request; the batch processor keeps the SDK's queue rules;
// spans made by svc's tracing (its own spans and the SDK tracer's) reach a receiver whole.
import { createRequire } from 'node:module';
import { setGlobalErrorHandler, loggingErrorHandler, TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import fc from 'fast-check';
import t from 'tap';
import { OtlpBatchProcessor, otlpSpanOf, type EncodedBatch } from '../../../core/tracing/otlp-batch.ts';
import { encodeResource, encodeScope, ProtoWriter, type OtlpSpan } from '../../../core/tracing/otlp-encode.ts';
import { startTracing } from '../../../core/tracing/index.ts';
import { startOtlpReceiver } from '../../fixtures/otlp-receiver.ts';

const require = createRequire(import.meta.url);
const root = require('otlp-transformer-protobufjs/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: { decode(b: Uint8Array): object; toObject(m: object, o: object): Record<string, unknown> } } } } } };
};
const { ExportTraceServiceRequest } = root.opentelemetry.proto.collector.trace.v1;

/** A decoded request as a plain object; an absent status reads as the unset one (svc leaves it out). */
function decoded(bytes: Uint8Array): unknown {
  const object = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(bytes), { longs: String, bytes: String, defaults: true, arrays: true });
  for (const resourceSpans of object['resourceSpans'] as Array<{ scopeSpans: Array<{ spans: Array<{ status: unknown }> }> }>) {
    for (const scope of resourceSpans.scopeSpans) for (const span of scope.spans) span.status ??= { message: '', code: 0 };
  }
  return object;
}

const resourceAttributes = { 'service.name': 'svc-test', 'service.version': '1.2.3', 'deployment.environment': 'prod' };
const resource = resourceFromAttributes(resourceAttributes);
const scope = { name: 'svc', version: '1.2.3' };

function captured(options: ConstructorParameters<typeof OtlpBatchProcessor>[3] = {}) {
  const batches: Array<EncodedBatch & { done: (ok: boolean) => void }> = [];
  let shutdowns = 0;
  const processor = new OtlpBatchProcessor(
    {
      export: (batch, done) => void batches.push({ bytes: Buffer.from(batch.bytes), count: batch.count, done: (ok) => done(ok ? { code: 0 } : { code: 1, error: new Error('collector said no') }) }),
      shutdown: async () => void (shutdowns += 1),
    },
    encodeResource(resourceAttributes),
    encodeScope(scope.name, scope.version),
    options,
  );
  return { processor, batches, shutdowns: () => shutdowns };
}

const hex = (bytes: number) => fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString('hex'));
const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ minLength: 100, maxLength: 20_000 }));
const value = fc.oneof(
  text,
  fc.boolean(),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  fc.double({ noNaN: false }),
  fc.array(fc.string({ maxLength: 10 }), { maxLength: 4 }),
  fc.array(fc.integer(), { maxLength: 4 }),
  fc.array(fc.boolean(), { maxLength: 3 }),
);
const attributes = fc.dictionary(fc.string({ minLength: 1, maxLength: 30 }), value, { maxKeys: 8 });
/** OpenTelemetry time to the microsecond (svc's clock's precision). */
const hrTime = fc.tuple(fc.integer({ min: 0, max: 4_000_000_000 }), fc.integer({ min: 0, max: 999_999 })).map(([s, us]) => [s, us * 1000] as [number, number]);
const traceState = fc.option(fc.constantFrom('vendor=abc', 'a=1,b=2'), { nil: undefined });
const spanArb = fc.record({
  traceId: hex(16),
  spanId: hex(8),
  parent: fc.option(fc.record({ spanId: hex(8), isRemote: fc.option(fc.boolean(), { nil: undefined }) }), { nil: undefined }),
  traceState,
  name: text,
  kind: fc.integer({ min: 0, max: 4 }),
  start: hrTime,
  end: hrTime,
  attributes,
  dropped: fc.nat({ max: 300 }),
  events: fc.array(fc.record({ name: text, time: hrTime, attributes: fc.option(attributes, { nil: undefined }), droppedAttributesCount: fc.nat({ max: 3 }) }), { maxLength: 5 }),
  links: fc.array(fc.record({ traceId: hex(16), spanId: hex(8), traceState, attributes: fc.option(attributes, { nil: undefined }), droppedAttributesCount: fc.nat({ max: 2 }), remote: fc.boolean() }), { maxLength: 2 }),
  status: fc.oneof(fc.constant({ code: 0 }), fc.record({ code: fc.constantFrom(1, 2), message: fc.option(text, { nil: undefined }) })),
  flags: fc.constantFrom(0, 1),
});

/** The SDK's view of a span (what a tracer hands its processors). */
type GeneratedSpan = typeof spanArb extends fc.Arbitrary<infer T> ? T : never;

function readable(s: GeneratedSpan): ReadableSpan {
  const span = {
    name: s.name,
    kind: s.kind,
    spanContext: () => ({ traceId: s.traceId, spanId: s.spanId, traceFlags: s.flags, ...(s.traceState ? { traceState: new TraceState(s.traceState) } : {}) }),
    parentSpanContext: s.parent === undefined ? undefined : { traceId: s.traceId, spanId: s.parent.spanId, traceFlags: s.flags, ...(s.parent.isRemote === undefined ? {} : { isRemote: s.parent.isRemote }) },
    startTime: s.start,
    endTime: s.end,
    status: s.status,
    attributes: s.attributes,
    links: s.links.map((l) => ({ context: { traceId: l.traceId, spanId: l.spanId, traceFlags: 1, isRemote: l.remote, ...(l.traceState ? { traceState: new TraceState(l.traceState) } : {}) }, ...(l.attributes ? { attributes: l.attributes } : {}), droppedAttributesCount: l.droppedAttributesCount })),
    events: s.events.map((e) => ({ name: e.name, time: e.time, ...(e.attributes ? { attributes: e.attributes } : {}), droppedAttributesCount: e.droppedAttributesCount })),
    duration: [0, 0],
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: s.dropped,
    droppedEventsCount: s.dropped % 7,
    droppedLinksCount: s.dropped % 3,
  };
  return span as unknown as ReadableSpan;
}

t.test("svc's encoding and the SDK's decode to the same request", async (t) => {
  await fc.assert(
    fc.asyncProperty(fc.array(spanArb, { minLength: 1, maxLength: 6 }), async (spans) => {
      const sdk = ProtobufTraceSerializer.serializeRequest(spans.map(readable))!;
      const { processor, batches } = captured({ maxExportBatchSize: 100 });
      for (const span of spans) processor.onEnd(readable(span));
      const flushed = processor.forceFlush();
      const sampled = spans.filter((s) => s.flags === 1);
      if (sampled.length === 0) {
        t.equal(batches.length, 0, 'unsampled spans are not exported');
        return;
      }
      batches[0]!.done(true);
      await flushed;
      t.equal(batches.length, 1);
      t.equal(batches[0]!.count, sampled.length);
      const expected = sampled.length === spans.length ? sdk : ProtobufTraceSerializer.serializeRequest(sampled.map(readable))!;
      t.same(decoded(batches[0]!.bytes), decoded(expected));
    }),
    { numRuns: 150 },
  );
});

t.test('the writer: lengths of every size, times to the nanosecond, negative integers', async (t) => {
  const w = new ProtoWriter(8);
  for (const size of [0, 1, 127, 128, 16_383, 16_384, 200_000]) {
    w.pos = 0;
    const mark = w.begin(2);
    w.string('x'.repeat(size));
    w.end(mark, 2);
    const outer = w.buf.subarray(0, w.pos);
    // outer length, then the string's own length, then its bytes
    let at = 0;
    let length = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = outer[at++]!;
      length += (byte & 127) * 2 ** shift;
      if (byte < 128) break;
    }
    t.equal(length, outer.length - at, `a ${size}-byte message framed with its exact length`);
  }
  for (const [seconds, nanos] of [
    [0, 0],
    [1, 1],
    [1_764_000_000, 123_456_789],
    [4_294_967_295, 999_999_999],
  ] as const) {
    w.pos = 0;
    w.nanos(seconds, nanos);
    t.equal(w.buf.readBigUInt64LE(0), BigInt(seconds) * 1_000_000_000n + BigInt(nanos), `${seconds} s ${nanos} ns`);
  }
  w.pos = 0;
  w.timeMs(1_764_000_000_123.456);
  t.equal(w.buf.readBigUInt64LE(0), 1_764_000_000_123_456_000n, 'epoch ms with microseconds');
  for (const n of [-1, -(2 ** 40), Number.MIN_SAFE_INTEGER, -(2 ** 63), 2 ** 40, Number.MAX_SAFE_INTEGER, 2 ** 62 + 2 ** 40]) {
    w.pos = 0;
    w.int64(n);
    let v = 0n;
    for (let i = 0; i < w.pos; i++) v |= BigInt(w.buf[i]! & 127) << BigInt(7 * i);
    t.equal(BigInt.asIntN(64, v), BigInt(n), `int64 ${n}`);
  }
});

const one: OtlpSpan = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  parentSpanId: undefined,
  tracestate: undefined,
  name: 'x',
  kind: 1,
  startMs: 1,
  endMs: 2,
  attributes: undefined,
  laterAttributes: undefined,
  droppedAttributesCount: 0,
  events: undefined,
  droppedEventsCount: 0,
  links: undefined,
  droppedLinksCount: 0,
  statusCode: 0,
  statusMessage: undefined,
  flags: 0x101,
};

t.test('the batch processor keeps the queue rules: batch size, queue limit, one export at a time, flush', async (t) => {
  const { processor, batches, shutdowns } = captured({ maxExportBatchSize: 3, maxQueueSize: 5, scheduledDelayMillis: 60_000 });
  for (let i = 0; i < 3; i++) processor.add(one);
  t.equal(batches.length, 1, 'a full batch goes at once');
  t.equal(batches[0]!.count, 3);
  processor.add(one);
  processor.add(one);
  processor.add(one);
  t.equal(processor.dropped, 1, 'three in flight and two waiting fill a queue of five: the sixth is dropped');
  t.equal(batches.length, 1, 'one export at a time');
  let flushed = false;
  const flush = processor.forceFlush().then(() => void (flushed = true));
  const errors: unknown[] = [];
  setGlobalErrorHandler((error) => void errors.push(error));
  t.teardown(() => setGlobalErrorHandler(loggingErrorHandler()));
  batches[0]!.done(false);
  t.match(errors, [{ message: 'collector said no' }], 'a failed export is reported to the global error handler');
  t.equal(batches.length, 2, 'and the next batch goes anyway');
  t.equal(batches[1]!.count, 2);
  await Promise.resolve();
  t.notOk(flushed, 'flush waits for the exporter');
  batches[1]!.done(true);
  await flush;
  t.ok(flushed);
  processor.add(one);
  t.equal(processor.dropped, 0, 'room again: the drop was warned about and the count restarted');
  await Promise.all([processor.forceFlush(), Promise.resolve().then(() => batches[2]!.done(true))]);
  await processor.shutdown();
  t.equal(shutdowns(), 1);
  processor.add(one);
  t.equal(batches.length, 3, 'nothing after shutdown');
});

t.test('attributes set after the start: written after the first ones, a key in both once with the later value', async (t) => {
  const { processor, batches } = captured({ maxExportBatchSize: 1 });
  processor.add({ ...one, attributes: { a: 'start', b: 1, gone: undefined }, laterAttributes: { b: 2, c: true, skipped: undefined, 'é': 'café ☕' } });
  const request = decoded(batches[0]!.bytes) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<{ attributes: unknown }> }> }> };
  t.same(request.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.attributes, [
    { key: 'a', value: { stringValue: 'start' } },
    { key: 'b', value: { intValue: '2' } },
    { key: 'c', value: { boolValue: true } },
    { key: 'é', value: { stringValue: 'café ☕' } },
  ]);
});

t.test('a batch not full goes after the schedule delay', async (t) => {
  // The processor's timer does not hold the process open (a server's exit is not delayed): this one does, meanwhile.
  const alive = setInterval(() => undefined, 1000);
  t.teardown(() => clearInterval(alive));
  const exported = Promise.withResolvers<EncodedBatch>();
  const processor = new OtlpBatchProcessor({ export: (batch, done) => (exported.resolve(batch), done({ code: 0 })), shutdown: async () => undefined }, encodeResource({}), encodeScope('svc', undefined), { scheduledDelayMillis: 5 });
  processor.add(one);
  t.equal((await exported.promise).count, 1);
});

t.test("spans of svc's tracing reach a receiver whole, its own and the SDK tracer's", async (t) => {
  const receiver = await startOtlpReceiver();
  t.teardown(() => receiver.close());
  for (const sampler of ['parentbased_always_on', 'traceidratio']) {
    const tracing = await startTracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: sampler, OTEL_SERVICE_NAME: `svc-${sampler}` }, 'svc-test');
    const shared = { 'svc.org.id': 'acme' };
    const rootSpan = tracing.start('webhook receive', { root: true, kind: 'server', start: 1_764_000_000_000.25, attributes: shared });
    rootSpan.setAttributes({ 'svc.relay.answer': 'accepted', count: 3, ratio: 0.5, ok: true });
    rootSpan.event('relay steps', 1_764_000_000_000.5, { 'svc.steps': 'admission 0.004, dedup 0.011', 'svc.duration_ms': 0.015 });
    tracing.record('relay forward', { parent: rootSpan.traceparent, start: 1_764_000_000_001, end: 1_764_000_000_002.5, kind: 'producer', attributes: shared, error: 'no orchestrator' });
    rootSpan.fail('refused');
    rootSpan.end(1_764_000_000_003);
    await tracing.flush();
    t.same(shared, { 'svc.org.id': 'acme' }, `${sampler}: attributes given at the start are not changed by setAttributes`);
    const spans = receiver.spans.filter((s) => s.service === `svc-${sampler}`);
    const rootOut = spans.find((s) => s.name === 'webhook receive')!;
    const forward = spans.find((s) => s.name === 'relay forward')!;
    t.match(rootOut, { kind: 2, start: 1_764_000_000_000.25, end: 1_764_000_000_003, parentSpanId: undefined, statusCode: 2, statusMessage: 'refused', attributes: { 'svc.org.id': 'acme', 'svc.relay.answer': 'accepted', count: 3, ratio: 0.5, ok: true } }, sampler);
    t.same(rootOut.events, [{ name: 'relay steps', time: 1_764_000_000_000.5, attributes: { 'svc.steps': 'admission 0.004, dedup 0.011', 'svc.duration_ms': 0.015 } }]);
    t.match(forward, { kind: 4, traceId: rootOut.traceId, parentSpanId: rootOut.spanId, start: 1_764_000_000_001, end: 1_764_000_000_002.5, statusCode: 2, statusMessage: 'no orchestrator' });
    await tracing.shutdown();
  }
});
