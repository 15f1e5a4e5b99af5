import t from 'tap';
import { randomBytes } from 'node:crypto';
import {
  IV_BYTES,
  TAG_BYTES,
  OpenFailedError,
  open,
  openText,
  openWithAny,
  parseMasterKey,
  seal,
} from '../../../../kernel/services/crypto/sealing.ts';
import { InputError } from '../../../../core/errors.ts';

const key = randomBytes(32);
const other = randomBytes(32);

t.test('round trips', async (t) => {
  for (const plain of ['', 'hello', 'ünïcødé ✓', 'x'.repeat(100_000)]) {
    const sealed = seal(key, plain, 'store:a');
    t.equal(openText(key, sealed, 'store:a'), plain);
  }
  const bytes = randomBytes(1000);
  t.ok(open(key, seal(key, bytes, 'ad'), 'ad').equals(bytes), 'buffers round-trip');
});

t.test('wire format: base64(IV ‖ tag ‖ ciphertext), random IV', async (t) => {
  const sealed = seal(key, 'abc', 'ad');
  const raw = Buffer.from(sealed, 'base64');
  t.equal(raw.length, IV_BYTES + TAG_BYTES + 3);
  t.equal(raw.toString('base64'), sealed, 'canonical base64');
  t.not(seal(key, 'abc', 'ad'), sealed, 'a fresh IV each time');
});

t.test('tampering in every byte region is refused', async (t) => {
  const sealed = seal(key, 'the plaintext', 'ad');
  const raw = Buffer.from(sealed, 'base64');
  const regions: Record<string, number[]> = {
    iv: [0, IV_BYTES - 1],
    tag: [IV_BYTES, IV_BYTES + TAG_BYTES - 1],
    ciphertext: [IV_BYTES + TAG_BYTES, raw.length - 1],
  };
  for (const [region, positions] of Object.entries(regions)) {
    for (const position of positions) {
      const bad = Buffer.from(raw);
      bad[position]! ^= 0x01;
      t.throws(() => open(key, bad.toString('base64'), 'ad'), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED' }, `${region} byte ${position}`);
    }
  }
  const truncated = raw.subarray(0, raw.length - 1).toString('base64');
  t.throws(() => open(key, truncated, 'ad'), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED' }, 'truncated ciphertext');
  const extended = Buffer.concat([raw, Buffer.from([0])]).toString('base64');
  t.throws(() => open(key, extended, 'ad'), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED' }, 'extra byte');
});

t.test('wrong key and wrong additional data', async (t) => {
  const sealed = seal(key, 'secret', 'config-field:platform.token');
  const wrongKey = t.throws(() => open(other, sealed, 'config-field:platform.token')) as unknown;
  t.ok(wrongKey instanceof OpenFailedError);
  t.match(wrongKey, { code: 'SVC_ERR_CRYPTO_OPEN_FAILED', message: /wrong master key, or the value was altered/ });
  t.throws(() => open(key, sealed, 'config-field:cluster.joinToken'), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED' });
  t.throws(() => open(key, sealed, ''), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED' });
});

t.test('malformed sealed values', async (t) => {
  for (const bad of ['', 'not base64!', 'abc', Buffer.alloc(IV_BYTES + TAG_BYTES - 1).toString('base64'), 'AAAA====', 12 as unknown as string]) {
    t.throws(() => open(key, bad, 'ad'), { code: 'SVC_ERR_CRYPTO_OPEN_FAILED', message: /not a sealed value/ }, JSON.stringify(bad));
  }
});

t.test('bad keys', async (t) => {
  t.throws(() => seal(Buffer.alloc(16), 'x', 'ad'), { code: 'SVC_ERR_CRYPTO_KEY_INVALID' });
  t.throws(() => open(Buffer.alloc(31), 'x', 'ad'), { code: 'SVC_ERR_CRYPTO_KEY_INVALID' });
  t.throws(() => openWithAny([{ name: 'x', key: Buffer.alloc(1) }], 'x', 'ad'), { code: 'SVC_ERR_CRYPTO_KEY_INVALID' });
});

t.test('parseMasterKey', async (t) => {
  const hex = key.toString('hex');
  t.ok(parseMasterKey(hex).equals(key), 'hex');
  t.ok(parseMasterKey(hex.toUpperCase()).equals(key), 'upper-case hex');
  t.ok(parseMasterKey(key.toString('base64')).equals(key), 'base64');
  t.ok(parseMasterKey(`  ${key.toString('base64')}\n`).equals(key), 'surrounding whitespace (key files end in a newline)');
  t.ok(parseMasterKey(key.toString('base64url')).equals(key), 'base64url without padding');
  for (const bad of ['', 'short', hex.slice(0, 62), `${hex}00`, randomBytes(16).toString('base64'), randomBytes(33).toString('base64'), `${'z'.repeat(64)}`]) {
    const error = t.throws(() => parseMasterKey(bad, 'SVC_SECRET_KEY')) as InputError;
    t.ok(error instanceof InputError);
    t.equal(error.code, 'SVC_ERR_CRYPTO_KEY_INVALID');
    t.match(error.message, /^SVC_SECRET_KEY must be 32 bytes written as 64 hex characters or 44 base64 characters/);
    if (bad.length > 8) t.notMatch(error.message, bad, 'the value is not echoed');
  }
});

t.test('openWithAny reports which key opened it', async (t) => {
  const keys = [
    { name: 'current', key },
    { name: 'old', key: other },
  ];
  const underOld = seal(other, 'legacy', 'signing-key:k1');
  const underCurrent = seal(key, 'fresh', 'signing-key:k1');
  t.match(openWithAny(keys, underOld, 'signing-key:k1'), { name: 'old' });
  t.equal(openWithAny(keys, underOld, 'signing-key:k1').plaintext.toString(), 'legacy');
  t.match(openWithAny(keys, underCurrent, 'signing-key:k1'), { name: 'current' });
  const third = seal(randomBytes(32), 'x', 'signing-key:k1');
  t.throws(() => openWithAny(keys, third, 'signing-key:k1'), {
    code: 'SVC_ERR_CRYPTO_OPEN_FAILED',
    message: /opens with none of the master keys \(tried: current, old\).*SVC_SECRET_KEY_OLD/,
  });
  t.throws(() => openWithAny([], underCurrent, 'ad'), { message: /tried: none configured/ });
  t.throws(() => openWithAny(keys, 'garbage!', 'ad'), { message: /not a sealed value/ });
});
