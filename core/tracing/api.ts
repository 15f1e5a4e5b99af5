// The tracing interface, its no-op, the trace clock, traceparent parsing and the OTEL_* settings
// (core/tracing/index.ts starts it; otel.ts implements it on the SDK). Nothing here loads the SDK.
//
// OpenTelemetry traces of a delivery and its run (docs/tracing.md), as an interface the relay,
// orchestrator and agent call whether or not tracing is on. Off (the default: no OTLP endpoint or
// exporter named, or OTEL_SDK_DISABLED=true) every call goes nowhere and the SDK is never loaded;
// on, core/tracing/otel.ts records spans with the official SDK and exports them over OTLP.
//
// Spans cross process boundaries as W3C `traceparent` strings (the wire messages' optional
// `traceparent` field, the run's stored context, a step's TRACEPARENT), so callers hold strings,
// never SDK objects.
import { InputError } from '../errors.ts';

/** Attribute values as OTLP carries them. */
export type TraceAttributes = Record<string, string | number | boolean | undefined>;

export interface SpanOptions {
  /**
   * The parent: its `traceparent` (from another process, the database), or the span itself when
   * it is one of this process (its ids are taken as they are, nothing parsed). Absent or
   * malformed: the span starts a new trace.
   */
  parent?: string | TraceSpan | undefined;
  /** W3C `tracestate` that travels with `parent` (a span parent's own when not given). */
  tracestate?: string | undefined;
  attributes?: TraceAttributes;
  /** Epoch milliseconds (fractions allowed); default now. */
  start?: number;
  kind?: 'internal' | 'server' | 'client' | 'producer' | 'consumer';
  /**
   * A span that may start a trace (the relay's receive, an ingest without a relayed context).
   * Without it a span whose `parent` is absent is not recorded: the parent was not sampled.
   */
  root?: boolean;
}

export interface TraceSpan {
  /** This span's `traceparent` (children and the next hop use it); undefined when not recording. */
  readonly traceparent: string | undefined;
  readonly tracestate: string | undefined;
  /**
   * What to hand the next process (a wire message's `traceparent`): this span's `traceparent`
   * when it is recorded; when the sampler declined the trace, the same ids with the sampled flag
   * off, so the next process declines it too instead of starting a trace of its own; undefined
   * when not tracing.
   */
  readonly propagate: string | undefined;
  setAttributes(attributes: TraceAttributes): void;
  /** Marks the span failed (status ERROR with this message). */
  fail(message: string): void;
  /** A point in the span's life (epoch ms), with attributes: a short step that is not worth a span. */
  event(name: string, time: number, attributes?: TraceAttributes): void;
  /** Ends the span at `time` (epoch ms) or now. A second call does nothing. */
  end(time?: number): void;
}

export interface RecordOptions extends SpanOptions {
  /** The `traceparent` `reserve` gave for this span: the span gets exactly that id. */
  reserved?: string | undefined;
  start: number;
  end: number;
  error?: string | undefined;
}

export interface Tracing {
  readonly enabled: boolean;
  /**
   * `TraceSteps` makes a step shorter than this (ms) an event of its parent instead of a span
   * (SVC_TRACE_SPAN_MIN_MS); 0: every step a span.
   */
  readonly spanMinMs: number;
  /** A live span: ended later by its holder. */
  start(name: string, options?: SpanOptions): TraceSpan;
  /** A finished span with known times (a run, a step, a queue wait), recorded at once. */
  record(name: string, options: RecordOptions): void;
  /**
   * The `traceparent` of a span under `parent` that is recorded later (`record` with `reserved`),
   * so its children (a step's own process) can start before it ends. Undefined when not tracing
   * or the parent is not sampled.
   */
  reserve(parent: string | undefined): string | undefined;
  /** Exports what is buffered (tests, benchmarks). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

export const NO_SPAN: TraceSpan = {
  traceparent: undefined,
  tracestate: undefined,
  propagate: undefined,
  setAttributes: () => undefined,
  fail: () => undefined,
  event: () => undefined,
  end: () => undefined,
};

export const NO_TRACING: Tracing = {
  enabled: false,
  spanMinMs: 0,
  start: () => NO_SPAN,
  record: () => undefined,
  reserve: () => undefined,
  flush: async () => undefined,
  shutdown: async () => undefined,
};

/**
 * The steps of one longer piece of work under `parent` (a delivery's ingest steps, the relay's
 * admission, dedup and answer), each named `<label> <step>`. A step that took
 * `tracing.spanMinMs` or more is a span under `parent`. A shorter one costs less than its own
 * span would (ids, an object, an OTLP record: docs/tracing.md, "Steps as spans or events"), so
 * short steps are events of `parent`, and short steps back to back (each starting where the last
 * ended) are ONE event, `<label> steps`, at the first one's start, with their total as
 * `svc.duration_ms` and each step's name and duration in `svc.steps`
 * (`admission 0.004, verify-signature 0.011, …`, ms). A run of one short step is an event named as
 * its span would be, with its attributes. Every step appears exactly once and no time is hidden.
 * Call `flush` before ending `parent`.
 */
export class TraceSteps {
  readonly #tracing: Tracing;
  readonly #parent: TraceSpan;
  readonly #label: string;
  readonly #stepKey: string | undefined;
  // The pending run of short steps (none while #count is 0): kept in fields, not an object per run.
  #count = 0;
  #start = 0;
  #end = 0;
  /** The first step's name and attributes: a run of one step is an event named as its span would be. */
  #name = '';
  #attributes: TraceAttributes | undefined;
  /** The run's `svc.steps` text in pieces (`name`, ' ', duration, ', ', …), joined once at the flush. */
  readonly #parts: string[] = [];

  /** `stepKey`: the attribute a step's span carries its step name in (`svc.ingest.step`); events have it in their name. */
  constructor(tracing: Tracing, parent: TraceSpan, label: string, stepKey?: string) {
    this.#tracing = tracing;
    this.#parent = parent;
    this.#label = label;
    this.#stepKey = stepKey;
  }

  /** `attributes` is taken over (a lone step's event gets `svc.duration_ms` added); a step in a run of several keeps only its name and duration. */
  step(name: string, start: number, end: number, attributes?: TraceAttributes): void {
    const parent = this.#parent;
    if (parent.traceparent === undefined) return;
    const duration = end - start;
    if (duration >= this.#tracing.spanMinMs) {
      this.flush();
      const spanAttributes: TraceAttributes = attributes ?? {};
      if (this.#stepKey !== undefined) spanAttributes[this.#stepKey] = name;
      this.#tracing.record(`${this.#label} ${name}`, { parent, start, end, attributes: spanAttributes });
      return;
    }
    if (this.#count > 0 && this.#end !== start) this.flush();
    const parts = this.#parts;
    if (this.#count === 0) {
      this.#start = start;
      this.#name = name;
      this.#attributes = attributes;
      parts.length = 0;
    } else parts.push(', ');
    parts.push(name, ' ', millisText(duration));
    this.#end = end;
    this.#count += 1;
  }

  /** The pending short steps as their event. */
  flush(): void {
    if (this.#count === 0) return;
    const duration = Math.round((this.#end - this.#start) * 1000) / 1000;
    if (this.#count === 1) {
      const attributes: TraceAttributes = this.#attributes ?? {};
      attributes['svc.duration_ms'] = duration;
      this.#parent.event(`${this.#label} ${this.#name}`, this.#start, attributes);
    } else this.#parent.event(`${this.#label} steps`, this.#start, { 'svc.duration_ms': duration, 'svc.steps': this.#parts.join('') });
    this.#count = 0;
    this.#attributes = undefined;
  }
}

/** `0.000` … `0.999`: a short step's duration (under a millisecond) is one of these. */
const SUB_MS_TEXT: readonly string[] = Array.from({ length: 1000 }, (_, micros) => `0.${String(micros).padStart(3, '0')}`);

/** Milliseconds with three decimals (`0.004`, `12.500`), rounded to the microsecond: a step's entry in `svc.steps`. */
export function millisText(ms: number): string {
  const micros = Math.round(ms * 1000);
  if (micros >= 0 && micros < 1000) return SUB_MS_TEXT[micros]!;
  if (!(micros >= 0 && micros < 1e15)) return ms.toFixed(3);
  const whole = Math.floor(micros / 1000);
  const part = micros - whole * 1000;
  return `${whole}.${part < 10 ? '00' : part < 100 ? '0' : ''}${part}`;
}

let anchorWall = Date.now();
let anchorMono = performance.now();
/** The monotonic time the wall clock was last compared. */
let checkedMono = anchorMono;

/**
 * Epoch milliseconds with sub-millisecond precision. Spans of one trace come from several
 * processes and from PostgreSQL timestamps, which all read the wall clock; `performance.timeOrigin
 * + performance.now()` drifts from it (tens of ms within a minute, measured here). So this is the
 * monotonic clock anchored to the wall clock, re-anchored whenever they part by more than 1.5 ms.
 */
export function nowMs(): number {
  const mono = performance.now();
  const value = anchorWall + (mono - anchorMono);
  // The clocks part by about a microsecond per millisecond at most (a step of the wall clock
  // aside): comparing them once per millisecond of monotonic time is enough, and a delivery reads
  // the clock a few dozen times within one.
  if (mono - checkedMono < 1) return value;
  checkedMono = mono;
  const wall = Date.now();
  if (Math.abs(wall - value) <= 1.5) return value;
  anchorWall = wall;
  anchorMono = mono;
  checkedMono = mono;
  return wall;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export interface ParsedTraceparent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

// Recent answers by header, newest last: a run's spans recorded one after another (queue wait,
// dispatch) parse the same stored header object. A small ring compared with `===` (no hashing of a
// fresh string, nothing to clear). A span of this process is passed as itself (SpanOptions.parent).
const RECENT = 4;
const recentValues: Array<string | undefined> = new Array<string | undefined>(RECENT).fill(undefined);
const recentParsed: Array<ParsedTraceparent | null> = new Array<ParsedTraceparent | null>(RECENT).fill(null);
let recentNext = 0;

function rememberTraceparent(value: string, parsed: ParsedTraceparent | null): void {
  recentValues[recentNext] = value;
  recentParsed[recentNext] = parsed;
  recentNext = (recentNext + 1) % RECENT;
}

/**
 * A W3C traceparent (version 00), or null when malformed or all-zero ids. Recent answers are kept
 * (a span's children parse its header one after another); the result is shared: read it, do not
 * change it.
 */
export function parseTraceparent(value: string | undefined): ParsedTraceparent | null {
  if (value === undefined) return null;
  for (let i = 1; i <= RECENT; i++) {
    const at = (recentNext - i + RECENT) % RECENT;
    if (recentValues[at] === value) return recentParsed[at] ?? null;
  }
  const parsed = parseTraceparentOnce(value);
  rememberTraceparent(value, parsed);
  return parsed;
}

function parseTraceparentOnce(value: string): ParsedTraceparent | null {
  const match = TRACEPARENT.exec(value.trim());
  if (match === null) return null;
  const [, traceId, spanId, flags] = match as unknown as [string, string, string, string];
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** What the OTEL_* environment says about traces, checked before anything is loaded. */
export interface TracingSettings {
  serviceName: string;
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  url: string;
  headers: Record<string, string>;
  resourceAttributes: Record<string, string>;
  sampler: { name: string; ratio: number };
  batch: { scheduledDelayMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number; exportTimeoutMillis?: number };
  /** SVC_TRACE_SPAN_MIN_MS: a step shorter than this is an event, not a span (`TraceSteps`). */
  spanMinMs: number;
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];

function badSetting(name: string, value: string, reason: string): InputError {
  return new InputError('SVC_ERR_CONFIG_OTEL', `${name}=${value}: ${reason}`, { details: { name } });
}

/** `k=v,k2=v2` with percent-encoded values (OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS). */
function keyValues(name: string, value: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (value ?? '').split(',')) {
    if (part.trim() === '') continue;
    const at = part.indexOf('=');
    if (at <= 0) throw badSetting(name, value ?? '', `"${part}" is not key=value`);
    out[decodeURIComponent(part.slice(0, at).trim())] = decodeURIComponent(part.slice(at + 1).trim());
  }
  return out;
}

function positiveInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw badSetting(name, value, 'must be a positive integer');
  return n;
}

/**
 * Null when tracing is off: OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none, or neither an
 * OTLP endpoint nor OTEL_TRACES_EXPORTER=otlp is set (off by default, unlike the SDK's own
 * default, so a server never sends to localhost:4318 unasked). Bad values are refused at start.
 */
export function tracingSettings(env: NodeJS.ProcessEnv, defaultServiceName: string): TracingSettings | null {
  if ((env['OTEL_SDK_DISABLED'] ?? '').trim().toLowerCase() === 'true') return null;
  const exporter = (env['OTEL_TRACES_EXPORTER'] ?? '').trim().toLowerCase();
  if (exporter === 'none') return null;
  if (exporter !== '' && exporter !== 'otlp') throw badSetting('OTEL_TRACES_EXPORTER', exporter, 'svc exports traces over OTLP only: use otlp or none');
  const tracesEndpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']?.trim();
  const endpoint = env['OTEL_EXPORTER_OTLP_ENDPOINT']?.trim();
  if (exporter === '' && !tracesEndpoint && !endpoint) return null;
  const protocol = (env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ?? env['OTEL_EXPORTER_OTLP_PROTOCOL'] ?? 'http/protobuf').trim();
  if (protocol !== 'http/protobuf') throw badSetting('OTEL_EXPORTER_OTLP_PROTOCOL', protocol, 'svc sends OTLP over HTTP with protobuf bodies: use http/protobuf');
  // The signal-specific URL is used as is; the general one gets the signal's path (OTLP spec).
  const url = tracesEndpoint || `${(endpoint || 'http://localhost:4318').replace(/\/+$/, '')}/v1/traces`;
  try {
    new URL(url);
  } catch {
    throw badSetting(tracesEndpoint ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT', tracesEndpoint || endpoint || '', 'not a URL (e.g. http://collector:4318)');
  }
  const samplerName = (env['OTEL_TRACES_SAMPLER'] ?? 'parentbased_always_on').trim().toLowerCase();
  if (!SAMPLERS.includes(samplerName)) throw badSetting('OTEL_TRACES_SAMPLER', samplerName, `use one of ${SAMPLERS.join(', ')}`);
  const arg = env['OTEL_TRACES_SAMPLER_ARG'];
  const ratio = arg === undefined || arg === '' ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1)) throw badSetting('OTEL_TRACES_SAMPLER_ARG', arg ?? '', 'must be a number from 0 to 1');
  const resourceAttributes = keyValues('OTEL_RESOURCE_ATTRIBUTES', env['OTEL_RESOURCE_ATTRIBUTES']);
  // Batches of 2,048 spans from a queue of 8,192, not the SDK's 512 from 2,048: an export request
  // costs the server a fixed share besides its spans, and four times fewer of them took a fifth
  // of tracing's cost off the ingest bench (docs/benchmarks.md "Ingest with tracing"); such a
  // request is about 0.7 MB, far below a collector's limit (20 MiB by default).
  const batch: TracingSettings['batch'] = { maxQueueSize: 8192 };
  const delay = positiveInt(env, 'OTEL_BSP_SCHEDULE_DELAY');
  if (delay !== undefined) batch.scheduledDelayMillis = delay;
  const queue = positiveInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE');
  if (queue !== undefined) batch.maxQueueSize = queue;
  const size = positiveInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE');
  if (size !== undefined) batch.maxExportBatchSize = size;
  else batch.maxExportBatchSize = Math.min(2048, batch.maxQueueSize!);
  // The SDK would cut an asked-for batch down to the queue; say so instead of exporting other than asked.
  if (batch.maxExportBatchSize > batch.maxQueueSize!) throw badSetting('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', String(batch.maxExportBatchSize), `must not exceed OTEL_BSP_MAX_QUEUE_SIZE (${batch.maxQueueSize})`);
  const timeout = positiveInt(env, 'OTEL_BSP_EXPORT_TIMEOUT');
  if (timeout !== undefined) batch.exportTimeoutMillis = timeout;
  const minRaw = env['SVC_TRACE_SPAN_MIN_MS']?.trim();
  const spanMinMs = minRaw === undefined || minRaw === '' ? 1 : Number(minRaw);
  if (!(spanMinMs >= 0 && spanMinMs <= 60_000)) throw badSetting('SVC_TRACE_SPAN_MIN_MS', minRaw ?? '', 'must be a number of milliseconds from 0 (every step a span) to 60000');
  return {
    spanMinMs,
    serviceName: env['OTEL_SERVICE_NAME']?.trim() || resourceAttributes['service.name'] || defaultServiceName,
    url,
    headers: { ...keyValues('OTEL_EXPORTER_OTLP_HEADERS', env['OTEL_EXPORTER_OTLP_HEADERS']), ...keyValues('OTEL_EXPORTER_OTLP_TRACES_HEADERS', env['OTEL_EXPORTER_OTLP_TRACES_HEADERS']) },
    resourceAttributes,
    sampler: { name: samplerName, ratio },
    batch,
  };
}
