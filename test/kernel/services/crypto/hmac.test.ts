import t from 'tap';
import { createHmac } from 'node:crypto';
import { hmacSha256Hex, verifyHubSignature } from '../../../../kernel/services/crypto/hmac.ts';

const body = Buffer.from('{"action":"opened","number":1}');
const sign = (secret: string, b: Buffer = body) => `sha256=${createHmac('sha256', secret).update(b).digest('hex')}`;

t.test('hmacSha256Hex', async (t) => {
  // RFC 4231 test case 2.
  t.equal(
    hmacSha256Hex('Jefe', Buffer.from('what do ya want for nothing?')),
    '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  );
  t.equal(hmacSha256Hex(Buffer.from('Jefe'), Buffer.from('what do ya want for nothing?')).length, 64);
});

t.test('verifyHubSignature accepts a good signature', async (t) => {
  t.ok(verifyHubSignature(sign('s1'), body, ['s1']));
  t.ok(verifyHubSignature(sign('s1').toUpperCase().replace('SHA256=', 'sha256='), body, ['s1']), 'upper-case hex');
  t.ok(verifyHubSignature(` ${sign('s1')} `, body, ['s1']), 'surrounding spaces');
});

t.test('two secrets during rotation', async (t) => {
  t.ok(verifyHubSignature(sign('new'), body, ['new', 'old']), 'new secret');
  t.ok(verifyHubSignature(sign('old'), body, ['new', 'old']), 'old secret');
  t.notOk(verifyHubSignature(sign('other'), body, ['new', 'old']), 'neither');
});

t.test('refusals', async (t) => {
  const good = sign('s1');
  t.notOk(verifyHubSignature(good, Buffer.from(`${body.toString()} `), ['s1']), 'body changed by one byte');
  t.notOk(verifyHubSignature(good, Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 2)), ['s1']), 're-serialized body');
  t.notOk(verifyHubSignature(good, body, []), 'no secrets');
  t.notOk(verifyHubSignature(sign(''), body, ['']), 'an empty secret never verifies');
  const malformed = [
    undefined,
    '',
    'sha256=',
    good.slice('sha256='.length),
    good.replace('sha256=', 'sha1='),
    good.replace('sha256=', 'SHA256='),
    good.slice(0, -2),
    `${good}00`,
    `${good.slice(0, -1)}g`,
    `sha256=${'0'.repeat(64)}`,
    `${good},${good}`,
    `sha256=${Buffer.from('x').toString('base64')}`,
  ];
  for (const header of malformed) t.notOk(verifyHubSignature(header, body, ['s1']), `header ${JSON.stringify(header)}`);
});
