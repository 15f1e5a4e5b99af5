import { generateKeyPairSync, sign, verify } from 'node:crypto';
import t from 'tap';
import { derToJoseSignature, joseToDerSignature } from '../../../plugins/custody/aws-kms/der.ts';

t.test('DER ↔ raw round trips, including short and high-bit integers', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let shortSeen = false;
  for (let i = 0; i < 2000; i += 1) {
    const message = Buffer.from(`m${i}`);
    const der = sign('sha256', message, privateKey);
    const raw = derToJoseSignature(der);
    if ((der[3] as number) < 32 || (der[3 + 1 + (der[3] as number) + 1] as number) < 32) shortSeen = true;
    if (!verify('sha256', message, { key: publicKey, dsaEncoding: 'ieee-p1363' }, raw)) t.fail(`raw ${i} does not verify`);
    if (!Buffer.from(joseToDerSignature(raw)).equals(der)) t.fail(`re-encoding ${i} differs`);
  }
  t.ok(shortSeen, 'some DER signatures had integers shorter than 32/33 bytes');
  // Crafted: r = 1 (one byte), s with the high bit set (leading 0x00 in DER).
  const raw = new Uint8Array(64);
  raw[31] = 1;
  raw[32] = 0xff;
  const der = joseToDerSignature(raw);
  t.same([...der.subarray(0, 5)], [0x30, 3 + 35, 0x02, 1, 1]);
  t.same(derToJoseSignature(der), raw);
});

t.test('malformed DER is refused with a clear error', async (t) => {
  const cases: Array<[string, number[]]> = [
    ['empty', []],
    ['not a sequence', [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]],
    ['length mismatch', [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]],
    ['negative', [0x30, 0x06, 0x02, 0x01, 0x81, 0x02, 0x01, 0x01]],
    ['too long', [0x30, 0x26, 0x02, 0x21, 0x01, ...new Array(32).fill(1), 0x02, 0x01, 0x01]],
    ['trailing', [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00]],
  ];
  for (const [name, bytes] of cases) {
    t.throws(() => derToJoseSignature(Uint8Array.from(bytes)), { code: 'SVC_ERR_CUSTODY_KMS_SIGNATURE' }, name);
  }
});
