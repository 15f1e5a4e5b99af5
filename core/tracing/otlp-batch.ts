// The batch span processor of svc's tracing: each span is encoded (otlp-encode.ts) into the open
// batch the moment it ends, and a batch of OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans, or whatever
// waited OTEL_BSP_SCHEDULE_DELAY, goes to the exporter as one OTLP request body. The SDK's
// BatchSpanProcessor keeps the span objects until the export and has them encoded then; here
// nothing of a span outlives its end but its bytes. The queue's rules are the SDK's: at most
// OTEL_BSP_MAX_QUEUE_SIZE spans wait (more are dropped and counted), one export at a time.
import { diag, TraceFlags, type Context } from '@opentelemetry/api';
import { ExportResultCode, globalErrorHandler, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace';
import { ProtoWriter, requestHeader, writeSpan, type OtlpSpan } from './otlp-encode.ts';

/** An OTLP request body and the number of spans in it. */
export interface EncodedBatch {
  bytes: Uint8Array;
  count: number;
}

/** Where batches go: the SDK's OTLP/HTTP export delegate (otel.ts), or a test's. */
export interface BatchExporter {
  export(batch: EncodedBatch, done: (result: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

export interface BatchOptions {
  scheduledDelayMillis?: number | undefined;
  maxQueueSize?: number | undefined;
  maxExportBatchSize?: number | undefined;
}

/** OTLP's span flags: the W3C flags, and whether the parent was remote (bits 0x100 "known", 0x200 "remote"). */
export function spanFlags(traceFlags: number, parentRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | 0x100 | (parentRemote ? 0x200 : 0);
}

function hrMs(time: readonly [number, number]): number {
  return time[0] * 1000 + time[1] / 1e6;
}

/** An SDK span (the tracer's, under samplers that decide per span) in the encoder's shape. */
export function otlpSpanOf(span: ReadableSpan): OtlpSpan {
  const context = span.spanContext();
  return {
    traceId: context.traceId,
    spanId: context.spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    tracestate: context.traceState?.serialize() || undefined,
    name: span.name,
    kind: span.kind + 1,
    startMs: hrMs(span.startTime),
    endMs: hrMs(span.endTime),
    attributes: span.attributes,
    laterAttributes: undefined,
    droppedAttributesCount: span.droppedAttributesCount,
    events: span.events.map((event) => ({ name: event.name, timeMs: hrMs(event.time), attributes: event.attributes, droppedAttributesCount: event.droppedAttributesCount ?? 0 })),
    droppedEventsCount: span.droppedEventsCount,
    links: span.links.map((link) => ({
      traceId: link.context.traceId,
      spanId: link.context.spanId,
      tracestate: link.context.traceState?.serialize() || undefined,
      attributes: link.attributes,
      droppedAttributesCount: link.droppedAttributesCount ?? 0,
      flags: spanFlags(link.context.traceFlags, link.context.isRemote),
    })),
    droppedLinksCount: span.droppedLinksCount,
    statusCode: span.status.code,
    statusMessage: span.status.message,
    flags: spanFlags(context.traceFlags, span.parentSpanContext?.isRemote),
  };
}

interface ReadyBatch {
  writer: ProtoWriter;
  count: number;
  /** 1, 2, …: batches are exported in this order. */
  seq: number;
}

interface Waiter {
  seq: number;
  resolve: () => void;
}

export class OtlpBatchProcessor implements SpanProcessor {
  readonly #exporter: BatchExporter;
  readonly #resource: Uint8Array;
  readonly #scope: Uint8Array;
  /** Bytes kept free before the first span for the request's header (written at export, no copy of the spans). */
  readonly #room: number;
  readonly #delay: number;
  readonly #maxQueue: number;
  readonly #maxBatch: number;
  #open: ProtoWriter;
  #openCount = 0;
  readonly #ready: ReadyBatch[] = [];
  /** Spans encoded and not yet exported (open and closed batches, and the one being exported). */
  #queued = 0;
  #dropped = 0;
  #exporting = false;
  #timer: NodeJS.Timeout | undefined;
  #shutDown = false;
  #closedSeq = 0;
  #exportedSeq = 0;
  /**
   * Buffers of exported batches, written again: a new one costs its pages' first-touch faults
   * (a batch is about 0.7 MB) and its memory counts toward the next garbage collection.
   */
  readonly #spare: ProtoWriter[] = [];
  /** forceFlush callers, each waiting for the batches closed when it was called. */
  #waiting: Waiter[] = [];

  /** `resource` and `scope`: encodeResource and encodeScope of the one resource and scope all spans share. */
  constructor(exporter: BatchExporter, resource: Uint8Array, scope: Uint8Array, options: BatchOptions = {}) {
    this.#exporter = exporter;
    this.#resource = resource;
    this.#scope = scope;
    this.#room = resource.length + scope.length + 16;
    this.#delay = options.scheduledDelayMillis ?? 5000;
    this.#maxQueue = options.maxQueueSize ?? 2048;
    this.#maxBatch = Math.min(options.maxExportBatchSize ?? 512, this.#maxQueue);
    this.#open = new ProtoWriter(64 * 1024, this.#room);
  }

  /** Spans dropped because the queue was full, since the last warning. */
  get dropped(): number {
    return this.#dropped;
  }

  /** A span that ended: encoded into the open batch now. */
  add(span: OtlpSpan): void {
    if (this.#shutDown) return;
    if (this.#queued >= this.#maxQueue) {
      this.#dropped += 1;
      return;
    }
    if (this.#dropped > 0) {
      diag.warn(`Dropped ${this.#dropped} spans because maxQueueSize reached`);
      this.#dropped = 0;
    }
    writeSpan(this.#open, span);
    this.#openCount += 1;
    this.#queued += 1;
    if (this.#openCount >= this.#maxBatch) {
      this.#closeBatch();
      this.#pump();
    } else if (this.#timer === undefined && !this.#exporting) this.#startTimer();
  }

  onStart(_span: Span, _parent: Context): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    this.add(otlpSpanOf(span));
  }

  /** Exports everything encoded so far; resolves when the exporter has answered for all of it. */
  forceFlush(): Promise<void> {
    this.#closeBatch();
    const seq = this.#closedSeq;
    if (this.#exportedSeq >= seq) return Promise.resolve();
    const flushed = new Promise<void>((resolve) => this.#waiting.push({ seq, resolve }));
    this.#pump();
    return flushed;
  }

  async shutdown(): Promise<void> {
    if (this.#shutDown) return;
    await this.forceFlush();
    this.#shutDown = true;
    this.#clearTimer();
    await this.#exporter.shutdown();
  }

  #startTimer(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#closeBatch();
      this.#pump();
    }, this.#delay);
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #closeBatch(): void {
    if (this.#openCount === 0) return;
    this.#closedSeq += 1;
    this.#ready.push({ writer: this.#open, count: this.#openCount, seq: this.#closedSeq });
    // A buffer an export has finished with, else a new one the size this batch reached.
    const spare = this.#spare.pop();
    if (spare === undefined) this.#open = new ProtoWriter(this.#open.pos, this.#room);
    else {
      spare.pos = this.#room;
      this.#open = spare;
    }
    this.#openCount = 0;
  }

  #pump(): void {
    if (this.#exporting) return;
    const batch = this.#ready.shift();
    if (batch === undefined) {
      if (this.#openCount > 0 && this.#timer === undefined) this.#startTimer();
      return;
    }
    this.#clearTimer();
    this.#exporting = true;
    const { writer, count, seq } = batch;
    const header = requestHeader(this.#resource, this.#scope, writer.pos - this.#room);
    const start = this.#room - header.length;
    writer.buf.set(header, start);
    let answered = false;
    const done = (result: ExportResult): void => {
      if (answered) return;
      answered = true;
      this.#queued -= count;
      this.#exporting = false;
      this.#exportedSeq = seq;
      // A collector answers success after reading the whole body: the transport (and its gzip
      // stream, when compressing) is done with the bytes. After a failure or a timeout a stream may
      // still be reading them: that buffer is left to the garbage collector. Two spares are plenty
      // with one export at a time.
      if (result.code === ExportResultCode.SUCCESS && this.#spare.length < 2) this.#spare.push(writer);
      this.#wake();
      if (result.code !== ExportResultCode.SUCCESS) globalErrorHandler(result.error ?? new Error('svc tracing: span export failed'));
      this.#pump();
    };
    try {
      this.#exporter.export({ bytes: writer.buf.subarray(start, writer.pos), count }, done);
    } catch (error) {
      done({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) });
    }
  }

  #wake(): void {
    if (this.#waiting.length === 0) return;
    const still: Waiter[] = [];
    for (const waiter of this.#waiting) {
      if (waiter.seq <= this.#exportedSeq) waiter.resolve();
      else still.push(waiter);
    }
    this.#waiting = still;
  }
}
