// The regex guard: expressions run on a worker thread under a time bound. A catastrophic
// backtracking pattern is stopped while the main thread keeps running, and the guard answers the
// next call on a fresh worker. Bounds are generous and nothing asserts speed: a loaded machine
// only makes these tests slower.
import t from 'tap';
import { RegexGuard } from '../../../../kernel/orchestrator/ingest/regex-guard.ts';

// Exponential in the number of `a`s for V8's backtracking engine: never finishes by itself.
const CATASTROPHIC = '(a+)+$';
const SUBJECT = `${'a'.repeat(40)}!`;
// For expressions that finish in microseconds: a bound no scheduler delay reaches.
const AMPLE_MS = 60_000;

t.test('a normal expression matches or does not, with its flags', async (t) => {
  const guard = new RegexGuard();
  t.teardown(() => guard.close());
  t.same(await guard.test('^deploy\\b', 'im', 'chore: bump\nDEPLOY now', AMPLE_MS), { ok: true, matched: true });
  t.same(await guard.test('^deploy\\b', '', 'redeploy', AMPLE_MS), { ok: true, matched: false });
  t.same(await guard.test('^deploy\\b', '', 'redeploy', AMPLE_MS), { ok: true, matched: false }, 'same answer twice (compiled once)');
  const invalid = await guard.test('(', '', 'x', AMPLE_MS);
  t.match(invalid, { ok: false, reason: 'error', message: /Invalid regular expression/ }, 'an invalid expression is an outcome, not a throw');
  t.equal(guard.started, 1, 'one worker served them all');
});

t.test('a catastrophic expression times out while the main thread keeps running; the next call works', async (t) => {
  const guard = new RegexGuard();
  t.teardown(() => guard.close());
  // Warm the worker first, so the ticks below are counted while the expression runs.
  t.same(await guard.test('a', '', 'a', AMPLE_MS), { ok: true, matched: true });
  let ticks = 0;
  const interval = setInterval(() => (ticks += 1), 5);
  const outcome = await guard.test(CATASTROPHIC, '', SUBJECT, 300);
  clearInterval(interval);
  t.same(outcome, { ok: false, reason: 'timeout', message: 'took longer than 300 ms' });
  t.ok(ticks > 0, `the main thread's timer ticked while the expression ran (${ticks} ticks)`);
  t.same(await guard.test('!$', '', SUBJECT, AMPLE_MS), { ok: true, matched: true }, 'the next call is answered');
  t.equal(guard.started, 3, 'on a fresh worker, with a spare booted for the next timeout');
  t.match(await guard.test(CATASTROPHIC, '', SUBJECT, 300), { ok: false, reason: 'timeout' });
  t.same(await guard.test('^a', '', SUBJECT, AMPLE_MS), { ok: true, matched: true }, 'answered by the spare');
  t.equal(guard.started, 4, 'the spare took over and another one boots');
});

t.test('calls queued behind a catastrophic one are answered, each under its own bound', async (t) => {
  const guard = new RegexGuard();
  t.teardown(() => guard.close());
  const outcomes = await Promise.all([
    guard.test('^a', '', SUBJECT, AMPLE_MS),
    guard.test(CATASTROPHIC, '', SUBJECT, 200),
    guard.test('b', '', SUBJECT, AMPLE_MS),
    guard.test(CATASTROPHIC, 'i', SUBJECT, 200),
    guard.test('a!$', '', SUBJECT, AMPLE_MS),
  ]);
  t.same(outcomes.map((o) => (o.ok ? o.matched : o.reason)), [true, 'timeout', false, 'timeout', true]);
});

t.test('close settles what waits and refuses what comes after', async (t) => {
  const guard = new RegexGuard();
  t.same(await guard.test('a', '', 'a', AMPLE_MS), { ok: true, matched: true });
  const running = guard.test(CATASTROPHIC, '', SUBJECT, AMPLE_MS);
  const queued = guard.test('a', '', 'a', AMPLE_MS);
  await guard.close();
  t.match(await running, { ok: false, reason: 'error', message: /closed/ });
  t.match(await queued, { ok: false, reason: 'error', message: /closed/ });
  t.match(await guard.test('a', '', 'a', AMPLE_MS), { ok: false, reason: 'error', message: /closed/ });
});
