// The sealed boxes of `svc run remote` (core/remote-run-box.ts): only the recipient's key opens
// them, every box has its own key, and any change to a box is detected.
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { boxEphemeralKey, boxKey, openBox, openBoxWithKey, rawPublicKey, sealBox } from '../../core/remote-run-box.ts';

const recipient = generateKeyPairSync('x25519');
const publicRaw = rawPublicKey(recipient.publicKey);

t.test('round trip, and the derived key opens the box too', async (t) => {
  const plain = Buffer.from('the working tree: secret plan');
  const box = sealBox(publicRaw, plain);
  t.equal(box.subarray(0, 5).toString(), 'SVCX1');
  t.equal(box.indexOf('secret plan'), -1, 'no plaintext in the box');
  t.same(openBox(recipient.privateKey, box), plain);
  const key = boxKey(recipient.privateKey, boxEphemeralKey(box));
  t.same(openBoxWithKey(key, box), plain, 'the per-box key the orchestrator hands an agent');
  const again = sealBox(publicRaw, plain);
  t.not(again.toString('hex'), box.toString('hex'), 'a fresh ephemeral key and IV per box');
  t.not(boxKey(recipient.privateKey, boxEphemeralKey(again)).toString('hex'), key.toString('hex'), 'a different key per box');
});

t.test('tampering, truncation and another key are refused', async (t) => {
  const box = sealBox(publicRaw, Buffer.from('payload'));
  const flipped = Buffer.from(box);
  flipped[flipped.length - 20]! ^= 1;
  t.throws(() => openBox(recipient.privateKey, flipped), { code: 'SVC_ERR_REMOTE_RUN_BOX_INVALID' });
  t.throws(() => openBox(recipient.privateKey, box.subarray(0, 40)), { code: 'SVC_ERR_REMOTE_RUN_BOX_INVALID' });
  t.throws(() => openBox(recipient.privateKey, Buffer.from('not a box at all, really not')), { code: 'SVC_ERR_REMOTE_RUN_BOX_INVALID' });
  const other = generateKeyPairSync('x25519');
  t.throws(() => openBox(other.privateKey, box), { code: 'SVC_ERR_REMOTE_RUN_BOX_INVALID' });
  t.throws(() => sealBox(Buffer.alloc(31), Buffer.from('x')), { code: 'SVC_ERR_REMOTE_RUN_KEY_INVALID' });
});
