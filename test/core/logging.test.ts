import t from 'tap';
import { Writable } from 'node:stream';
import { createLogger, isRedactedKey, LOG_REDACTED, scrubSecrets } from '../../core/logging.ts';

function memory(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return {
    stream,
    text: () => text,
    lines: () => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

const SECRET = 'sekrit-value-0123';

t.test('secrets never reach output', async (t) => {
  const out = memory();
  const log = createLogger({ level: 'info', name: 'test', destination: out.stream });
  log.info(
    {
      token: SECRET,
      req: { headers: { authorization: `Bearer ${SECRET}`, 'x-hub-signature-256': `sha256=${SECRET}`, 'x-hub-signature': SECRET, cookie: SECRET, host: 'h' } },
      res: { headers: { 'set-cookie': SECRET } },
      config: { platform: { token: SECRET, url: 'https://p' }, secrets: { key: SECRET }, cluster: { joinToken: SECRET } },
      user: { password: SECRET, login: 'octo' },
      a: { b: { c: { privateKey: SECRET, signature: SECRET, accessToken: SECRET } } },
      list: [{ token: SECRET }, { secret: SECRET }],
      webhookSecret: SECRET,
      clientSecret: SECRET,
      bootstrapAdminToken: SECRET,
    },
    'request',
  );
  log.child({ agentToken: SECRET, plugin: 'github' }).info({ installationToken: SECRET }, 'child');
  const error = Object.assign(new Error('failed'), { token: SECRET });
  log.error({ err: error }, 'with error');
  log.error({ error: Object.assign(new Error('other'), { password: SECRET }) }, 'with error field');
  await new Promise((resolve) => setImmediate(resolve));

  const text = out.text();
  t.notMatch(text, SECRET, 'no secret anywhere in the output');
  const [first, child, withErr] = out.lines();
  t.equal(first!['token'], LOG_REDACTED);
  t.match(first, {
    req: { headers: { authorization: LOG_REDACTED, 'x-hub-signature-256': LOG_REDACTED, cookie: LOG_REDACTED, host: 'h' } },
    config: { platform: { token: LOG_REDACTED, url: 'https://p' }, cluster: { joinToken: LOG_REDACTED } },
    user: { password: LOG_REDACTED, login: 'octo' },
    a: { b: { c: { privateKey: LOG_REDACTED } } },
  });
  t.match(child, { plugin: 'github', agentToken: LOG_REDACTED, installationToken: LOG_REDACTED, name: 'test' });
  t.match(withErr, { err: { type: 'Error', message: 'failed', token: LOG_REDACTED } });
  t.match(String((withErr!['err'] as Record<string, unknown>)['stack']), /Error: failed/, 'stack kept');
});

t.test('levels', async (t) => {
  const out = memory();
  const log = createLogger({ level: 'warn', name: 'lv', destination: out.stream });
  log.info('hidden');
  log.warn('shown');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(out.lines().map((l) => l['msg']), ['shown']);
});

t.test('key rules', async (t) => {
  for (const key of ['token', 'Token', 'joinToken', 'bootstrapAdminToken', 'access_token', 'secret', 'clientSecret', 'password', 'signature', 'x-hub-signature-256', 'x-hub-signature', 'authorization', 'cookie', 'set-cookie', 'privateKey', 'private_key', 'secretAccessKey', 'apiKey', 'secrets']) {
    t.ok(isRedactedKey(key), key);
  }
  for (const key of ['tokenCount', 'keyId', 'kid', 'runId', 'signatureValid', 'message', 'host', 'cacheKey']) t.notOk(isRedactedKey(key), key);
});

t.test('scrubSecrets shares untouched branches and copies changed ones', async (t) => {
  const clean = { a: { b: [1, 2] } };
  t.equal(scrubSecrets(clean), clean, 'nothing to hide: same object');
  const input = { keep: { x: 1 }, deep: { l1: { l2: { l3: { l4: { l5: { token: SECRET } } } } } }, none: null, undef: undefined };
  const out = scrubSecrets(input) as typeof input;
  t.equal(out.keep, input.keep, 'untouched branch shared');
  t.equal(out.deep.l1.l2.l3.l4.l5.token, LOG_REDACTED, 'deep key redacted');
  t.equal(input.deep.l1.l2.l3.l4.l5.token, SECRET, 'input not mutated');
  t.same(scrubSecrets({ token: null }), { token: null }, 'null stays null');
  const cyclic: Record<string, unknown> = { token: SECRET };
  cyclic['self'] = cyclic;
  t.doesNotThrow(() => scrubSecrets(cyclic), 'cycles are bounded');
  const buf = Buffer.from('x');
  t.equal(scrubSecrets(buf), buf, 'class instances untouched');
});

t.test('fastify-style request logging keeps redaction', async (t) => {
  const out = memory();
  const log = createLogger({ level: 'info', name: 'http', destination: out.stream });
  log.child({ reqId: 'r1' }).child({ nested: { cookie: SECRET } }).info({ headers: { Authorization: SECRET, 'X-Hub-Signature-256': SECRET } }, 'incoming');
  await new Promise((resolve) => setImmediate(resolve));
  t.notMatch(out.text(), SECRET);
  t.match(out.lines()[0], { reqId: 'r1', headers: { Authorization: LOG_REDACTED } });
});

t.test('default destination is stdout', async (t) => {
  const log = createLogger({ level: 'silent', name: 'quiet' });
  t.equal(log.level, 'silent');
});
