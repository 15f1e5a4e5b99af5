import t from 'tap';
import { TokenBuckets } from '../../../kernel/relay/token-buckets.ts';

t.test('burst of perMinute, then refill at perMinute/60 per second', async (t) => {
  const b = new TokenBuckets();
  const now = 1_000_000;
  for (let i = 0; i < 3; i++) t.same(b.take('k', 3, now), { ok: true });
  t.same(b.take('k', 3, now), { ok: false, retryAfterSeconds: 20 }, 'one token every 20 s');
  t.same(b.take('k', 3, now + 10_000), { ok: false, retryAfterSeconds: 10 });
  t.same(b.take('k', 3, now + 20_000), { ok: true });
  t.same(b.take('other', 3, now), { ok: true }, 'keys are independent');
});

t.test('a bucket never holds more than its capacity, and evicted keys start full', async (t) => {
  const b = new TokenBuckets(2);
  t.same(b.take('a', 1, 0), { ok: true });
  t.same(b.take('a', 1, 10 * 60_000), { ok: true });
  t.equal(b.take('a', 1, 10 * 60_000).ok, false);
  b.take('b', 1, 0);
  b.take('c', 1, 0);
  t.same(b.take('a', 1, 10 * 60_000), { ok: true }, 'evicted');
});
