// Generators shared by the fuzz suites (fast-check): what a hostile or broken sender can put in a
// webhook request — header sets of known and unknown names with any printable value, bodies of
// random bytes, text, JSON, or a real payload with fields replaced by values of the wrong type.
// Values stay within what an HTTP client can send at all (no CR/LF in header values): what the
// wire itself forbids is the parser's business, covered by test/kernel/services/http/client-error.
import fc from 'fast-check';
import { errorCodeEntry } from '../../core/error-codes.ts';
import { volume } from '../fixtures/volume.ts';

/**
 * How many generated cases each property runs: SVC_FUZZ_RUNS, or else a fifth of the file's
 * default in `npm test` (every generator and property still runs) and five times it in
 * `npm run test:full`.
 */
export function fuzzRuns(defaultRuns: number): number {
  const fromEnv = Number(process.env['SVC_FUZZ_RUNS']);
  return Number.isSafeInteger(fromEnv) && fromEnv > 0 ? fromEnv : volume(Math.ceil(defaultRuns / 5), defaultRuns * 5);
}

/**
 * The file's time limit: 15 minutes for the suite's defaults (an hour in test:full); none for a run scaled by
 * SVC_FUZZ_RUNS, which takes as long as the cases take (the operator stops it).
 */
export function fuzzTimeout(): number {
  return process.env['SVC_FUZZ_RUNS'] === undefined ? volume(900_000, 3_600_000) : 0;
}

/**
 * Whether to fuzz against this database: SVC_FUZZ_DATABASES (`system`, `embedded`, or both,
 * comma-separated) narrows a long run to one of them; unset, both.
 */
export function fuzzDatabase(kind: 'system' | 'embedded'): boolean {
  const chosen = process.env['SVC_FUZZ_DATABASES'];
  return chosen === undefined || chosen === '' || chosen.split(',').map((s) => s.trim()).includes(kind);
}

/** The environment a server under test inherits: the test's own SVC_FUZZ_ knobs are no settings. */
export function serverEnv(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined && !e[0].startsWith('SVC_FUZZ_')));
}

const printable = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));
export const headerValue = fc.oneof(
  fc.string({ unit: printable, maxLength: 120 }),
  fc.constantFrom('', ' ', 'sha256=', 'sha256=' + '0'.repeat(64), 'Bearer ', 'application/json; charset=utf-16', 'gzip', '\t'),
);
const headerName = fc.oneof(
  fc.constantFrom(
    'content-type',
    'content-encoding',
    'x-hub-signature-256',
    'x-hub-signature',
    'x-github-event',
    'x-github-delivery',
    'x-github-hook-installation-target-id',
    'x-provider-event',
    'x-provider-delivery',
    'x-provider-hook-installation-target-id',
    'x-request-id',
    'idempotency-key',
    'x-delivery-id',
    'authorization',
    'x-forwarded-for',
    'user-agent',
  ),
  fc.stringMatching(/^x-[a-z0-9-]{1,24}$/),
);
export const headerSet = fc.dictionary(headerName, headerValue, { maxKeys: 8 });

/** A JSON value without the lone surrogates JSON.stringify would still write. */
const jsonValue = fc.jsonValue({ maxDepth: 4 });

/** `base` with some top-level fields replaced, removed or added (wrong types included). */
export function mutatedObject(base: Record<string, unknown>, value: fc.Arbitrary<unknown> = jsonValue): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys(base);
  return fc
    .record({
      replace: keys.length === 0 ? fc.constant({}) : fc.dictionary(fc.constantFrom(...keys), value, { maxKeys: 4 }),
      remove: fc.subarray(keys, { maxLength: Math.min(3, keys.length) }),
      add: fc.dictionary(fc.string({ maxLength: 12 }), value, { maxKeys: 2 }),
    })
    .map(({ replace, remove, add }) => {
      const out: Record<string, unknown> = { ...base, ...add, ...replace };
      for (const k of remove) delete out[k];
      return out;
    });
}

export function bodyOf(payload: Record<string, unknown>): fc.Arbitrary<Buffer> {
  return fc.oneof(
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 2_048 }).map((b) => Buffer.from(b)) },
    { weight: 2, arbitrary: fc.string({ maxLength: 1_024 }).map((s) => Buffer.from(s, 'utf8')) },
    { weight: 2, arbitrary: jsonValue.map((v) => Buffer.from(JSON.stringify(v) ?? 'null')) },
    { weight: 4, arbitrary: mutatedObject(payload).map((v) => Buffer.from(JSON.stringify(v))) },
    { weight: 1, arbitrary: fc.constantFrom(Buffer.alloc(0), Buffer.from('{'), Buffer.from('{"a":'.repeat(2_000)), Buffer.from('[]'), Buffer.from('null')) },
  );
}

/** The answer's shape: 2xx with a status word, or a refusal with a catalogued code. */
export function answerProblem(status: number, text: string, allowed: ReadonlySet<number>): string | undefined {
  if (!allowed.has(status)) return `status ${status} is not one the spec allows here`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `status ${status} with a body that is not JSON: ${text.slice(0, 80)}`;
  }
  if (status < 300) return typeof (body as { status?: unknown }).status === 'string' ? undefined : `2xx without a status word: ${text.slice(0, 80)}`;
  const code = (body as { error?: { code?: unknown } }).error?.code;
  if (typeof code !== 'string' || errorCodeEntry(code) === undefined) return `status ${status} without a catalogued error code: ${text.slice(0, 120)}`;
  return undefined;
}

export function tally(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

export function describeTally(counts: Map<string, number>): string {
  return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}: ${v}`).join(', ');
}

/**
 * A long run (SVC_FUZZ_RUNS set) writes a line to stderr every 5% of its cases, with the answers
 * so far, so a run stopped before its end still says how far it got. Call the result once per case.
 */
export function progress(label: string, total: number, counts: Map<string, number>): () => void {
  if (process.env['SVC_FUZZ_RUNS'] === undefined) return () => undefined;
  const every = Math.max(100, Math.round(total / 20));
  const started = Date.now();
  let done = 0;
  return () => {
    done++;
    if (done % every !== 0) return;
    const seconds = Math.round((Date.now() - started) / 1000);
    process.stderr.write(`[fuzz ${new Date().toISOString()}] ${label}: ${done}/${total} after ${seconds} s; ${describeTally(counts)}\n`);
  };
}

