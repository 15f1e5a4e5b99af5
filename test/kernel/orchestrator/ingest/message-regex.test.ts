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
  // Three more deliveries with it, then one with a benign expression, all at once. On one worker
  // the benign one would wait for the three overruns (900 ms of bounds); here it need not.
  const order: string[] = [];
  const hostile = [1, 2, 3].map(() => hostileRun().then((r) => (order.push('hostile'), r)));
  const benignEvent = push({ message: 'release!' });
  const benign = messageRegexResults(benignEvent, lockMessageRegexes(benignLock, benignEvent), { ...options, timeoutMs: 60_000 }).then((r) => (order.push('benign'), r));
  const results = await Promise.all([...hostile, benign]);
  t.same([...results[3]!.values()], [true], 'the benign expression matched');
  for (const r of results.slice(0, 3)) t.same([...r.values()], [{ undecided: 'took longer than 300 ms' }], 'the catastrophic one is still tested, under its bound, each time');
  t.ok(suspectGuard.started >= 1, 'it ran on the second worker');
  t.not(order.indexOf('benign'), 3, `the benign expression did not wait for all three overruns (order: ${order.join(', ')})`);
});
