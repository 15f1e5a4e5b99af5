// The in-memory ring of recent log lines (debug bundles): fed the lines the logger writes, after
// redaction, while the destination still gets every line; bounded by lines and bytes, a long
// line cut, oldest lines dropped first.
import { Writable } from 'node:stream';
import t from 'tap';
import { LogRing } from '../../core/log-ring.ts';
import { createLogger, LOG_REDACTED } from '../../core/logging.ts';

function memory(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

t.test('the ring holds the redacted lines the destination got', async (t) => {
  const ring = new LogRing();
  const out = memory();
  const logger = createLogger({ level: 'info', name: 'ring-test', destination: out.stream, ring });
  logger.info({ adminToken: 'canary-ring-token-123', nested: { webhookSecret: 'canary-ring-secret' } }, 'first');
  logger.child({ platformToken: 'canary-child-token' }).warn('second');
  logger.debug('below the level: in neither');
  const lines = ring.lines();
  t.equal(lines.length, 2);
  t.same(lines.map((l) => (JSON.parse(l) as { msg: string }).msg), ['first', 'second']);
  t.equal(lines.join('\n') + '\n', out.text(), 'the destination got the same lines');
  t.notMatch(lines.join('\n'), /canary/);
  t.equal((JSON.parse(lines[0]!) as { adminToken: string }).adminToken, LOG_REDACTED);
});

t.test('bounds: line count, bytes, and a line too long is cut', async (t) => {
  const byLines = new LogRing(3, 1_000_000);
  for (let i = 0; i < 5; i++) byLines.push(`line ${i}\n`);
  t.same(byLines.lines(), ['line 2', 'line 3', 'line 4'], 'oldest dropped first');

  const byBytes = new LogRing(1000, 25);
  byBytes.push('aaaaaaaaaa\nbbbbbbbbbb\ncccccccccc\n');
  t.same(byBytes.lines(), ['bbbbbbbbbb', 'cccccccccc']);

  const long = new LogRing();
  long.push('x'.repeat(20_000));
  t.equal(long.lines()[0]!.length, 16 * 1024 + '…(cut)'.length);
  t.match(long.lines()[0], /…\(cut\)$/);
});
