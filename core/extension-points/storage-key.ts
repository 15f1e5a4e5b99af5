// Object keys shared by every storage plugin. A key is a relative, slash-separated path whose
// segments are plain names: a hostile key must never address anything outside the storage root
// (filesystem) nor differ in meaning between backends (S3), so the rules are the same for all.
import { InputError } from '../errors.ts';

export const MAX_KEY_BYTES = 1024;
export const MAX_SEGMENT_BYTES = 255;

export class StorageKeyError extends InputError {
  constructor(what: 'key' | 'prefix', value: unknown, reason: string) {
    super('SVC_ERR_STORAGE_KEY_INVALID', `storage ${what} ${describe(value)} is invalid: ${reason}`, {
      details: { reason },
    });
  }
}

function describe(value: unknown): string {
  if (typeof value !== 'string') return `of type ${value === null ? 'null' : typeof value}`;
  // JSON.stringify shows NUL, control characters and backslashes visibly; cap the length.
  const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  return shown;
}

// Control characters (C0, DEL) have no place in a key and NUL would truncate a path.
const CONTROL = /[\u0000-\u001f\u007f]/;

function checkCommon(what: 'key' | 'prefix', value: unknown): string {
  if (typeof value !== 'string') throw new StorageKeyError(what, value, 'must be a string');
  if (!value.isWellFormed()) throw new StorageKeyError(what, value, 'must be well-formed Unicode');
  if (Buffer.byteLength(value, 'utf8') > MAX_KEY_BYTES) {
    throw new StorageKeyError(what, value, `must be at most ${MAX_KEY_BYTES} bytes`);
  }
  if (CONTROL.test(value)) throw new StorageKeyError(what, value, 'must not contain NUL or control characters');
  if (value.includes('\\')) throw new StorageKeyError(what, value, 'must not contain backslashes');
  if (value.startsWith('/')) throw new StorageKeyError(what, value, 'must be relative (no leading "/")');
  return value;
}

function checkSegment(what: 'key' | 'prefix', value: string, segment: string): void {
  if (segment === '') throw new StorageKeyError(what, value, 'must not contain empty segments ("//" or a trailing "/")');
  if (segment === '.' || segment === '..') throw new StorageKeyError(what, value, `must not contain "${segment}" segments`);
  if (Buffer.byteLength(segment, 'utf8') > MAX_SEGMENT_BYTES) {
    throw new StorageKeyError(what, value, `segments must be at most ${MAX_SEGMENT_BYTES} bytes`);
  }
}

/** Throws StorageKeyError (`SVC_ERR_STORAGE_KEY_INVALID`) unless `key` is a valid object key. */
export function assertStorageKey(key: unknown): asserts key is string {
  const value = checkCommon('key', key);
  if (value === '') throw new StorageKeyError('key', key, 'must not be empty');
  for (const segment of value.split('/')) checkSegment('key', value, segment);
}

/** Segments of a valid key. */
export function storageKeySegments(key: string): string[] {
  assertStorageKey(key);
  return key.split('/');
}

/**
 * A list prefix: empty, or whole segments followed by an optional partial last segment
 * (`cache/org-1/`, `cache/org-1/ab`).
 */
export function assertStoragePrefix(prefix: unknown): asserts prefix is string {
  const value = checkCommon('prefix', prefix);
  if (value === '') return;
  const segments = value.split('/');
  const last = segments.pop() as string;
  for (const segment of segments) checkSegment('prefix', value, segment);
  if (Buffer.byteLength(last, 'utf8') > MAX_SEGMENT_BYTES) {
    throw new StorageKeyError('prefix', value, `segments must be at most ${MAX_SEGMENT_BYTES} bytes`);
  }
}
