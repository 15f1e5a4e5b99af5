// KMS returns ECDSA signatures as DER `SEQUENCE { INTEGER r, INTEGER s }`; JWS and DSSE here use
// JOSE raw r‖s (32 + 32 bytes). DER integers are minimal two's complement: a leading 0x00 when
// the top bit is set, and shorter than 32 bytes when the value is small.
import { SvcError } from '../../../core/errors.ts';

const bad = (why: string) => new SvcError('SVC_ERR_CUSTODY_KMS_SIGNATURE', `KMS returned a signature that is not DER ECDSA: ${why}`);

function readLength(der: Uint8Array, at: number): { length: number; next: number } {
  const first = der[at];
  if (first === undefined) throw bad('truncated length');
  if (first < 0x80) return { length: first, next: at + 1 };
  const count = first & 0x7f;
  if (count === 0 || count > 2) throw bad('unsupported length form');
  let length = 0;
  for (let i = 1; i <= count; i += 1) {
    const byte = der[at + i];
    if (byte === undefined) throw bad('truncated length');
    length = length * 256 + byte;
  }
  return { length, next: at + 1 + count };
}

function readInteger(der: Uint8Array, at: number, size: number): { value: Uint8Array; next: number } {
  if (der[at] !== 0x02) throw bad('expected INTEGER');
  const { length, next } = readLength(der, at + 1);
  if (length === 0 || next + length > der.length) throw bad('bad INTEGER length');
  let bytes = der.subarray(next, next + length);
  if ((bytes[0] as number) & 0x80) throw bad('negative INTEGER');
  while (bytes.length > 1 && bytes[0] === 0) bytes = bytes.subarray(1);
  if (bytes.length > size) throw bad('INTEGER longer than the curve order');
  const value = new Uint8Array(size);
  value.set(bytes, size - bytes.length);
  return { value, next: next + length };
}

/** DER ECDSA signature → raw r‖s of `size` bytes each (32 for P-256). */
export function derToJoseSignature(der: Uint8Array, size = 32): Uint8Array {
  if (der[0] !== 0x30) throw bad('expected SEQUENCE');
  const { length, next } = readLength(der, 1);
  if (next + length !== der.length) throw bad('SEQUENCE length does not match');
  const r = readInteger(der, next, size);
  const s = readInteger(der, r.next, size);
  if (s.next !== der.length) throw bad('trailing bytes');
  const out = new Uint8Array(size * 2);
  out.set(r.value, 0);
  out.set(s.value, size);
  return out;
}

function derInteger(raw: Uint8Array): Uint8Array {
  let bytes = raw;
  while (bytes.length > 1 && bytes[0] === 0) bytes = bytes.subarray(1);
  const body = (bytes[0] as number) & 0x80 ? Uint8Array.from([0, ...bytes]) : bytes;
  return Uint8Array.from([0x02, body.length, ...body]);
}

/** Raw r‖s → DER (the fixture KMS server and tests use it). */
export function joseToDerSignature(raw: Uint8Array): Uint8Array {
  const half = raw.length / 2;
  const r = derInteger(raw.subarray(0, half));
  const s = derInteger(raw.subarray(half));
  const body = Uint8Array.from([...r, ...s]);
  return Uint8Array.from([0x30, body.length, ...body]);
}
