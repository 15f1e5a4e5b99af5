import t from 'tap';
import { orderCandidates } from '../../../kernel/relay/orchestrator-pool.ts';

const c = (name: string, inFlight: number, bufferedAmount = 0) => ({ name, inFlight, bufferedAmount });

t.test('sockets past the watermark are skipped', async (t) => {
  const list = [c('a', 0, 9 * 1024 * 1024), c('b', 0, 100), c('c', 0, 8 * 1024 * 1024)];
  const { ordered, skipped } = orderCandidates(list, 0, 8 * 1024 * 1024);
  t.same(ordered.map((x) => x.name), ['b', 'c'], 'at the watermark is still allowed');
  t.same(skipped.map((x) => x.name), ['a']);
  t.same(orderCandidates([c('a', 0, 10)], 0, 5).ordered, [], 'all skipped: nobody to try');
});

t.test('round robin among equals, least in flight first', async (t) => {
  const list = [c('a', 0), c('b', 0), c('c', 0)];
  t.same(orderCandidates(list, 0, 100).ordered.map((x) => x.name), ['a', 'b', 'c']);
  t.same(orderCandidates(list, 1, 100).ordered.map((x) => x.name), ['b', 'c', 'a']);
  t.same(orderCandidates(list, 2, 100).ordered.map((x) => x.name), ['c', 'a', 'b']);
  const loaded = [c('a', 3), c('b', 1), c('c', 0)];
  t.same(orderCandidates(loaded, 0, 100).ordered.map((x) => x.name), ['c', 'b', 'a']);
  t.same(orderCandidates([], 0, 100), { ordered: [], skipped: [] });
});
