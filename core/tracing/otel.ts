// The Tracing interface (core/tracing/index.ts) on the official OpenTelemetry SDK: one
// TracerProvider per role, svc's batch processor (otlp-batch.ts: spans encoded as they end) and
// the SDK's OTLP/HTTP export (transport, retries, timeouts) with protobuf bodies. Loaded only when
// tracing is on. Parents are explicit (a `traceparent` string turned into a remote span context),
// so no context manager is registered and nothing global changes.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { convertLegacyHttpOptions, createOtlpHttpExportDelegate } from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { randomBytes } from 'node:crypto';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type IdGenerator, type Sampler } from '@opentelemetry/sdk-trace';
import { NO_SPAN, nowMs, parseTraceparent, type ParsedTraceparent, type RecordOptions, type SpanOptions, type TraceAttributes, type TraceSpan, type Tracing, type TracingSettings } from './api.ts';
import { OtlpBatchProcessor, spanFlags, type BatchExporter, type EncodedBatch } from './otlp-batch.ts';
import { encodeResource, encodeScope, type OtlpEvent, type OtlpLink, type OtlpSpan } from './otlp-encode.ts';
import { packageVersion } from '../package-info.ts';

const KINDS = { internal: SpanKind.INTERNAL, server: SpanKind.SERVER, client: SpanKind.CLIENT, producer: SpanKind.PRODUCER, consumer: SpanKind.CONSUMER } as const;

const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

/**
 * Random ids from the system's generator, hex-encoded 4 KiB at a time (an id is a slice of that
 * text: no call per id), except the one span id `record` hands over for a reserved span (set and
 * used synchronously). An all-zero id is invalid (W3C) and never given.
 */
class ReservableIds implements IdGenerator {
  #hex = '';
  #at = 0;
  next: string | undefined;

  #take(chars: number): string {
    if (this.#at + chars > this.#hex.length) {
      this.#hex = randomBytes(4096).toString('hex');
      this.#at = 0;
    }
    const id = this.#hex.slice(this.#at, this.#at + chars);
    this.#at += chars;
    return id;
  }

  generateTraceId(): string {
    let id = this.#take(32);
    while (id === ZERO_TRACE_ID) id = this.#take(32);
    return id;
  }

  generateSpanId(): string {
    const reserved = this.next;
    if (reserved !== undefined) {
      this.next = undefined;
      return reserved;
    }
    let id = this.#take(16);
    while (id === ZERO_SPAN_ID) id = this.#take(16);
    return id;
  }
}

function samplerOf(settings: TracingSettings['sampler']): Sampler {
  const ratio = new TraceIdRatioBasedSampler(settings.ratio);
  switch (settings.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

function attributesOf(attributes: TraceAttributes | undefined): Attributes {
  const out: Attributes = {};
  if (attributes === undefined) return out;
  // for-in over a small literal: Object.entries allocated an array per attribute (hot: every span and step).
  for (const key in attributes) {
    const value = attributes[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The parent's ids: a span of this process as it is, a header parsed. */
function parentOf(parent: SpanOptions['parent']): ParsedTraceparent | null {
  if (parent instanceof DirectSpan) return parent;
  return parseTraceparent(typeof parent === 'string' ? parent : parent?.traceparent);
}

/** The `tracestate` going with the parent: the one given, else a span parent's own. */
function tracestateOf(options: SpanOptions): string | undefined {
  if (options.tracestate !== undefined) return options.tracestate;
  return typeof options.parent === 'object' ? options.parent.tracestate : undefined;
}

function parentContext(parent: SpanOptions['parent'], tracestate: string | undefined): Context {
  const parsed = parentOf(parent);
  if (parsed === null) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
    ...(tracestate ? { traceState: new TraceState(tracestate) } : {}),
  });
}

/** Epoch milliseconds (fractions kept to the microsecond) as OpenTelemetry's [seconds, nanoseconds]. */
function hrTime(ms: number): [number, number] {
  const micros = Math.round(ms * 1000);
  const seconds = Math.floor(micros / 1e6);
  return [seconds, (micros - seconds * 1e6) * 1e3];
}

class LiveSpan implements TraceSpan {
  readonly #span: Span;
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  readonly propagate: string;

  constructor(span: Span) {
    this.#span = span;
    const context = span.spanContext();
    const sampled = (context.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
    // A span the sampler dropped is no parent here (its children are not recorded either), and
    // the next process hears "not sampled".
    this.propagate = `00-${context.traceId}-${context.spanId}-${sampled ? '01' : '00'}`;
    this.traceparent = sampled ? this.propagate : undefined;
    this.tracestate = context.traceState?.serialize() || undefined;
  }

  setAttributes(attributes: TraceAttributes): void {
    this.#span.setAttributes(attributesOf(attributes));
  }

  fail(message: string): void {
    this.#span.setStatus({ code: SpanStatusCode.ERROR, message });
  }

  event(name: string, time: number, attributes?: TraceAttributes): void {
    this.#span.addEvent(name, attributesOf(attributes), hrTime(time));
  }

  end(time?: number): void {
    // Always an explicit time: the SDK's own clock for a span with a given start is Date.now(), in whole ms.
    this.#span.end(time ?? nowMs());
  }
}

const SAMPLED_CHILD_FLAGS = spanFlags(TraceFlags.SAMPLED, true);
const SAMPLED_ROOT_FLAGS = spanFlags(TraceFlags.SAMPLED, undefined);

/**
 * A span made without the SDK's tracer: a child of a sampled parent under a parent-based sampler,
 * or a root under a sampler that takes every root. Such a span is always sampled, so the tracer's
 * context lookups, sampler call and span object decide nothing. It is its own OTLP record (`OtlpSpan`): ended, it is encoded into
 * the processor's open batch at once and nothing of it is kept.
 */
class DirectSpan implements TraceSpan, OtlpSpan, ParsedTraceparent {
  readonly sampled = true;
  readonly traceparent: string;
  readonly propagate: string;
  readonly tracestate: string | undefined;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly kind: number;
  readonly startMs: number;
  endMs = 0;
  readonly attributes: Attributes | undefined;
  laterAttributes: Attributes | undefined = undefined;
  readonly droppedAttributesCount = 0;
  events: OtlpEvent[] | undefined = undefined;
  readonly droppedEventsCount = 0;
  readonly links: readonly OtlpLink[] | undefined = undefined;
  readonly droppedLinksCount = 0;
  statusCode = 0;
  statusMessage: string | undefined = undefined;
  readonly flags: number;
  #processor: OtlpBatchProcessor | undefined;

  /** `parent` without a span id: a root (made so only where the sampler takes every root). `options.attributes` is taken over. */
  constructor(processor: OtlpBatchProcessor, name: string, parent: ParsedTraceparent | { traceId: string; spanId?: undefined }, spanId: string, options: SpanOptions) {
    this.traceId = parent.traceId;
    this.spanId = spanId;
    this.parentSpanId = parent.spanId;
    const given = tracestateOf(options);
    const traceState = given && parent.spanId !== undefined ? given : undefined;
    this.tracestate = traceState;
    this.name = name;
    this.kind = KINDS[options.kind ?? 'internal'] + 1;
    this.startMs = options.start ?? nowMs();
    this.attributes = options.attributes;
    this.flags = parent.spanId === undefined ? SAMPLED_ROOT_FLAGS : SAMPLED_CHILD_FLAGS;
    this.#processor = processor;
    this.traceparent = `00-${parent.traceId}-${spanId}-01`;
    this.propagate = this.traceparent;
  }

  event(name: string, time: number, attributes?: TraceAttributes): void {
    if (this.#processor === undefined) return;
    const event: OtlpEvent = { name, timeMs: time, attributes };
    if (this.events === undefined) this.events = [event];
    else this.events.push(event);
  }

  setAttributes(attributes: TraceAttributes): void {
    // Kept apart from the start's attributes (which may be the caller's, shared by several spans):
    // the encoder writes both, a key in both once with this value.
    const later = (this.laterAttributes ??= {});
    for (const key in attributes) {
      const value = attributes[key];
      if (value !== undefined) later[key] = value;
    }
  }

  fail(message: string): void {
    this.statusCode = SpanStatusCode.ERROR;
    this.statusMessage = message;
  }

  end(time?: number): void {
    const processor = this.#processor;
    if (processor === undefined) return;
    this.#processor = undefined;
    this.endMs = Math.max(time ?? nowMs(), this.startMs);
    processor.add(this);
  }
}

/** The SDK's OTLP/HTTP export (transport, retries, timeout, OTEL_EXPORTER_OTLP_* headers) for encoded batches. */
function otlpHttpExporter(settings: TracingSettings): BatchExporter {
  const options = convertLegacyHttpOptions({ url: settings.url, headers: settings.headers, ...(settings.batch.exportTimeoutMillis === undefined ? {} : { timeoutMillis: settings.batch.exportTimeoutMillis }) }, 'TRACES', 'v1/traces', { 'Content-Type': 'application/x-protobuf' });
  const serializer = { serializeRequest: (batch: EncodedBatch) => batch.bytes, deserializeResponse: (data: Uint8Array) => ProtobufTraceSerializer.deserializeResponse(data) };
  return createOtlpHttpExportDelegate(options, serializer, 'otlp_http_span_exporter', { name: 'span', countItems: (batch: EncodedBatch) => batch.count }, undefined);
}

export function createOtelTracing(settings: TracingSettings): Tracing {
  const ids = new ReservableIds();
  const resourceAttributes = { ...settings.resourceAttributes, 'service.name': settings.serviceName, 'service.version': packageVersion() };
  const resource = resourceFromAttributes(resourceAttributes);
  const processor = new OtlpBatchProcessor(otlpHttpExporter(settings), encodeResource(resourceAttributes), encodeScope('svc', packageVersion()), settings.batch);
  const provider = new TracerProvider({ resource, sampler: samplerOf(settings.sampler), idGenerator: ids, spanProcessors: [processor] });
  const tracer = provider.getTracer('svc', packageVersion());
  // Under a parent-based sampler (the default) a child follows its parent's sampled flag, so the
  // SDK's sampler has nothing to decide for it: children take the short path (DirectSpan).
  const parentBased = settings.sampler.name.startsWith('parentbased_');
  // Samplers that take every root: a root needs no sampler call either.
  const everyRoot = settings.sampler.name === 'parentbased_always_on' || settings.sampler.name === 'always_on' || (settings.sampler.name.endsWith('traceidratio') && settings.sampler.ratio >= 1);

  const startSpan = (name: string, options: SpanOptions): Span =>
    tracer.startSpan(
      name,
      { kind: KINDS[options.kind ?? 'internal'], attributes: attributesOf(options.attributes), startTime: options.start ?? nowMs() },
      parentContext(options.parent, tracestateOf(options)),
    );

  /** A span under `parent`, or the tracer's span when the sampler must decide; null: not recorded. */
  const child = (name: string, parent: ParsedTraceparent, options: SpanOptions, spanId?: string): TraceSpan | null => {
    if (!parentBased) return null;
    if (!parent.sampled) return NO_SPAN;
    return new DirectSpan(processor, name, parent, spanId ?? ids.generateSpanId(), options);
  };

  return {
    enabled: true,
    spanMinMs: settings.spanMinMs,
    start(name, options = {}) {
      const parent = parentOf(options.parent);
      if (parent === null) {
        if (options.root !== true) return NO_SPAN;
        if (everyRoot) return new DirectSpan(processor, name, { traceId: ids.generateTraceId() }, ids.generateSpanId(), options);
        return new LiveSpan(startSpan(name, options));
      }
      return child(name, parent, options) ?? new LiveSpan(startSpan(name, options));
    },
    record(name, options: RecordOptions) {
      const parent = parentOf(options.parent);
      // An unsampled (or absent) parent: its children are not recorded either.
      if (parent === null) return;
      const reserved = parseTraceparent(options.reserved);
      // A reserved span keeps the id its children already carry; it must sit in the same trace.
      const spanId = reserved !== null && reserved.traceId === parent.traceId ? reserved.spanId : undefined;
      const short = child(name, parent, options, spanId);
      if (short !== null) {
        if (options.error !== undefined) short.fail(options.error);
        short.end(options.end);
        return;
      }
      ids.next = spanId;
      const span = startSpan(name, options);
      ids.next = undefined;
      if (options.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: options.error });
      span.end(Math.max(options.end, options.start));
    },
    reserve(parent) {
      const parsed = parseTraceparent(parent);
      if (parsed === null || !parsed.sampled) return undefined;
      return `00-${parsed.traceId}-${ids.generateSpanId()}-01`;
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
