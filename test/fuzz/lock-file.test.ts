// Fuzzing lock-file reading as the orchestrator does it (readLockText, then matchLock): a real
// lock with one value anywhere in its tree replaced by a generated JSON value — its content hash
// recomputed so the mutation reaches the schema and the matcher instead of stopping at the hash
// check — and raw generated text. Reading never throws (a bad lock is a `corrupt` verdict with a
// message the delivery record carries), and a lock that reads as valid never makes the matcher
// throw. Cases: SVC_FUZZ_RUNS (default 5,000 each).
import fc from 'fast-check';
import t from 'tap';
import { readLockText } from '../../kernel/orchestrator/ingest/steps/lock-fetch.ts';
import { normalizeGithubPayload } from '../../plugins/providers/shared/github-payload.ts';
import { computeLockContentHash } from '../../workflow/lock/lock-file.ts';
import { matchLock } from '../../workflow/matching/index.ts';
import { pullRequestPayload, pushPayload } from '../fixtures/github-payloads.ts';
import { job, lockOf, trig, workflow } from '../fixtures/locks.ts';
import { describeTally, fuzzRuns, tally } from './arbitraries.ts';

// Long runs (SVC_FUZZ_RUNS) take minutes, also when this file is run on its own.
const RUNS = fuzzRuns(5_000);
const LOCK = lockOf([
  workflow('ci', [trig.push({ branches: ['main', 'release/*'], paths: ['src/**'] }), trig.pr()], [job('build'), job('test')]),
  workflow('nightly', [trig.schedule(), trig.dispatch()], [job('sweep')]),
  workflow('deploy', [trig.tag({ tags: ['v*'] }), trig.webhook({ events: ['deploy'] })], [job('ship')]),
]);
const EVENTS = [
  normalizeGithubPayload('github', 'push', pushPayload({ ref: 'refs/heads/main', files: { modified: ['src/a.ts'] } })),
  normalizeGithubPayload('github', 'pull_request', pullRequestPayload({ action: 'opened' })),
];

/** Every path into a JSON tree (object keys and array indexes). */
function pathsOf(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (value === null || typeof value !== 'object') return [prefix];
  const children = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return [prefix, ...children.flatMap(([k, v]) => pathsOf(v, [...prefix, k]))];
}
const PATHS = pathsOf(JSON.parse(JSON.stringify(LOCK))).filter((p) => p.length > 0 && p[0] !== 'contentHash');

function replaced(at: Array<string | number>, value: unknown): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(LOCK)) as Record<string, unknown>;
  let node: Record<string | number, unknown> = copy;
  for (const key of at.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[at.at(-1)!] = value;
  return copy;
}

function readAndMatch(text: string, verdicts: Map<string, number>): void {
  const read = readLockText(Buffer.from(text, 'utf8'));
  tally(verdicts, read.kind === 'corrupt' ? `corrupt: ${read.reason}` : read.kind);
  if (read.kind === 'corrupt' && read.message.length === 0) throw new Error('a corrupt verdict without a message');
  if (read.kind === 'lock') for (const event of EVENTS) matchLock(event, read.lock);
}

t.test(`${RUNS} locks with one value replaced, hash recomputed`, async (t) => {
  const verdicts = new Map<string, number>();
  fc.assert(
    fc.property(fc.constantFrom(...PATHS), fc.jsonValue({ maxDepth: 3 }), (at, value) => {
      const lock = replaced(at, value);
      try {
        lock['contentHash'] = computeLockContentHash(lock as never);
      } catch {
        // The hash function expects a schema-valid lock (the reader validates first); a tree it
        // cannot hash keeps the old hash and is refused by the schema or the hash check.
      }
      readAndMatch(JSON.stringify(lock), verdicts);
    }),
    { numRuns: RUNS },
  );
  t.comment(`locks tried: ${RUNS}; verdicts: ${describeTally(verdicts)}`);
  t.ok((verdicts.get('lock') ?? 0) > 0 && verdicts.size > 1, 'both valid and refused locks were generated');
});

t.test(`${RUNS} raw lock texts`, async (t) => {
  const verdicts = new Map<string, number>();
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 300 }), fc.json({ maxDepth: 4 }), fc.constantFrom('', '{}', '[]', 'null', '{"schemaVersion":99999}', '{"schemaVersion":-1,"minReaderVersion":"x"}')), (text) => {
      readAndMatch(text, verdicts);
    }),
    { numRuns: RUNS },
  );
  t.comment(`texts tried: ${RUNS}; verdicts: ${describeTally(verdicts)}`);
  t.pass('no throw');
});
