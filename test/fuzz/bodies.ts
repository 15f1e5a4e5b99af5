// Generators for the fuzzing of JSON APIs (admin-api.test.ts, relay-api.test.ts): a request body
// as bytes with the content type it is sent under, built from what the route accepts — valid
// bodies, the same with fields replaced by values of the wrong type, removed or added, nested
// junk, huge and unicode strings — or from nothing it accepts: random bytes, text, broken JSON.
// Bodies are JSON text with `@0`, `@1`… standing for ids only known when the case runs (ids of
// dead-lettered events, say): `fill` swaps them in just before the request.
import fc from 'fast-check';
import { mutatedObject } from './arbitraries.ts';

export interface BodyCase {
  /** undefined: no content-type header. */
  contentType: string | undefined;
  /** The body's text; undefined: no body at all. */
  text: string | undefined;
}

/** Strings a careless handler trips on: empty, blanks, NUL, lone surrogates, right-to-left, long. */
export const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff x', '\u202e', '💥', '../../etc/passwd', "'; drop table runs; --", '%00', '${x}', '__proto__', 'constructor') },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 70_000 }).map((n) => 'x'.repeat(n)) },
);

/** Any JSON value, strings hostile; nested a few levels. */
export const junkValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -1, 1e308, 2 ** 53, -(2 ** 31), 2_147_483_648)),
    hostileString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', '')), tie('value'), { maxKeys: 4 }),
  ),
})).value;

const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/merge-patch+json',
      'application/octet-stream',
      'application/json, text/plain',
      '',
    ),
  },
);

/** A body for a route whose valid bodies `valid` generates. */
export function bodyCase(valid: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<BodyCase> {
  const json = (v: unknown): string => JSON.stringify(v) ?? 'null';
  const text = fc.oneof(
    { weight: 6, arbitrary: valid.map(json) },
    { weight: 6, arbitrary: valid.chain((v) => mutatedObject(v, junkValue)).map(json) },
    { weight: 2, arbitrary: junkValue.map(json) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b).toString('latin1')) },
    { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.constantFrom('', '{', '}', '{"a":', '{"a":1,}', "{'a':1}", 'null', '[]', '"x"', '1', 'true', '{"a":1}{"b":2}', '{"__proto__":{"x":1}}', '[{"a":'.repeat(500)) },
    // Past the default body limit (1 MiB): a 413, never read into a handler.
    { weight: 1, arbitrary: fc.constant(`{"description":"${'x'.repeat(1_100_000)}"}`) },
  );
  return fc.record({ contentType, text: fc.oneof({ weight: 20, arbitrary: text }, { weight: 1, arbitrary: fc.constant(undefined) }) });
}

/** The body's text with the placeholders `"@0"`, `"@1"`… replaced by `ids` (JSON strings). */
export function fill(text: string | undefined, ids: readonly string[]): string | undefined {
  return text?.replace(/"@(\d)"/g, (whole, n: string) => JSON.stringify(ids[Number(n)] ?? '00000000-0000-4000-8000-000000000000'));
}

/** The JSON the server was asked to apply (whatever the content type said), or undefined. */
export function askedJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A query string from known and unknown keys with values valid or not. */
export function queryString(keys: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  const known = Object.keys(keys);
  const pair = fc.oneof(
    { weight: 4, arbitrary: known.length === 0 ? fc.constant(['x', '1'] as [string, string]) : fc.constantFrom(...known).chain((k) => fc.tuple(fc.constant(k), fc.oneof({ weight: 3, arbitrary: keys[k]! }, { weight: 1, arbitrary: hostileString }))) },
    { weight: 1, arbitrary: fc.tuple(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'limit[]', 'a.b')), hostileString) },
  );
  return fc.oneof(
    { weight: 8, arbitrary: fc.array(pair, { maxLength: 3 }).map((pairs) => (pairs.length === 0 ? '' : `?${new URLSearchParams(pairs).toString()}`)) },
    { weight: 1, arbitrary: fc.constantFrom('?', '?%ZZ', '?limit=1&limit=2', '?=', '?&&', '?limit=%00', '?org=%F0%9F', '?limit=1e3', '?limit=0x10') },
  );
}

/** encodeURIComponent throws on an unpaired surrogate: those travel as raw bytes (`%ED%A0%80`) instead. */
const encode = (s: string): string => encodeURIComponent(s.toWellFormed());

/** A path segment, valid or not, encoded for a URL. */
export function segment(valid: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: valid.map(encode) },
    { weight: 2, arbitrary: hostileString.filter((s) => s.length > 0 && s.length < 3_000).map(encode) },
    { weight: 1, arbitrary: fc.constantFrom('%2e%2e', '%2F', '%00', '%ZZ', '..', '.', 'x%20y', '%C0%AF', '%ED%A0%80', '%FF') },
  );
}
