import t from 'tap';
import fc from 'fast-check';
import { formatDuration, formatMillis, millisBetween } from '../../core/durations.ts';

t.test('each range reads in the unit a person expects', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '0ms'],
    [0.4, '0ms'],
    [180, '180ms'],
    [999.4, '999ms'],
    [999.5, '1.0s'],
    [1_000, '1.0s'],
    [4_249, '4.2s'],
    [59_949, '59.9s'],
    [59_950, '1m 00s'],
    [65_000, '1m 05s'],
    [3_599_400, '59m 59s'],
    [3_599_500, '1h 00m'],
    [7_380_000, '2h 03m'],
  ];
  for (const [ms, text] of cases) t.equal(formatDuration(ms), text, `${ms} ms`);
});

t.test('unknown values print the placeholder the caller chose', async (t) => {
  for (const v of [null, undefined, Number.NaN, Number.POSITIVE_INFINITY, -1]) t.equal(formatDuration(v), '—');
  t.equal(formatDuration(null, '-'), '-');
  t.equal(formatDuration(null, ''), '');
});

t.test('longer durations never print shorter (the text is monotonic in its range)', async (t) => {
  const toMs = (text: string): number => {
    const m = /^(?:(\d+)h (\d+)m|(\d+)m (\d+)s|(\d+(?:\.\d)?)s|(\d+)ms)$/.exec(text);
    if (m === null) throw new Error(`unexpected text ${text}`);
    if (m[1] !== undefined) return (Number(m[1]) * 60 + Number(m[2])) * 60_000;
    if (m[3] !== undefined) return (Number(m[3]) * 60 + Number(m[4])) * 1000;
    if (m[5] !== undefined) return Number(m[5]) * 1000;
    return Number(m[6]);
  };
  fc.assert(
    fc.property(fc.double({ min: 0, max: 1e9, noNaN: true }), fc.double({ min: 0, max: 1e9, noNaN: true }), (a, b) => {
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      return toMs(formatDuration(lo)) <= toMs(formatDuration(hi));
    }),
  );
  t.pass('monotonic over 100 random pairs');
});

t.test('millisBetween measures a running span to now and refuses bad times', async (t) => {
  t.equal(millisBetween('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.250Z'), 1250);
  t.equal(millisBetween('2026-01-01T00:00:00.000Z', null, Date.parse('2026-01-01T00:00:00.075Z')), 75);
  t.equal(millisBetween(null, null), null);
  t.equal(millisBetween('not a time', null), null);
  t.equal(millisBetween('2026-01-01T00:00:01.000Z', '2026-01-01T00:00:00.000Z'), 0, 'clock skew never gives a negative duration');
});

t.test('formatMillis: whole milliseconds, thousands grouped (the run page timeline)', async (t) => {
  const cases: Array<[number, string]> = [[0, '0 ms'], [0.4, '0 ms'], [812, '812 ms'], [812.6, '813 ms'], [1234, '1,234 ms'], [12_045, '12,045 ms'], [3_600_000, '3,600,000 ms']];
  for (const [ms, text] of cases) t.equal(formatMillis(ms), text, `${ms} ms`);
  for (const v of [null, undefined, Number.NaN, -1]) t.equal(formatMillis(v), '—');
});
