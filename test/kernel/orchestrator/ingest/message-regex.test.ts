// Commit-message expressions before the match: outcomes by key, the bound named in an undecided
// one, and each expression run once per event (steps 11 and 12 both ask).
import t from 'tap';
import { RegexGuard } from '../../../../kernel/orchestrator/ingest/regex-guard.ts';
import { messageRegexResults } from '../../../../kernel/orchestrator/ingest/steps/message-regex.ts';
import { lockMessageRegexes } from '../../../../workflow/matching/index.ts';
import { normalizeGithubPayload } from '../../../../plugins/providers/shared/github-payload.ts';
import { pushPayload, ZERO } from '../../../fixtures/github-payloads.ts';
import { lockOf, trig, workflow } from '../../../fixtures/locks.ts';

const lock = lockOf([
  workflow('hostile', [trig.push({ commitMessage: { kind: 'regex', source: '(a+)+$', flags: '' } })]),
  workflow('shout', [trig.push({ commitMessage: { kind: 'regex', source: '!$', flags: '' } })]),
]);
const push = (opts: Parameters<typeof pushPayload>[0]) => normalizeGithubPayload('github', 'push', pushPayload(opts));

t.test('outcomes by key; an overrun names the bound; once per event', async (t) => {
  const guard = new RegexGuard();
  t.teardown(() => guard.close());
  const event = push({ message: `${'a'.repeat(40)}!` });
  const regexes = lockMessageRegexes(lock, event);
  // The benign expression is decided first, under a bound no machine reaches (a 200 ms bound
  // would race its round trip to the worker on a busy machine); the event keeps its outcome.
  const benign = await messageRegexResults(event, regexes.filter((r) => r.shown === '/!$/'), { guard, timeoutMs: 60_000 });
  t.same([...benign.values()], [true]);
  const first = await messageRegexResults(event, regexes, { guard, timeoutMs: 200 });
  t.same(Object.fromEntries(regexes.map((r) => [r.shown, first.get(r.key)])), { '/(a+)+$/': { undecided: 'took longer than 200 ms' }, '/!$/': true });
  const started = guard.started;
  t.same(await messageRegexResults(event, regexes, { guard, timeoutMs: 200 }), first, 'the same event: the same outcomes');
  t.equal(guard.started, started, 'without running anything again (no worker replaced)');
  const other = push({ message: 'fix: typo' });
  const decided = await messageRegexResults(other, regexes, { guard, timeoutMs: 60_000 });
  t.same([...decided.values()], [false, false], 'another event is evaluated on its own message');
});

t.test('no commit message, or no expression: nothing to run', async (t) => {
  const guard = new RegexGuard();
  t.teardown(() => guard.close());
  const deletion = push({ ref: 'refs/heads/x', after: ZERO });
  t.same([...(await messageRegexResults(deletion, lockMessageRegexes(lock, deletion), { guard })).entries()], []);
  t.same([...(await messageRegexResults(push({ message: 'x' }), [], { guard })).entries()], []);
  t.equal(guard.started, 0, 'no worker started');
});

t.test('an expression that overran goes to a worker of its own: the others do not queue behind it', async (t) => {
  const guard = new RegexGuard();
  const suspectGuard = new RegexGuard();
  t.teardown(() => Promise.all([guard.close(), suspectGuard.close()]));
  const hostileLock = lockOf([workflow('slow', [trig.push({ commitMessage: { kind: 'regex', source: '(b+)+$', flags: '' } })])]);
  const benignLock = lockOf([workflow('shout', [trig.push({ commitMessage: { kind: 'regex', source: '!$', flags: '' } })])]);
  const message = `${'b'.repeat(40)}!`;
  const options = { guard, suspectGuard, timeoutMs: 300 };
  const hostileRun = async () => {
    const event = push({ message });
    return messageRegexResults(event, lockMessageRegexes(hostileLock, event), options);
  };
  t.same([...(await hostileRun()).values()], [{ undecided: 'took longer than 300 ms' }], 'the first overrun, on the usual worker');
  t.equal(suspectGuard.started, 0, 'the second worker is not used before');
  t.same([...(await hostileRun()).values()], [{ undecided: 'took longer than 300 ms' }], 'the catastrophic one is still tested, under its bound');
  t.ok(suspectGuard.started >= 1, 'it ran on the second worker');
  t.equal(guard.started, 1, 'the usual worker was not used (nor replaced) for it');
  // Three more deliveries with it, under a bound of ten minutes (they stay on the second worker
  // for the rest of the test), then one with a benign expression, all at once. On one worker the
  // benign one would wait behind them; here it is decided while all three are still running.
  const order: string[] = [];
  const longOptions = { ...options, timeoutMs: 600_000 };
  const hostile = [1, 2, 3].map(() => {
    const event = push({ message });
    return messageRegexResults(event, lockMessageRegexes(hostileLock, event), longOptions).then((r) => (order.push('hostile'), r));
  });
  const benignEvent = push({ message: 'release!' });
  const benign = messageRegexResults(benignEvent, lockMessageRegexes(benignLock, benignEvent), { ...options, timeoutMs: 60_000 }).then((r) => (order.push('benign'), r));
  let guardTimer: NodeJS.Timeout | undefined;
  const hangGuard = new Promise<'hang'>((resolve) => (guardTimer = setTimeout(() => resolve('hang'), 60_000)));
  const decided = await Promise.race([benign, hangGuard]);
  clearTimeout(guardTimer);
  t.not(decided, 'hang', 'hang guard: the benign expression was decided');
  if (decided !== 'hang') t.same([...decided.values()], [true], 'the benign expression matched');
  t.same(order, ['benign'], 'decided while the three overruns were still running');
  await suspectGuard.close();
  const stopped = await Promise.all(hostile);
  for (const r of stopped) t.same([...r.values()], [{ undecided: 'could not be tested (the regular expression guard is closed)' }], 'stopped with their worker');
});
