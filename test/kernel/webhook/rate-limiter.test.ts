// The front door's token buckets: refill arithmetic, independent dimensions, and the bound (a
// flood of distinct client addresses never grows the maps past their capacity).
import t from 'tap';
import { IngressLimiter, TokenBuckets, DEFAULT_MAX_CLIENTS } from '../../../kernel/webhook/rate-limiter.ts';

t.test('burst of perMinute, then refill at perMinute/60 per second', async (t) => {
  const b = new TokenBuckets(10);
  const now = 1_000_000;
  for (let i = 0; i < 3; i++) t.equal(b.take('k', 3, now), 0);
  t.equal(b.take('k', 3, now), 20, 'one token every 20 s');
  t.equal(b.take('k', 3, now + 10_000), 10);
  t.equal(b.take('k', 3, now + 20_000), 0);
  t.equal(b.take('other', 3, now), 0, 'keys are independent');
  t.equal(b.take('k', 3, now - 60_000), 20, 'a clock that steps back refills nothing');
});

t.test('a bucket never holds more than its capacity, and evicted keys start full', async (t) => {
  const b = new TokenBuckets(2);
  t.equal(b.take('a', 1, 0), 0);
  t.equal(b.take('a', 1, 10 * 60_000), 0);
  t.ok(b.take('a', 1, 10 * 60_000) > 0);
  b.take('b', 1, 0);
  b.take('c', 1, 0);
  t.equal(b.size, 2);
  t.equal(b.take('a', 1, 10 * 60_000), 0, 'evicted');
});

t.test('client, org and source limits are separate buckets', async (t) => {
  const limiter = new IngressLimiter({ perOrgRpm: 2, perIpRpm: 1 });
  t.equal(limiter.byClient('10.0.0.1', 0), 0);
  t.equal(limiter.byClient('10.0.0.1', 0), 60, 'per-IP: one a minute');
  t.equal(limiter.byClient('10.0.0.2', 0), 0, 'another address has its own bucket');
  t.equal(limiter.byOrg('acme', 0), 0);
  t.equal(limiter.byOrg('acme', 0), 0);
  t.equal(limiter.byOrg('acme', 0), 30, 'per-org: two a minute');
  t.equal(limiter.byOrg('other', 0), 0);
  t.equal(limiter.bySource('acme', 'generic:a', 1, 0), 0);
  t.equal(limiter.bySource('acme', 'generic:a', 1, 0), 60);
  t.equal(limiter.bySource('other', 'generic:a', 1, 0), 0, 'sources are per org');
});

t.test('100,000 distinct client addresses keep the maps at their bound', async (t) => {
  const limiter = new IngressLimiter({ perOrgRpm: 10, perIpRpm: 10, maxClients: 1_000, maxOrgs: 50 });
  t.equal(limiter.byOrg('acme', 0), 0);
  let admitted = 0;
  for (let i = 0; i < 100_000; i++) {
    const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    if (limiter.byClient(ip, i) === 0) admitted += 1;
    // A junk org per request: the org map is bounded too.
    limiter.byOrg(`junk-${i}`, i);
  }
  t.equal(admitted, 100_000, 'every fresh address is admitted');
  const tracked = limiter.tracked;
  t.equal(tracked.clients, 1_000, 'client map at its bound');
  t.equal(tracked.orgs, 50, 'org map at its bound');
  t.equal(tracked.sources, 0, 'the source map is untouched');
});

t.test('the default capacity is bounded as well', async (t) => {
  const limiter = new IngressLimiter({ perOrgRpm: 10, perIpRpm: 10 });
  for (let i = 0; i < DEFAULT_MAX_CLIENTS + 5_000; i++) limiter.byClient(`c${i}`, 0);
  t.equal(limiter.tracked.clients, DEFAULT_MAX_CLIENTS);
});
