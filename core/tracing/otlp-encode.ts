// OTLP trace protobuf (opentelemetry/proto/trace/v1/trace.proto and collector/trace/v1) written in
// one pass into a growing buffer, span by span as spans end (core/tracing/otlp-batch.ts).
//
// Why not the SDK's serializer (@opentelemetry/otlp-transformer): it encodes a whole batch at
// export time, so every span object waits in the queue for up to a batch (2,048 spans, about a
// third of a second on the ingest bench) and outlives the young generation, and it walks each
// span twice (size, then bytes) turning each id from hex into a new byte array both times. On
// the ingest bench that encoding and the garbage collection it caused were about 60 % of
// tracing's CPU (docs/benchmarks.md "Ingest with tracing"). Written as the span ends, the span
// object dies young and the batch is one buffer. The wire format is checked against the
// official protobuf definitions (test/core/tracing/otlp-encode.test.ts decodes both encoders'
// output and compares).
import type { Attributes, AttributeValue } from '@opentelemetry/api';

/** Wire types. */
const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

const TWO_32 = 4294967296;

/** A span as the encoder needs it (times in epoch ms, fractions to the microsecond). */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  tracestate: string | undefined;
  name: string;
  /** OTLP's SpanKind: the API's SpanKind + 1 (1 internal … 5 consumer). */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Attributes | undefined;
  /** Attributes set after the start (they win over `attributes`' values of the same key). */
  laterAttributes: Attributes | undefined;
  droppedAttributesCount: number;
  events: readonly OtlpEvent[] | undefined;
  droppedEventsCount: number;
  links: readonly OtlpLink[] | undefined;
  droppedLinksCount: number;
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number;
  statusMessage: string | undefined;
  /** W3C trace flags, and OTLP's "has is_remote" (0x100) and "is_remote" (0x200) bits for the parent. */
  flags: number;
}

export interface OtlpEvent {
  name: string;
  timeMs: number;
  attributes: Attributes | undefined;
  droppedAttributesCount?: number;
}

export interface OtlpLink {
  traceId: string;
  spanId: string;
  tracestate: string | undefined;
  attributes: Attributes | undefined;
  droppedAttributesCount: number;
  flags: number;
}

function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  return 5;
}

/** A hex digit's value by its character code (0-9, a-f, A-F). */
const HEX = new Uint8Array(128);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) HEX[97 + i] = HEX[65 + i] = 10 + i;

/** A protobuf writer over one growing buffer; messages are framed with `begin`/`end`. */
export class ProtoWriter {
  buf: Buffer;
  pos: number;

  constructor(capacity = 64 * 1024, start = 0) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, start + 64));
    this.pos = start;
  }

  ensure(bytes: number): void {
    const needed = this.pos + bytes;
    if (needed <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < needed) size *= 2;
    const next = Buffer.allocUnsafe(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
  }

  /** A non-negative integer below 2^32 (tags, lengths, counts, enums). */
  uint(value: number): void {
    this.ensure(5);
    const buf = this.buf;
    let v = value >>> 0;
    while (v > 127) {
      buf[this.pos++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[this.pos++] = v;
  }

  tag(field: number, wireType: number): void {
    this.uint((field << 3) | wireType);
  }

  /** An int64 varint from an integer below 2^63 in magnitude (negative ones in ten bytes, two's complement). */
  int64(value: number): void {
    if (value >= 0 && value < TWO_32) {
      this.uint(value);
      return;
    }
    this.ensure(10);
    let low: number;
    let high: number;
    if (value >= 0) {
      low = value % TWO_32;
      high = Math.floor(value / TWO_32);
    } else {
      const abs = -value;
      low = ~(abs % TWO_32) >>> 0;
      high = ~Math.floor(abs / TWO_32) >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    const buf = this.buf;
    while (high > 0 || low > 127) {
      buf[this.pos++] = (low & 127) | 128;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    buf[this.pos++] = low;
  }

  fixed32(value: number): void {
    this.ensure(4);
    this.#word(value);
  }

  /** A fixed64 from its two 32-bit halves. */
  fixed64(low: number, high: number): void {
    this.ensure(8);
    this.#word(low);
    this.#word(high);
  }

  /** Four bytes, little-endian (room ensured). */
  #word(value: number): void {
    const buf = this.buf;
    buf[this.pos++] = value & 255;
    buf[this.pos++] = (value >>> 8) & 255;
    buf[this.pos++] = (value >>> 16) & 255;
    buf[this.pos++] = (value >>> 24) & 255;
  }

  /** Nanoseconds since the epoch as fixed64, from whole seconds and the nanoseconds past them (exact). */
  nanos(seconds: number, nanos: number): void {
    // seconds·10^9 passes 2^53: split the seconds at 2^16 so each product stays exact.
    const lowSeconds = seconds % 65536;
    const highProduct = Math.floor(seconds / 65536) * 1e9;
    const lowPart = lowSeconds * 1e9 + nanos;
    let low = (highProduct % 65536) * 65536 + (lowPart % TWO_32);
    let high = Math.floor(highProduct / 65536) + Math.floor(lowPart / TWO_32);
    if (low >= TWO_32) {
      low -= TWO_32;
      high += 1;
    }
    this.fixed64(low, high);
  }

  /** Epoch milliseconds (to the microsecond) as fixed64 nanoseconds. */
  timeMs(ms: number): void {
    const micros = Math.round(ms * 1000);
    const seconds = Math.floor(micros / 1e6);
    this.nanos(seconds, (micros - seconds * 1e6) * 1000);
  }

  double(value: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** A length-delimited UTF-8 string. */
  string(value: string): void {
    const length = value.length;
    // Short ASCII strings (names, keys, ids) byte by byte; anything else through Buffer's encoder.
    if (length < 128) {
      this.ensure(length + 1);
      const buf = this.buf;
      const start = this.pos + 1;
      let i = 0;
      for (; i < length; i++) {
        const code = value.charCodeAt(i);
        if (code > 127) break;
        buf[start + i] = code;
      }
      if (i === length) {
        buf[this.pos] = length;
        this.pos = start + length;
        return;
      }
    }
    const bytes = Buffer.byteLength(value, 'utf8');
    this.uint(bytes);
    this.ensure(bytes);
    this.buf.write(value, this.pos, bytes, 'utf8');
    this.pos += bytes;
  }

  /** A length-delimited byte string from hex (a trace or span id). */
  hexBytes(hex: string): void {
    const length = hex.length >>> 1;
    this.ensure(length + 1);
    const buf = this.buf;
    buf[this.pos++] = length;
    let at = this.pos;
    for (let i = 0; i < hex.length; i += 2) buf[at++] = (HEX[hex.charCodeAt(i) & 127]! << 4) | HEX[hex.charCodeAt(i + 1) & 127]!;
    this.pos = at;
  }

  bytes(value: Uint8Array): void {
    this.uint(value.length);
    this.ensure(value.length);
    this.buf.set(value, this.pos);
    this.pos += value.length;
  }

  /**
   * Starts a length-delimited message: room for a `reserve`-byte length is kept; returns the mark
   * for `end`. Guess the common size: a wrong guess costs one move of the message's bytes.
   */
  begin(reserve: number): number {
    this.ensure(reserve);
    const mark = this.pos;
    this.pos += reserve;
    return mark;
  }

  /** Writes the message's length at its mark (moving the message when it needs another size of length). */
  end(mark: number, reserve: number): void {
    const length = this.pos - mark - reserve;
    const size = varintSize(length);
    if (size !== reserve) {
      this.ensure(size - reserve);
      this.buf.copyWithin(mark + size, mark + reserve, this.pos);
      this.pos += size - reserve;
    }
    const buf = this.buf;
    let at = mark;
    let v = length;
    while (v > 127) {
      buf[at++] = (v & 127) | 128;
      v >>>= 7;
    }
    buf[at] = v;
  }
}

function writeAnyValue(w: ProtoWriter, value: AttributeValue | null | undefined | Uint8Array): void {
  if (typeof value === 'string') {
    w.tag(1, LEN);
    w.string(value);
  } else if (typeof value === 'boolean') {
    w.tag(2, VARINT);
    w.uint(value ? 1 : 0);
  } else if (typeof value === 'number') {
    // Any integer an int64 holds (past 2^53 too: such a double is a whole number), as the SDK's encoder does.
    if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63) {
      w.tag(3, VARINT);
      w.int64(value);
    } else {
      w.tag(4, FIXED64);
      w.double(value);
    }
  } else if (value instanceof Uint8Array) {
    w.tag(7, LEN);
    w.bytes(value);
  } else if (Array.isArray(value)) {
    w.tag(5, LEN);
    const array = w.begin(2);
    for (const item of value) {
      w.tag(1, LEN);
      const element = w.begin(1);
      writeAnyValue(w, item);
      w.end(element, 1);
    }
    w.end(array, 2);
  }
  // null and undefined: an empty AnyValue, as the SDK's encoder writes them.
}

function writeKeyValue(w: ProtoWriter, field: number, key: string, value: AttributeValue): void {
  if (typeof value === 'string' && key.length + value.length < 122 && field < 16 && writeShortPair(w, field, key, value)) return;
  w.tag(field, LEN);
  // Most pairs are short; a long string value gets two bytes of length at once instead of a move.
  const long = typeof value === 'string' && value.length > 100 ? 2 : 1;
  const keyValue = w.begin(long);
  w.tag(1, LEN);
  w.string(key);
  w.tag(2, LEN);
  const any = w.begin(long);
  writeAnyValue(w, value);
  w.end(any, long);
  w.end(keyValue, long);
}

/**
 * The common pair, an ASCII key and a short ASCII string (KeyValue{key, AnyValue{string_value}},
 * every length under 128), in one pass without framing; false, and nothing written, when either
 * holds a character past ASCII.
 */
function writeShortPair(w: ProtoWriter, field: number, key: string, value: string): boolean {
  const keyLength = key.length;
  const valueLength = value.length;
  w.ensure(keyLength + valueLength + 8);
  const buf = w.buf;
  let at = w.pos;
  buf[at++] = (field << 3) | LEN;
  buf[at++] = keyLength + valueLength + 6;
  buf[at++] = (1 << 3) | LEN;
  buf[at++] = keyLength;
  let seen = 0;
  for (let i = 0; i < keyLength; i++) {
    const code = key.charCodeAt(i);
    seen |= code;
    buf[at++] = code;
  }
  buf[at++] = (2 << 3) | LEN;
  buf[at++] = valueLength + 2;
  buf[at++] = (1 << 3) | LEN;
  buf[at++] = valueLength;
  for (let i = 0; i < valueLength; i++) {
    const code = value.charCodeAt(i);
    seen |= code;
    buf[at++] = code;
  }
  if (seen > 127) return false;
  w.pos = at;
  return true;
}

/**
 * `attributes` as repeated KeyValue in `field`; undefined values are left out. `later` (set after
 * the start) is written after them, and a key in both is written once, with `later`'s value.
 */
export function writeAttributes(w: ProtoWriter, field: number, attributes: Attributes | undefined, later?: Attributes): void {
  if (attributes !== undefined) {
    for (const key in attributes) {
      const value = attributes[key];
      if (value === undefined || (later !== undefined && later[key] !== undefined)) continue;
      writeKeyValue(w, field, key, value);
    }
  }
  if (later !== undefined) {
    for (const key in later) {
      const value = later[key];
      if (value !== undefined) writeKeyValue(w, field, key, value);
    }
  }
}

function writeEvent(w: ProtoWriter, event: OtlpEvent): void {
  w.tag(11, LEN);
  // An event with attributes (a run of steps names each) is usually past 127 bytes.
  const reserve = event.attributes === undefined ? 1 : 2;
  const mark = w.begin(reserve);
  w.tag(1, FIXED64);
  w.timeMs(event.timeMs);
  w.tag(2, LEN);
  w.string(event.name);
  writeAttributes(w, 3, event.attributes);
  writeCount(w, 4, event.droppedAttributesCount);
  w.end(mark, reserve);
}

/** Fields 1-3 of a Span and of a Link alike: trace id, span id, trace state. */
function writeIds(w: ProtoWriter, traceId: string, spanId: string, traceState: string | undefined): void {
  w.tag(1, LEN);
  w.hexBytes(traceId);
  w.tag(2, LEN);
  w.hexBytes(spanId);
  if (traceState) {
    w.tag(3, LEN);
    w.string(traceState);
  }
}

/** A count field, left out when zero (proto3's default). */
function writeCount(w: ProtoWriter, field: number, count: number | undefined): void {
  if (!count) return;
  w.tag(field, VARINT);
  w.uint(count);
}

function writeLink(w: ProtoWriter, link: OtlpLink): void {
  w.tag(13, LEN);
  const mark = w.begin(1);
  writeIds(w, link.traceId, link.spanId, link.tracestate);
  writeAttributes(w, 4, link.attributes);
  writeCount(w, 5, link.droppedAttributesCount);
  w.tag(6, FIXED32);
  w.fixed32(link.flags);
  w.end(mark, 1);
}

/** One span as a ScopeSpans `spans` entry (field 2, tag and length included). */
export function writeSpan(w: ProtoWriter, span: OtlpSpan): void {
  w.tag(2, LEN);
  // A traced delivery's spans are 100-500 bytes: two bytes of length.
  const mark = w.begin(2);
  writeIds(w, span.traceId, span.spanId, span.tracestate);
  if (span.parentSpanId !== undefined) {
    w.tag(4, LEN);
    w.hexBytes(span.parentSpanId);
  }
  w.tag(5, LEN);
  w.string(span.name);
  w.tag(6, VARINT);
  w.uint(span.kind);
  w.tag(7, FIXED64);
  w.timeMs(span.startMs);
  w.tag(8, FIXED64);
  w.timeMs(span.endMs);
  writeAttributes(w, 9, span.attributes, span.laterAttributes);
  writeCount(w, 10, span.droppedAttributesCount);
  if (span.events !== undefined) for (const event of span.events) writeEvent(w, event);
  writeCount(w, 12, span.droppedEventsCount);
  if (span.links !== undefined) for (const link of span.links) writeLink(w, link);
  writeCount(w, 14, span.droppedLinksCount);
  if (span.statusCode !== 0 || span.statusMessage) {
    w.tag(15, LEN);
    const status = w.begin(1);
    if (span.statusMessage) {
      w.tag(2, LEN);
      w.string(span.statusMessage);
    }
    w.tag(3, VARINT);
    w.uint(span.statusCode);
    w.end(status, 1);
  }
  w.tag(16, FIXED32);
  w.fixed32(span.flags);
  w.end(mark, 2);
}

/**
 * What precedes a batch's spans: ResourceSpans{resource, ScopeSpans{scope, …}}. `resource` and
 * `scope` are the encoded Resource (field 1 of ResourceSpans) and InstrumentationScope (field 1
 * of ScopeSpans), tags included.
 */
export function requestHeader(resource: Uint8Array, scope: Uint8Array, spansLength: number): Buffer {
  const scopeSpans = scope.length + spansLength;
  const resourceSpans = resource.length + 1 + varintSize(scopeSpans) + scopeSpans;
  const w = new ProtoWriter(64 + resource.length + scope.length);
  w.tag(1, LEN);
  w.uint(resourceSpans);
  w.buf.set(resource, w.pos);
  w.pos += resource.length;
  w.tag(2, LEN);
  w.uint(scopeSpans);
  w.buf.set(scope, w.pos);
  w.pos += scope.length;
  return w.buf.subarray(0, w.pos);
}

/** The Resource message as field 1 of ResourceSpans. */
export function encodeResource(attributes: Attributes): Buffer {
  const w = new ProtoWriter(1024);
  w.tag(1, LEN);
  const mark = w.begin(2);
  writeAttributes(w, 1, attributes);
  w.end(mark, 2);
  return Buffer.from(w.buf.subarray(0, w.pos));
}

/** The InstrumentationScope message as field 1 of ScopeSpans. */
export function encodeScope(name: string, version: string | undefined): Buffer {
  const w = new ProtoWriter(256);
  w.tag(1, LEN);
  const mark = w.begin(1);
  w.tag(1, LEN);
  w.string(name);
  if (version) {
    w.tag(2, LEN);
    w.string(version);
  }
  w.end(mark, 1);
  return Buffer.from(w.buf.subarray(0, w.pos));
}
