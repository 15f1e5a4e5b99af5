import t from 'tap';
import { DedupWindow } from '../../../kernel/relay/dedup-window.ts';

t.test('a key answered 200 is a duplicate inside the window only', async (t) => {
  let now = 5_000;
  const d = new DedupWindow({ windowMs: 1_000, pendingMs: 1_000, now: () => now });
  const first = await d.claim(['a', 'b']);
  t.equal(first.kind, 'new');
  if (first.kind === 'new') first.settle(true);
  t.equal((await d.claim(['a'])).kind, 'duplicate');
  t.equal((await d.claim(['x', 'b'])).kind, 'duplicate', 'any key matches');
  now += 1_000;
  t.equal((await d.claim(['a'])).kind, 'duplicate', 'still inside at the window\'s last millisecond');
  now += 1;
  t.equal((await d.claim(['a'])).kind, 'new', 'window over');
});

t.test('a refused delivery is forgotten; a copy in flight waits for the first', async (t) => {
  const d = new DedupWindow({ windowMs: 10_000, pendingMs: 1_000 });
  const first = await d.claim(['k']);
  const waiting = d.claim(['k']);
  if (first.kind === 'new') first.settle(false);
  const second = await waiting;
  t.equal(second.kind, 'new', 'first was refused: the copy goes through');
  const third = d.claim(['k']);
  if (second.kind === 'new') second.settle(true);
  t.equal((await third).kind, 'duplicate', 'second answered 200: the copy is a duplicate');
  if (second.kind === 'new') second.settle(false);
  t.equal((await d.claim(['k'])).kind, 'duplicate', 'settle is once only');
});
