import t from 'tap';
import { SecretSet, StreamMasker, maskDeep } from '../../../agent/logs/masker.ts';
import { LogPipeline, type LogChunkOut } from '../../../agent/logs/pipeline.ts';

t.test('whole text: every form of every value', async (t) => {
  const s = new SecretSet();
  t.ok(s.add('hunter22'));
  t.notOk(s.add('abc'), 'short values are refused');
  t.equal(s.skippedCount, 1);
  t.equal(s.mask('pw hunter22 hunter22x'), 'pw *** ***x');
  t.equal(s.mask(Buffer.from('hunter22').toString('base64')), '***');
  s.add('a b&c=d/e');
  t.equal(s.mask('q=a%20b%26c%3Dd%2Fe'), 'q=***');
  t.equal(s.mask('abc stays'), 'abc stays');
});

t.test('whole text: the JSON-escaped form of a value and of each of its lines', async (t) => {
  const s = new SecretSet();
  const special = 'tok"en\\with\tspecial';
  const pem = '-----BEGIN KEY-----\nline-one"q"\nline-two\\b\n-----END KEY-----';
  s.add(special);
  s.add(pem);
  t.equal(s.mask(JSON.stringify({ token: special })), '{"token":"***"}');
  t.equal(s.mask(JSON.stringify({ key: pem })), '{"key":"***"}', 'a multi-line value JSON-escaped whole');
  t.equal(s.mask(JSON.stringify(['line-one"q"', 'line-two\\b'])), '["***","***"]', 'its lines JSON-escaped one by one');
  t.equal(s.mask(special), '***', 'the plain value still masked');
  const m = new StreamMasker(s);
  const line = `{"msg":${JSON.stringify(special)}}\n`;
  t.equal(m.push(line.slice(0, 12)) + m.push(line.slice(12)) + m.flush(), '{"msg":"***"}\n', 'split across pushes');
});

t.test('maskDeep: every string and key of outputs and payloads, other values kept', async (t) => {
  const s = new SecretSet();
  s.add('sk_live_deep_1234');
  s.add('quo"ted-secret');
  const value = { token: 'sk_live_deep_1234', list: ['x sk_live_deep_1234 y', 3, true, null], json: JSON.stringify({ a: 'quo"ted-secret' }), sk_live_deep_1234: 1 };
  t.same(maskDeep(value, s), { token: '***', list: ['x *** y', 3, true, null], json: '{"a":"***"}', '***': 1 });
  t.same(value.token, 'sk_live_deep_1234', 'the input is not changed');
  t.equal(maskDeep('plain text', s), 'plain text');
  t.equal(maskDeep(null, new SecretSet()), null);
});

t.test('stream: a secret split across pushes at every cut point', async (t) => {
  const secret = 'sk_live_0123456789';
  const text = `before ${secret} after\n`;
  for (let cut = 1; cut < text.length; cut++) {
    const s = new SecretSet();
    s.add(secret);
    const m = new StreamMasker(s);
    const out = m.push(text.slice(0, cut)) + m.push(text.slice(cut)) + m.flush();
    t.equal(out, 'before *** after\n', `cut at ${cut}`);
  }
});

t.test('stream: overlapping values never leak a whole secret', async (t) => {
  const s = new SecretSet();
  s.add('XYZW1234');
  s.add('1234QQQQ');
  const m = new StreamMasker(s);
  const out = m.push('aXYZW1234') + m.push('QQQQb') + m.flush();
  t.notMatch(out, 'XYZW1234');
  t.match(out, /^a\*\*\*/);
});

t.test('stream: a held prefix that turns out harmless is released', async (t) => {
  const s = new SecretSet();
  s.add('password1');
  const m = new StreamMasker(s);
  t.equal(m.push('my pass'), 'my ', 'possible start held back');
  t.equal(m.push('port'), 'passport');
  t.equal(m.flush(), '');
});

t.test('pipeline: multi-line secret across lines, seq monotonic, batching', async (t) => {
  const s = new SecretSet();
  s.add('-----BEGIN-----\nAAAABBBB\n-----END-----');
  const chunks: LogChunkOut[] = [];
  const p = new LogPipeline({ secrets: s, send: (c) => chunks.push(c), maxLines: 2, intervalMs: 10 });
  p.line('s', 'stdout', 'key:');
  p.line('s', 'stdout', '-----BEGIN-----');
  p.line('s', 'stdout', 'AAAABBBB');
  p.line('s', 'stdout', '-----END-----');
  p.line('s', 'stdout', 'done');
  p.close();
  const text = chunks.flatMap((c) => c.lines.map((l) => l.text)).join('\n');
  t.notMatch(text, 'AAAABBBB');
  t.notMatch(text, 'BEGIN');
  t.match(text, 'done');
  t.same(chunks.map((c) => c.seq), chunks.map((_, i) => i));
  t.ok(chunks.every((c) => c.lines.length <= 2));
});

t.test('pipeline: long lines are cut to the schema limit', async (t) => {
  const chunks: LogChunkOut[] = [];
  const p = new LogPipeline({ secrets: new SecretSet(), send: (c) => chunks.push(c) });
  p.raw('s', 'stdout', 'x'.repeat(70_000));
  p.close();
  const lines = chunks.flatMap((c) => c.lines);
  t.same(lines.map((l) => l.text.length), [65_536, 70_000 - 65_536]);
});
