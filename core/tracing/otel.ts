// The Tracing interface (core/tracing/index.ts) on the official OpenTelemetry SDK: one
// TracerProvider per role, a batch processor, the OTLP/HTTP protobuf exporter. Loaded only when
// tracing is on. Parents are explicit (a `traceparent` string turned into a remote span context),
// so no context manager is registered and nothing global changes.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type IdGenerator,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import { NO_SPAN, nowMs, parseTraceparent, type RecordOptions, type SpanOptions, type TraceAttributes, type TraceSpan, type Tracing, type TracingSettings } from './api.ts';
import { packageVersion } from '../package-info.ts';

const KINDS = { internal: SpanKind.INTERNAL, server: SpanKind.SERVER, client: SpanKind.CLIENT, producer: SpanKind.PRODUCER, consumer: SpanKind.CONSUMER } as const;

/** Random ids, except the one span id `record` hands over for a reserved span (set and used synchronously). */
class ReservableIds implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  next: string | undefined;

  generateTraceId(): string {
    return this.#random.generateTraceId();
  }

  generateSpanId(): string {
    const id = this.next;
    if (id === undefined) return this.#random.generateSpanId();
    this.next = undefined;
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
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

function parentContext(traceparent: string | undefined, tracestate: string | undefined): Context {
  const parsed = parseTraceparent(traceparent);
  if (parsed === null) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
    ...(tracestate ? { traceState: new TraceState(tracestate) } : {}),
  });
}

class LiveSpan implements TraceSpan {
  readonly #span: Span;
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;

  constructor(span: Span) {
    this.#span = span;
    const context = span.spanContext();
    const sampled = (context.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED;
    // A span the sampler dropped passes no parent on: its children are not recorded either.
    this.traceparent = sampled ? `00-${context.traceId}-${context.spanId}-01` : undefined;
    this.tracestate = context.traceState?.serialize() || undefined;
  }

  setAttributes(attributes: TraceAttributes): void {
    this.#span.setAttributes(attributesOf(attributes));
  }

  fail(message: string): void {
    this.#span.setStatus({ code: SpanStatusCode.ERROR, message });
  }

  end(time?: number): void {
    // Always an explicit time: the SDK's own clock for a span with a given start is Date.now(), in whole ms.
    this.#span.end(time ?? nowMs());
  }
}

export function createOtelTracing(settings: TracingSettings): Tracing {
  const ids = new ReservableIds();
  const exporter = new OTLPTraceExporter({ url: settings.url, headers: settings.headers });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ ...settings.resourceAttributes, 'service.name': settings.serviceName, 'service.version': packageVersion() }),
    sampler: samplerOf(settings.sampler),
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor({ exporter, ...settings.batch })],
  });
  const tracer = provider.getTracer('svc', packageVersion());

  const startSpan = (name: string, options: SpanOptions): Span =>
    tracer.startSpan(
      name,
      { kind: KINDS[options.kind ?? 'internal'], attributes: attributesOf(options.attributes), startTime: options.start ?? nowMs() },
      parentContext(options.parent, options.tracestate),
    );

  return {
    enabled: true,
    start: (name, options = {}) => (options.root !== true && parseTraceparent(options.parent) === null ? NO_SPAN : new LiveSpan(startSpan(name, options))),
    record(name, options: RecordOptions) {
      const reserved = parseTraceparent(options.reserved);
      const parent = parseTraceparent(options.parent);
      // An unsampled (or absent) parent: its children are not recorded either.
      if (parent === null) return;
      // A reserved span keeps the id its children already carry; it must sit in the same trace.
      if (reserved !== null && parent !== null && reserved.traceId === parent.traceId) ids.next = reserved.spanId;
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
